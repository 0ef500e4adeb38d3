package sidecar

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/opstats"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Ops keeps each server's operational figures over the last hour for the
// operations page (/ui/ops.html) and `mcpvisor top`: calls per second,
// error rate, p50/p99 latency and pending calls in ten-second steps, and
// its state timeline. It observes calls as a stage of the host's call
// pipeline (CallMiddleware) and the host's state through Watch; serve it by
// setting Options.Ops. Its memory is bounded per server, whatever the call
// rate.
type Ops struct {
	rec  *opstats.Recorder
	step time.Duration

	mu    sync.Mutex
	stop  context.CancelFunc
	unsub func()
	done  chan struct{}
}

// OpsOptions tune an Ops; the zero value keeps an hour in ten-second steps.
type OpsOptions struct {
	Window, Step time.Duration
}

// NewOps returns an Ops keeping opts.Window of figures.
func NewOps(opts OpsOptions) *Ops {
	if opts.Step <= 0 {
		opts.Step = opstats.DefaultStep
	}
	return &Ops{rec: opstats.New(opts.Window, opts.Step), step: opts.Step}
}

// CallMiddleware observes every call's outcome and latency (Call.Latency:
// the time it waited for a person or for its server to start is left
// out): pass it in
// mcpvisor.Options.CallMiddleware. Host tools are not counted (no server),
// nor requests other than tools/call.
func (o *Ops) CallMiddleware(next mcpvisor.CallFunc) mcpvisor.CallFunc {
	return func(ctx context.Context, c *mcpvisor.Call) (*mcpvisor.Result, error) {
		res, err := next(ctx, c)
		if c.Server != "" && c.Method == protocol.MethodToolsCall {
			o.rec.ObserveCall(c.Server, time.Now(), c.Latency(), err != nil || res != nil && res.IsError)
		}
		return res, err
	}
}

// Watch follows h's state changes into the timelines and samples its
// pending calls every step, until Close. Call it once, after the host is
// open.
func (o *Ops) Watch(h *mcpvisor.Host) {
	ctx, cancel := context.WithCancel(context.Background())
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stop != nil {
		cancel()
		panic("sidecar: Ops.Watch called twice")
	}
	o.stop, o.done = cancel, make(chan struct{})
	// Subscribed first, then the states so far: a change in between is
	// seen twice, which State folds.
	o.unsub = h.Subscribe(func(ev mcpvisor.Event) {
		if ev.Kind == mcpvisor.EventState {
			o.rec.State(ev.Server, ev.Time, string(ev.State), ev.Err)
		}
	})
	for _, st := range h.Status() {
		o.rec.State(st.Name, st.Since, string(st.State), st.LastError)
	}
	go o.sample(ctx, h)
}

// sample records each server's pending calls (sampled a few times a step,
// as each step keeps the most it saw) and forgets unregistered servers.
func (o *Ops) sample(ctx context.Context, h *mcpvisor.Host) {
	defer close(o.done)
	t := time.NewTicker(max(o.step/4, 100*time.Millisecond))
	defer t.Stop()
	known := map[string]bool{}
	for {
		now := time.Now()
		pending := h.PendingCalls()
		present := make(map[string]bool, len(known))
		for _, st := range h.Status() {
			present[st.Name] = true
			o.rec.SamplePending(st.Name, now, pending[st.Name])
		}
		for name := range known {
			if !present[name] {
				o.rec.Forget(name)
			}
		}
		known = present
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// Close stops Watch's sampling and subscription. It is idempotent.
func (o *Ops) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stop == nil {
		return
	}
	o.stop()
	o.unsub()
	<-o.done
	o.stop = func() {}
	o.unsub = func() {}
}

// OpsView is GET /v1/ops and each "ops" event of GET /v1/ops/stream.
type OpsView struct {
	Time time.Time `json:"time"`
	// StepMs and WindowMs are the series' step and span.
	StepMs   int64           `json:"stepMs"`
	WindowMs int64           `json:"windowMs"`
	Servers  []OpsServerView `json:"servers"`
}

// OpsServerView is one server on the operations page: its status now and
// its figures over the window.
type OpsServerView struct {
	Name      string         `json:"name"`
	Transport string         `json:"transport"`
	Enabled   bool           `json:"enabled"`
	State     mcpvisor.State `json:"state"`
	Node      string         `json:"node,omitempty"` // in a cluster, the member it runs on when not this one
	Since     time.Time      `json:"since,omitzero"`
	LastError string         `json:"lastError,omitempty"`
	Restarts  int            `json:"restarts"`
	NextRetry time.Time      `json:"nextRetry,omitzero"`
	PID       int            `json:"pid,omitempty"`
	Tools     int            `json:"tools"`
	Held      int            `json:"held,omitempty"`
	Pending   int            `json:"pending"` // calls in flight now
	// Recent covers the last minute; Hour the window.
	Recent opstats.Summary `json:"recent"`
	Hour   opstats.Summary `json:"hour"`
	// Points are the steps from the one asked for (all of the window by
	// default), oldest first; the last is the step under way.
	Points   []opstats.Point      `json:"points"`
	Timeline []opstats.Transition `json:"timeline"`
	Events   []opstats.Transition `json:"events"`
}

// opsView builds the view as of now with the points from since on (zero:
// the whole window; in the future: none).
func (s *Server) opsView(now, since time.Time) OpsView {
	o := s.opts.Ops
	stats := o.rec.Snapshot(now)
	pending := s.h.PendingCalls()
	v := OpsView{Time: now.UTC(), StepMs: o.step.Milliseconds(), WindowMs: o.rec.Window().Milliseconds(), Servers: []OpsServerView{}}
	for _, st := range s.h.Status() {
		sv := OpsServerView{Name: st.Name, Transport: string(st.Transport), Enabled: st.Enabled, State: st.State, Node: st.Node,
			Since: st.Since, LastError: st.LastError, Restarts: st.Restarts, NextRetry: st.NextRetry, PID: st.PID,
			Tools: st.Tools, Held: st.Held, Pending: pending[st.Name],
			Points: []opstats.Point{}, Timeline: []opstats.Transition{}, Events: []opstats.Transition{}}
		if x, ok := stats[st.Name]; ok {
			sv.Recent, sv.Hour, sv.Timeline, sv.Events = x.Recent, x.Hour, x.Timeline, x.Events
			sv.Points = x.Points
			if !since.IsZero() {
				i := 0
				for i < len(sv.Points) && !sv.Points[i].Time.Add(o.step).After(since) {
					i++
				}
				sv.Points = sv.Points[i:]
			}
		}
		v.Servers = append(v.Servers, sv)
	}
	return v
}

// ops is GET /v1/ops: every server's figures, with points from ?since=
// (Unix milliseconds) on, or none with ?points=false.
func (s *Server) ops(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ops == nil {
		notFound(w, "operations statistics are off in this sidecar")
		return
	}
	now := time.Now()
	since, ok := opsSince(w, r, now)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.opsView(now, since))
}

// opsSince reads ?since= and ?points=.
func opsSince(w http.ResponseWriter, r *http.Request, now time.Time) (time.Time, bool) {
	q := r.URL.Query()
	if p := q.Get("points"); p != "" {
		b, err := strconv.ParseBool(p)
		if err != nil {
			badRequest(w, "points must be true or false")
			return time.Time{}, false
		}
		if !b {
			return now.Add(time.Hour), true
		}
	}
	if v := q.Get("since"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 {
			badRequest(w, "since must be a Unix time in milliseconds")
			return time.Time{}, false
		}
		return time.UnixMilli(ms), true
	}
	return time.Time{}, true
}

// opsGap is the shortest time between two events of the ops stream; opsTick
// the longest, so the charts move with no state change.
const (
	opsGap  = 250 * time.Millisecond
	opsTick = 2 * time.Second
)

// opsStream is GET /v1/ops/stream: an "ops" event with the whole window at
// once, then one after every state change (at most one per opsGap) and at
// least every opsTick, each with the points from the step before the last
// one sent (the one under way then, now complete) on.
func (s *Server) opsStream(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ops == nil {
		notFound(w, "operations statistics are off in this sidecar")
		return
	}
	ctx := r.Context()
	now := time.Now()
	since, ok := opsSince(w, r, now)
	if !ok {
		return
	}
	sse := newSSE(w)
	tick := time.NewTicker(opsTick)
	defer tick.Stop()
	for {
		changed := s.h.StatusChanged()
		now = time.Now()
		if sse.event("ops", s.opsView(now, since)) != nil {
			return
		}
		step := int64(s.opts.Ops.step)
		since = time.Unix(0, (now.UnixNano()/step-1)*step)
		next := now.Add(opsGap)
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		if !sleepCtx(ctx, time.Until(next)) {
			return
		}
	}
}

// restartServer is POST /v1/servers/{name}/restart.
func (s *Server) restartServer(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := s.h.Restart(r.Context(), name); err != nil {
		writeErr(w, err)
		return
	}
	st, _ := s.status(name)
	writeJSON(w, http.StatusOK, st)
}
