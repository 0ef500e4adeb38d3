package actors

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// Requests a server sends to the host (elicitation, sampling, roots) are
// served by handlers the embedder provides, on goroutines of their own: the
// server's actor never waits for a person or a model. While a handler that
// pauses calls is at work, the server's call timeouts stand still, so a tool
// call waiting for a password does not time out behind the person typing it.

// ServerRequest is a request a server sent to the host.
type ServerRequest struct {
	Server string
	Method string
	ID     json.RawMessage // the server's request id, as sent
	Params json.RawMessage
	// Legacy: the server's legacy incarnation sent it (twin.go), so it
	// belongs to one of the requests made with CallOptions.Legacy.
	Legacy bool
}

// RequestHandler answers one server request: a result, or an error (a
// *protocol.Error is sent as it is; any other error as -32603). ctx ends
// when the server cancels the request, its connection is lost, or the host
// closes; the handler must then return.
type RequestHandler func(ctx context.Context, req ServerRequest) (json.RawMessage, error)

// Handler serves one method of server requests.
type Handler struct {
	Serve RequestHandler
	// PausesCalls stops the server's call timeouts while the handler runs
	// (it waits for a person or a model, not for the server).
	PausesCalls bool
}

// Progress is one notifications/progress for a call.
type Progress struct {
	Progress float64
	Total    *float64
	Message  string
}

// CallOptions tune one call. The zero value is the server's defaults.
type CallOptions struct {
	// OnProgress, when set, asks the server for progress (a progressToken
	// in _meta) and receives each notifications/progress on the caller's
	// goroutine. Set Progress instead to keep one token across requests.
	OnProgress func(Progress)
	// Progress is a token subscription that outlives the call (a task's
	// token stays valid until the task ends); OnProgress receives its
	// notifications while the call waits.
	Progress *ProgressSub
	// Timeout bounds the wait for the answer; 0: the server's CallTimeout.
	Timeout time.Duration
	// ResetTimeoutOnProgress restarts the timeout at each progress
	// notification; MaxTotalTimeout caps the whole call however much
	// progress it reports (0: the server's MaxTotalTimeout, or no cap).
	ResetTimeoutOnProgress bool
	MaxTotalTimeout        time.Duration
	// Task is the task field ({"ttl":…}) a tools/call carries if the tool
	// runs as a task: the server declared tasks.requests.tools.call and the
	// tool's taskSupport is optional or required. Decided when the call is
	// sent, so a call queued while its server starts is decided too.
	Task json.RawMessage
	// Input is a multi round-trip retry's members of params
	// ("inputResponses":…,"requestState":…), added as they are.
	Input json.RawMessage
	// Legacy marks a request made for a client of a legacy revision that
	// answers server requests (elicitation, sampling, roots): a modern
	// server that also speaks a legacy revision serves it through its
	// legacy incarnation (twin.go), where it asks that way.
	Legacy bool
	// Timing, when set, receives when the request was held for its
	// server's start and when it was written (a call's own duration, a
	// traced call's phases). Cleared when Call or Request begins, so one
	// CallTiming may serve a call's successive requests.
	Timing *CallTiming
}

// CallTiming is when a request's frame began and finished being written
// to the server: by the caller (the fast path) or by the actor (a call
// queued while the server started). It may be written after the caller
// stopped waiting (a timeout), so it is atomic.
type CallTiming struct {
	start, end atomic.Int64 // Unix nanoseconds; 0: not (yet) written
	// held and released: when the server's actor began to hold the
	// request for its server to start (or to be signed in), and when it
	// let it go to be written; 0: not held, not (yet) let go.
	held, released atomic.Int64
}

// clear forgets a previous request's times. Atomic: the actor of a
// request answered before it noted the end of its write may note it yet.
func (t *CallTiming) clear() {
	t.start.Store(0)
	t.end.Store(0)
	t.held.Store(0)
	t.released.Store(0)
}

// Held returns when the request began to wait for its server to start
// (zero: it did not wait) and when the server, ready, took it (zero:
// still waiting, or failed while it waited, with the server's start).
// That wait is the server's time, not the request's. Unlike Sent, it does
// not depend on the write's end, which the actor of a request held for
// its server may note after the answer came.
func (t *CallTiming) Held() (from, until time.Time) {
	h := t.held.Load()
	if h == 0 {
		return time.Time{}, time.Time{}
	}
	if r := t.released.Load(); r != 0 {
		until = time.Unix(0, r)
	}
	return time.Unix(0, h), until
}

// Sent returns when the write began and ended; zero times if the request
// was never written.
func (t *CallTiming) Sent() (start, end time.Time) {
	s, e := t.start.Load(), t.end.Load()
	if s == 0 || e == 0 {
		return time.Time{}, time.Time{}
	}
	return time.Unix(0, s), time.Unix(0, e)
}

// progressBuffer is how many notifications a call's subscription holds
// ahead of its caller; past it, notifications are dropped and counted (the
// latest progress is what matters, and a reader must never wait).
const progressBuffer = 128

// ProgressSub receives the notifications/progress of one token.
type ProgressSub struct {
	token   string
	tokJSON json.RawMessage // the token as a JSON string
	c       chan Progress
	entry   *serverEntry
	dropped atomic.Uint64
	once    sync.Once
}

var progressSeq atomic.Uint64

// WatchProgress makes a progress token for a request to server. Close it
// once the request (or its task) has ended.
func (r *Runtime) WatchProgress(server string) (*ProgressSub, error) {
	e := r.snap.Load().byName[server]
	if e == nil {
		return nil, errUnknownServer(server)
	}
	return e.watchProgress(), nil
}

func (e *serverEntry) watchProgress() *ProgressSub {
	e = e.progressEntry()
	tok := "mcpvisor-" + strconv.FormatUint(progressSeq.Add(1), 10)
	s := &ProgressSub{token: tok, tokJSON: json.RawMessage(strconv.Quote(tok)), c: make(chan Progress, progressBuffer), entry: e}
	e.progress.Store(tok, s)
	return s
}

// Token is the progressToken sent in _meta.
func (s *ProgressSub) Token() string { return s.token }

// C delivers the token's notifications.
func (s *ProgressSub) C() <-chan Progress { return s.c }

// Dropped counts notifications dropped because the reader fell behind.
func (s *ProgressSub) Dropped() uint64 { return s.dropped.Load() }

// Close stops the subscription: later notifications for its token are
// dropped as unknown.
func (s *ProgressSub) Close() { s.once.Do(func() { s.entry.progress.Delete(s.token) }) }

// DeliverProgress hands p to the subscriber of server's token, as if the
// server had sent it here (it came from another member of the cluster,
// which relays a task's progress); dropped when there is none.
func (r *Runtime) DeliverProgress(server, token string, p Progress) {
	e := r.snap.Load().byName[server]
	if e == nil {
		return
	}
	if v, ok := e.progress.Load(token); ok {
		v.(*ProgressSub).offer(p)
	}
}

// offer hands p to the subscriber without waiting: dropped (counted) when
// it has fallen behind.
func (s *ProgressSub) offer(p Progress) {
	select {
	case s.c <- p:
	default:
		s.dropped.Add(1)
	}
}

// deliverProgress hands one notifications/progress to its subscriber, on the
// reader's goroutine; it never blocks.
func (e *serverEntry) deliverProgress(params json.RawMessage) {
	var p protocol.ProgressParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	tok := string(p.ProgressToken)
	var s string
	if json.Unmarshal(p.ProgressToken, &s) == nil {
		tok = s
	}
	v, ok := e.progressEntry().progress.Load(tok)
	if !ok {
		return // unknown or finished: dropped, as the spec asks
	}
	v.(*ProgressSub).offer(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
}

// pauseClock measures how long a server's call timeouts stood still: the
// time during which at least one pausing handler was at work.
type pauseClock struct {
	mu      sync.Mutex
	n       int
	since   time.Time
	total   time.Duration
	resumed chan struct{} // closed when n falls to 0
}

func (c *pauseClock) pause(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.since = now
		c.resumed = make(chan struct{})
	}
	c.n++
}

func (c *pauseClock) resume(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return
	}
	c.n--
	if c.n == 0 {
		c.total += now.Sub(c.since)
		close(c.resumed)
		c.resumed = nil
	}
}

// read returns the paused time up to now and, while paused, a channel
// closed on resume.
func (c *pauseClock) read(now time.Time) (time.Duration, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return c.total, nil
	}
	return c.total + now.Sub(c.since), c.resumed
}

// callTimer is a call's timeout: the time the call has been waiting, less
// the time the server's timeouts stood still, against Timeout (from the
// last progress, with ResetTimeoutOnProgress) and MaxTotalTimeout.
type callTimer struct {
	clock    *pauseClock
	start    time.Time
	paused0  time.Duration
	timeout  time.Duration
	maxTotal time.Duration
	reset    time.Duration // active time at the last progress reset
}

func newCallTimer(clock *pauseClock, timeout, maxTotal time.Duration) callTimer {
	now := time.Now()
	p0, _ := clock.read(now)
	return callTimer{clock: clock, start: now, paused0: p0, timeout: timeout, maxTotal: maxTotal}
}

// active is the time the call has counted against its timeouts.
func (t *callTimer) active(now time.Time) (time.Duration, <-chan struct{}) {
	p, resumed := t.clock.read(now)
	return now.Sub(t.start) - (p - t.paused0), resumed
}

// progressed restarts the timeout, if the call asked for that.
func (t *callTimer) progressed() { t.reset, _ = t.active(time.Now()) }

// remaining is how long the call may still wait, and while the clock stands
// still, a channel that says when it runs again. expired reports which
// bound ran out.
func (t *callTimer) remaining() (left time.Duration, resumed <-chan struct{}, total bool) {
	act, resumed := t.active(time.Now())
	left = t.timeout - (act - t.reset)
	if t.maxTotal > 0 && t.maxTotal-act < left {
		left, total = t.maxTotal-act, true
	}
	return left, resumed, total
}

// serving is a server request a handler is at work on.
type serving struct {
	cancel context.CancelFunc
	pauses bool
}

// serverReplied carries a handler's answer back to the actor, which writes
// it if the connection that asked is still the current one.
type serverReplied struct {
	gen   uint64
	key   string
	frame []byte
}

// serveRequest starts the handler of a server request, or answers it at
// once when there is none.
func (a *serverActor) serveRequest(msg *protocol.Message) {
	h, ok := a.rt.handlers[msg.Method]
	if !ok || h.Serve == nil {
		a.reply(protocol.AppendError(nil, msg.ID, protocol.CodeMethodNotFound, "method not found: "+msg.Method, nil))
		return
	}
	key := string(msg.ID)
	if _, dup := a.serving[key]; dup {
		a.reply(protocol.AppendError(nil, msg.ID, protocol.CodeInvalidRequest, "a request with this id is already in progress", nil))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	if a.serving == nil {
		a.serving = map[string]*serving{}
	}
	a.serving[key] = &serving{cancel: cancel, pauses: h.PausesCalls}
	if h.PausesCalls {
		a.entry.clock.pause(time.Now())
	}
	req := ServerRequest{Server: a.spec.Name, Method: msg.Method, ID: msg.ID, Params: msg.Params, Legacy: a.entry.home != nil}
	gen, self := a.inc.gen, a.self
	a.rt.goroutine(func() {
		defer cancel()
		res, err := h.Serve(ctx, req)
		var frame []byte
		var perr *protocol.Error
		switch {
		case errors.As(err, &perr):
			frame = protocol.AppendError(nil, req.ID, perr.Code, perr.Message, perr.Data)
		case err != nil:
			frame = protocol.AppendError(nil, req.ID, protocol.CodeInternalError, err.Error(), nil)
		default:
			if len(res) == 0 {
				res = json.RawMessage("{}")
			}
			frame = protocol.AppendResult(nil, req.ID, res)
		}
		a.rt.send(self, &serverReplied{gen: gen, key: key, frame: frame})
	})
}

func (a *serverActor) onServerReplied(m *serverReplied) {
	s, ok := a.serving[m.key]
	if !ok {
		return // cancelled by the server, or its connection is gone
	}
	a.endServing(m.key, s)
	if m.gen == a.inc.gen && a.inc.conn != nil {
		a.reply(m.frame)
	}
}

// cancelServing applies a server's notifications/cancelled to the request
// it names: its handler's context ends and no answer is sent.
func (a *serverActor) cancelServing(params json.RawMessage) {
	var p protocol.CancelledParams
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	if s, ok := a.serving[string(p.RequestID)]; ok {
		a.endServing(string(p.RequestID), s)
	}
}

// stopServing ends every handler at work (the connection is gone).
func (a *serverActor) stopServing() {
	for key, s := range a.serving {
		a.endServing(key, s)
	}
}

func (a *serverActor) endServing(key string, s *serving) {
	delete(a.serving, key)
	s.cancel()
	if s.pauses {
		a.entry.clock.resume(time.Now())
	}
}

// reply answers a request the server sent; frame is the response.
func (a *serverActor) reply(frame []byte) { a.sendOut(responseOut(frame)) }

// sendOut sends a message that needs no answer (a response or a
// notification), if connected; a refusal is only logged.
func (a *serverActor) sendOut(m outMsg) {
	if a.inc.conn == nil {
		return
	}
	if err := a.inc.conn.send(m); err != nil {
		if m.kind == outResponse {
			a.slog.Warn("could not answer a server request", "err", err)
		} else {
			a.slog.Warn("could not send a notification", "method", m.method, "err", err)
		}
	}
}
