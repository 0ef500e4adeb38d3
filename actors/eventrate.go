package actors

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// EventRate bounds the events each server may push, per method: a token
// bucket per server and method, refilled at PerSecond up to Burst. Past it
// the events are dropped and counted, and once per Interval the count of
// each method is journaled and emitted as one persistence.MethodEventsDropped
// event, params {"dropped": N, "method": M, "reason": "rate", "intervalMs": I},
// so a flood costs the journal, the subscribers and the host's CPU a bounded
// share whatever the server sends, and the loss is never silent. The zero
// value is the defaults.
type EventRate struct {
	// PerSecond is each server's sustained rate per method. 0:
	// DefaultEventRate; <0: unbounded.
	PerSecond float64
	// Burst is how many events a quiet server may send at once. 0: twice
	// PerSecond.
	Burst int
	// Interval is how often the dropped counts are summarised. 0: 1 s.
	Interval time.Duration
	// ReadPace bounds how many events per second a server's reader takes
	// in, all methods together: past it the reader waits, so the server
	// blocks on its own output instead of taking the host's CPU to be read
	// and dropped. Its own calls' answers wait behind its flood; no one
	// else's do. 0: 20 × PerSecond; <0: unbounded.
	ReadPace float64
}

// DefaultEventRate is EventRate.PerSecond's default: well above what a
// server reports for a person to read, far below what a runaway loop sends.
const DefaultEventRate = 1000

// maxRateMethods bounds the buckets of one server: a server that invents
// method names shares one bucket for the rest rather than growing the map.
const maxRateMethods = 64

// otherMethods names that shared bucket in summaries.
const otherMethods = "*"

func (o EventRate) withDefaults() EventRate {
	if o.PerSecond == 0 {
		o.PerSecond = DefaultEventRate
	}
	if o.Burst <= 0 {
		o.Burst = int(max(2*o.PerSecond, 1))
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.ReadPace == 0 {
		o.ReadPace = 20 * o.PerSecond
	}
	return o
}

// eventLimiter is one server's buckets. Its reader goroutines (one over
// stdio, several over HTTP) call allow concurrently.
type eventLimiter struct {
	server string
	rate   EventRate
	owner  *rateSummaries
	total  atomic.Uint64 // events dropped since the server was registered

	mu      sync.Mutex
	buckets map[string]*bucket
	dirty   bool // holds drops the next summary has not taken

	paceMu   sync.Mutex
	paceDebt float64 // events read past ReadPace, not yet waited for
	paceLast time.Time
}

// pace makes the reader that calls it wait once it has read past
// ReadPace: a millisecond's worth of events at a time, so a flood costs
// one timer per millisecond rather than one per event.
func (l *eventLimiter) pace(now time.Time) {
	if l == nil || l.rate.PerSecond < 0 || l.rate.ReadPace < 0 {
		return
	}
	l.paceMu.Lock()
	if !l.paceLast.IsZero() {
		l.paceDebt = max(0, l.paceDebt-now.Sub(l.paceLast).Seconds()*l.rate.ReadPace)
	}
	l.paceLast = now
	l.paceDebt++
	var wait time.Duration
	if slack := max(l.rate.ReadPace/1000, float64(l.rate.Burst)); l.paceDebt > slack {
		wait = time.Duration((l.paceDebt - slack/2) / l.rate.ReadPace * float64(time.Second))
	}
	l.paceMu.Unlock()
	if wait > 0 {
		time.Sleep(wait)
	}
}

type bucket struct {
	tokens  float64
	last    time.Time
	dropped uint64
}

// allow takes a token of method's bucket, or counts the event as dropped.
func (l *eventLimiter) allow(method string, now time.Time) bool {
	if l == nil || l.rate.PerSecond < 0 {
		return true
	}
	l.mu.Lock()
	b := l.buckets[method]
	if b == nil {
		if len(l.buckets) >= maxRateMethods {
			method = otherMethods
			b = l.buckets[method]
		}
		if b == nil {
			b = &bucket{tokens: float64(l.rate.Burst), last: now}
			l.buckets[method] = b
		}
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(float64(l.rate.Burst), b.tokens+d.Seconds()*l.rate.PerSecond)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		l.mu.Unlock()
		return true
	}
	b.dropped++
	first := !l.dirty
	l.dirty = true
	l.mu.Unlock()
	l.total.Add(1)
	if first {
		l.owner.mark(l)
	}
	return false
}

// take returns the drop counts since the last take, by method, and resets
// them; buckets without drops or tokens to refill are forgotten.
func (l *eventLimiter) take() map[string]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out map[string]uint64
	for m, b := range l.buckets {
		if b.dropped > 0 {
			if out == nil {
				out = map[string]uint64{}
			}
			out[m] = b.dropped
			b.dropped = 0
		}
	}
	l.dirty = false
	return out
}

// rateSummaries is the runtime's one goroutine that summarises drops: it
// sleeps until some server drops, waits an interval for more, then
// journals and emits one event per server and method.
type rateSummaries struct {
	rt       *Runtime
	rate     EventRate
	mu       sync.Mutex
	pending  []*eventLimiter
	kick     chan struct{}
	quit     chan struct{}
	exited   chan struct{}
	stopOnce sync.Once
}

func newRateSummaries(rt *Runtime, rate EventRate) *rateSummaries {
	s := &rateSummaries{rt: rt, rate: rate.withDefaults(),
		kick: make(chan struct{}, 1), quit: make(chan struct{}), exited: make(chan struct{})}
	go s.run()
	return s
}

func (s *rateSummaries) limiter(server string) *eventLimiter {
	return &eventLimiter{server: server, rate: s.rate, owner: s, buckets: map[string]*bucket{}}
}

func (s *rateSummaries) mark(l *eventLimiter) {
	s.mu.Lock()
	s.pending = append(s.pending, l)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *rateSummaries) run() {
	defer close(s.exited)
	timer := time.NewTimer(s.rate.Interval)
	timer.Stop()
	for {
		select {
		case <-s.kick:
		case <-s.quit:
			s.flush()
			return
		}
		timer.Reset(s.rate.Interval)
		select {
		case <-timer.C:
		case <-s.quit:
			timer.Stop()
			s.flush()
			return
		}
		s.flush()
	}
}

// flush summarises every limiter that dropped since the last flush.
func (s *rateSummaries) flush() {
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	now := time.Now()
	for _, l := range pending {
		for method, n := range l.take() {
			s.report(l.server, method, n, now)
		}
	}
}

func (s *rateSummaries) report(server, method string, n uint64, now time.Time) {
	params, _ := json.Marshal(map[string]any{
		"dropped": n, "method": method, "reason": "rate", "intervalMs": s.rate.Interval.Milliseconds()})
	s.rt.logger.Warn("server events over the rate bound dropped", "server", server, "method", method, "count", n,
		"interval", s.rate.Interval)
	if j := s.rt.journal; j != nil {
		j.Ingest(server, persistence.AppendEvent(persistence.EventRecord{
			Server: server, Method: persistence.MethodEventsDropped, Params: params, Received: now}))
	}
	s.rt.emit(Event{Time: now, Server: server, Kind: EventNotification, Method: persistence.MethodEventsDropped, Params: params})
}

// stop summarises what is left and joins the goroutine. Idempotent.
func (s *rateSummaries) stop() {
	s.stopOnce.Do(func() { close(s.quit) })
	<-s.exited
}

// EventsRateLimited counts, per server, the events dropped by the rate
// bound (EventRate) since the server was registered.
func (r *Runtime) EventsRateLimited() map[string]uint64 {
	out := map[string]uint64{}
	for name, e := range r.snap.Load().byName {
		if e.events == nil {
			continue
		}
		if n := e.events.total.Load(); n > 0 {
			out[name] = n
		}
	}
	return out
}
