// Package opstats keeps what the operations page and `mcpvisor top` show
// of each server over the last hour: calls, errors, latency and pending
// calls in fixed steps, and the server's state changes. It holds a bounded
// amount per server (Window/Step buckets, a bounded timeline) whatever the
// call rate, and is safe for concurrent use.
package opstats

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Defaults: an hour in ten-second steps (360 points per series).
const (
	DefaultWindow = time.Hour
	DefaultStep   = 10 * time.Second
)

// maxTransitions bounds a server's state timeline; maxEvents its list of
// recent lifecycle events.
const (
	maxTransitions = 512
	maxEvents      = 20
)

// Latency histogram: log-spaced buckets, four per doubling, from 10 µs.
// The last bucket holds everything from about 11 minutes on (10 µs ×
// 2^(105/4) ≈ 671 s).
const (
	histBuckets = 106
	histBase    = 10e-6 // seconds: the upper bound of bucket 0
	histPerOct  = 4
)

// bucketOf is the histogram bucket of a duration in seconds.
func bucketOf(s float64) int {
	if s <= histBase {
		return 0
	}
	i := int(math.Ceil(math.Log2(s/histBase) * histPerOct))
	return min(max(i, 0), histBuckets-1)
}

// upper is the upper bound of histogram bucket i, in seconds.
func upper(i int) float64 { return histBase * math.Exp2(float64(i)/histPerOct) }

// step is one time step of one server.
type step struct {
	at      int64 // the step's index (Unix time / Step); 0: unused
	calls   uint32
	errors  uint32
	pending int // the most calls in flight sampled in the step
	hist    [histBuckets]uint32
}

// series is one server's ring of steps and its timeline.
type series struct {
	steps       []step
	transitions []Transition
	events      []Transition
}

// Recorder gathers the statistics. The zero value is not usable: use New.
type Recorder struct {
	window, step time.Duration

	mu      sync.Mutex
	servers map[string]*series
}

// New returns a recorder keeping window in steps of step (zero: the
// defaults).
func New(window, step time.Duration) *Recorder {
	if window <= 0 {
		window = DefaultWindow
	}
	if step <= 0 {
		step = DefaultStep
	}
	return &Recorder{window: window, step: step, servers: map[string]*series{}}
}

// Window is the span the recorder keeps.
func (r *Recorder) Window() time.Duration { return time.Duration(r.n()) * r.step }

func (r *Recorder) n() int { return int((r.window + r.step - 1) / r.step) }

func (r *Recorder) index(t time.Time) int64 { return t.UnixNano() / int64(r.step) }

// stepAt returns the server's step for t, cleared if it held an older one;
// nil when it holds a newer one (t is a window or more before what was
// recorded: too old to keep). The caller holds r.mu.
func (r *Recorder) stepAt(server string, t time.Time) *step {
	s := r.series(server)
	i := r.index(t)
	st := &s.steps[int(i%int64(len(s.steps)))]
	if st.at > i {
		return nil
	}
	if st.at != i {
		*st = step{at: i}
	}
	return st
}

func (r *Recorder) series(server string) *series {
	s := r.servers[server]
	if s == nil {
		s = &series{steps: make([]step, r.n())}
		r.servers[server] = s
	}
	return s
}

// ObserveCall records one finished call of server, taking d, that failed
// (an error or a tool error) or not, finished at now.
func (r *Recorder) ObserveCall(server string, now time.Time, d time.Duration, failed bool) {
	b := bucketOf(d.Seconds())
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stepAt(server, now)
	if st == nil {
		return
	}
	st.calls++
	if failed {
		st.errors++
	}
	st.hist[b]++
}

// SamplePending records that server had n calls in flight at now; a step
// keeps the most it saw.
func (r *Recorder) SamplePending(server string, now time.Time, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.stepAt(server, now); st != nil {
		st.pending = max(st.pending, n)
	}
}

// Transition is a server entering a state: a point of its state timeline,
// and a lifecycle event.
type Transition struct {
	Time  time.Time `json:"time"`
	State string    `json:"state"`
	Error string    `json:"error,omitempty"`
}

// State records that server entered state at t (err says why it left the
// last, if it failed). A repeat of the current state with no error is not
// a transition.
func (r *Recorder) State(server string, t time.Time, state, err string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.series(server)
	tr := Transition{Time: t, State: state, Error: err}
	if n := len(s.transitions); n > 0 && s.transitions[n-1].State == state && err == "" {
		return
	}
	s.transitions = appendBounded(s.transitions, tr, maxTransitions)
	s.events = appendBounded(s.events, tr, maxEvents)
}

func appendBounded(list []Transition, t Transition, limit int) []Transition {
	if len(list) >= limit {
		list = slices.Delete(list, 0, len(list)-limit+1)
	}
	return append(list, t)
}

// Forget drops a server's statistics (it was unregistered).
func (r *Recorder) Forget(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.servers, server)
}

// Point is one step of a server's series.
type Point struct {
	Time  time.Time `json:"t"`     // the step's start
	Calls uint32    `json:"calls"` // calls finished in the step
	// Rate is calls per second over the step.
	Rate float64 `json:"rate"`
	// ErrorRate is the share of the step's calls that failed, 0 to 1.
	ErrorRate float64 `json:"errorRate"`
	// P50 and P99 are latency quantiles in milliseconds, 0 with no calls.
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	Pending int     `json:"pending"`
}

// Summary is a server's figures over a recent span (Snapshot's recent).
type Summary struct {
	Calls     uint64  `json:"calls"`
	Errors    uint64  `json:"errors"`
	Rate      float64 `json:"rate"`      // calls per second
	ErrorRate float64 `json:"errorRate"` // 0 to 1
	P50       float64 `json:"p50"`       // milliseconds
	P99       float64 `json:"p99"`       // milliseconds
}

// Server is the statistics of one server.
type Server struct {
	Name string `json:"name"`
	// Recent sums the last minute; Hour the whole window.
	Recent Summary `json:"recent"`
	Hour   Summary `json:"hour"`
	// Points is the window, oldest first, one per step, empty steps
	// included, so the series all line up.
	Points []Point `json:"points"`
	// Timeline is the state changes within the window, oldest first,
	// preceded by the last change before it (the state the window opens
	// in), when known.
	Timeline []Transition `json:"timeline"`
	// Events is the last lifecycle events, oldest first.
	Events []Transition `json:"events"`
}

// RecentSpan is the span Summary.Recent covers.
const RecentSpan = time.Minute

// Snapshot returns every server's statistics as of now, by name.
func (r *Recorder) Snapshot(now time.Time) map[string]Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Server, len(r.servers))
	for name, s := range r.servers {
		out[name] = r.view(name, s, now)
	}
	return out
}

// view builds one server's statistics. The caller holds r.mu.
func (r *Recorder) view(name string, s *series, now time.Time) Server {
	n := r.n()
	last := r.index(now)
	first := last - int64(n) + 1
	recentFrom := r.index(now.Add(-RecentSpan)) + 1
	v := Server{Name: name, Points: make([]Point, 0, n)}
	var hour, recent [histBuckets]uint64
	var hc, he, rc, re uint64
	secs := r.step.Seconds()
	for i := first; i <= last; i++ {
		p := Point{Time: time.Unix(0, i*int64(r.step)).UTC()}
		st := &s.steps[int(i%int64(len(s.steps)))]
		if st.at == i {
			p.Calls, p.Pending = st.calls, st.pending
			p.Rate = float64(st.calls) / secs
			if st.calls > 0 {
				p.ErrorRate = float64(st.errors) / float64(st.calls)
				var h [histBuckets]uint64
				for b, c := range st.hist {
					h[b] = uint64(c)
					hour[b] += uint64(c)
					if i >= recentFrom {
						recent[b] += uint64(c)
					}
				}
				p.P50, p.P99 = quantile(&h, uint64(st.calls), .5), quantile(&h, uint64(st.calls), .99)
			}
			hc += uint64(st.calls)
			he += uint64(st.errors)
			if i >= recentFrom {
				rc += uint64(st.calls)
				re += uint64(st.errors)
			}
		}
		v.Points = append(v.Points, p)
	}
	// The rates are over the time the steps summed cover: from the first
	// one's start to now, the step under way only partly elapsed.
	from := time.Unix(0, first*int64(r.step))
	v.Hour = summarize(&hour, hc, he, now.Sub(from).Seconds())
	v.Recent = summarize(&recent, rc, re, now.Sub(time.Unix(0, recentFrom*int64(r.step))).Seconds())
	start := 0
	for i, t := range s.transitions {
		if t.Time.Before(from) {
			start = i // the last one before the window: the state it opens in
		}
	}
	v.Timeline = slices.Clone(s.transitions[start:])
	if v.Timeline == nil {
		v.Timeline = []Transition{}
	}
	v.Events = slices.Clone(s.events)
	if v.Events == nil {
		v.Events = []Transition{}
	}
	return v
}

func summarize(h *[histBuckets]uint64, calls, errors uint64, secs float64) Summary {
	s := Summary{Calls: calls, Errors: errors}
	if secs > 0 {
		s.Rate = float64(calls) / secs
	}
	if calls > 0 {
		s.ErrorRate = float64(errors) / float64(calls)
		s.P50, s.P99 = quantile(h, calls, .5), quantile(h, calls, .99)
	}
	return s
}

// quantile is the q-quantile of the histogram in milliseconds: the upper
// bound of the bucket holding it (at most 19% over the true value).
func quantile(h *[histBuckets]uint64, total uint64, q float64) float64 {
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range h {
		if seen += c; seen >= rank && c > 0 {
			return math.Round(upper(i)*1e6) / 1e3
		}
	}
	return math.Round(upper(histBuckets-1)*1e6) / 1e3
}
