package actors

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// pendingTable holds the requests in flight on one connection. It is the
// one piece of a server's state shared beyond its actor, for speed: callers
// add their tools/call directly when the server is ready, and whoever reads
// the connection (its reader goroutine, or over stdio a caller reading for
// itself) hands a response straight to the caller waiting for it. Two
// goroutine hand-offs per call are saved that way (caller → actor and
// reader → actor), which is most of a call's cost over a raw pipe.
//
// Everything else stays with the actor: the handshake's own requests are
// answered to it, and a connection's death closes the table and fails
// every request in it at once.
type pendingTable struct {
	mu   sync.Mutex
	next int64
	m    map[int64]*pendingReq
	// active counts the requests in m that expect a prompt answer (all but
	// the modern era's long-lived subscriptions/listen), for readers that do
	// not take mu (stdoutReader).
	active atomic.Int32
	// cancelled is set when a request leaves the table cancelled, and
	// cleared by the next response the server sends: until then the server
	// may still be busy with it (it need not answer a cancelled request).
	cancelled atomic.Bool
	closed    error // set once the connection is gone
}

type reqKind uint8

const (
	reqCall reqKind = iota
	reqInitialize
	reqToolsList
	reqSetLevel
	reqDiscover
	reqListen
)

// pendingReq is one request sent to the server and not yet answered.
type pendingReq struct {
	kind reqKind
	call *callMsg // reqCall
	id   int64
}

func newPendingTable() *pendingTable {
	return &pendingTable{m: make(map[int64]*pendingReq)}
}

// add assigns the next id to p and records it, unless the table is closed.
func (t *pendingTable) add(p *pendingReq) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed != nil {
		return 0, t.closed
	}
	t.next++
	p.id = t.next
	if p.call != nil {
		p.call.id = p.id
	}
	t.m[p.id] = p
	if p.kind != reqListen {
		t.active.Add(1)
	}
	return p.id, nil
}

// take removes and returns the request with id, or nil.
func (t *pendingTable) take(id int64) *pendingReq {
	t.mu.Lock()
	p := t.m[id]
	if p != nil {
		t.remove(p)
	}
	t.mu.Unlock()
	return p
}

// takeCall removes call's entry if it is still pending.
func (t *pendingTable) takeCall(call *callMsg) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.m[call.id]
	if p == nil || p.call != call {
		return false
	}
	t.remove(p)
	return true
}

// remove deletes p from the table; t.mu is held.
func (t *pendingTable) remove(p *pendingReq) {
	delete(t.m, p.id)
	if p.kind != reqListen {
		t.active.Add(-1)
	}
}

// close refuses new requests with err and returns the ones in flight.
func (t *pendingTable) close(err error) []*pendingReq {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed == nil {
		t.closed = err
	}
	out := make([]*pendingReq, 0, len(t.m))
	for id, p := range t.m {
		out = append(out, p)
		delete(t.m, id)
	}
	t.active.Store(0)
	return out
}

// inFlight is how many requests wait for a prompt answer (all but a
// subscriptions/listen), without waiting for the table's lock: a snapshot
// that may be stale by the time it is used.
func (t *pendingTable) inFlight() int { return int(t.active.Load()) }

// answer delivers a response to the caller that waits for it.
func (p *pendingReq) answer(server string, msg *protocol.Message) {
	if msg.Error != nil {
		p.call.reply <- callReply{err: fmt.Errorf("server %q: %s: %w", server, p.call.what(), msg.Error)}
		return
	}
	p.call.reply <- callReply{result: msg.Result}
}

// responseMsg carries the answer to one of the actor's own requests
// (initialize, tools/list).
type responseMsg struct {
	gen uint64
	req *pendingReq
	msg protocol.Message
}

// router sends what a connection reads to whoever waits for it: responses
// to calls straight to their callers, everything else to the actor. Shared
// by every transport.
type router struct {
	gen     uint64
	server  string
	pending *pendingTable
	flow    *flow
	deliver func(any)
	event   func(*protocol.Message) bool // nil: everything goes to the actor
}

// newRouter makes a connection's router. event, when set, takes the
// server's events (notifications that are not protocol plumbing) on the
// reader's goroutine: they change nothing the actor owns, and a flood of
// them skipping the mailbox costs a fraction as much.
func newRouter(gen uint64, spec *ServerSpec, deliver func(any), event func(*protocol.Message) bool) router {
	return router{
		gen:     gen,
		server:  spec.Name,
		pending: newPendingTable(),
		// At most about two maximum frames read ahead of the actor.
		flow:    newFlow(int64(2 * spec.MaxFrame)),
		deliver: deliver,
		event:   event,
	}
}

// route hands over one classified inbound message. It returns false if the
// connection is stopping (stop closed while waiting for flow credit).
func (r *router) route(msg protocol.Message, size int, stop <-chan struct{}) bool {
	if r.handOff(&msg) {
		return true
	}
	if !r.flow.acquire(size, stop) {
		return false
	}
	r.deliver(&inboundMsg{gen: r.gen, msg: msg, size: size})
	return true
}

// handOff delivers what goes around the actor's inbound flow: a response to
// whoever waits for it (a caller, or the actor for its own requests) and
// the events the sink takes. It reports false for what is left for the
// actor as an inboundMsg, under flow control.
func (r *router) handOff(msg *protocol.Message) bool {
	if msg.Kind == protocol.KindResponse {
		if r.pending.cancelled.Load() {
			r.pending.cancelled.Store(false)
		}
		if id, ok := msg.IntID(); ok {
			if p := r.pending.take(id); p != nil {
				if p.kind == reqCall {
					p.answer(r.server, msg)
				} else {
					r.deliver(&responseMsg{gen: r.gen, req: p, msg: *msg})
				}
				return true
			}
		}
	}
	return msg.Kind == protocol.KindNotification && r.event != nil && r.sink(*msg)
}

// sink offers a notification to the event sink. It takes a copy, so that
// only notifications cost an allocation, not every response handed off.
func (r *router) sink(msg protocol.Message) bool { return r.event(&msg) }

// isPlumbing reports whether a notification is the protocol's own, handled
// by the actor, rather than an event for the journal.
func isPlumbing(method string) bool {
	switch method {
	case protocol.MethodLoggingMessage, protocol.MethodToolsListChanged, protocol.MethodCancelled,
		protocol.MethodSubscriptionsAcknowledged:
		return true
	}
	return false
}

// oversized fails the request a rejected frame answered, if its id is known.
func (r *router) oversized(id []byte, size int64, limit int) {
	err := fmt.Errorf("server %q: %w: %d bytes or more, limit %d", r.server, protocol.ErrFrameTooLarge, size, limit)
	var p *pendingReq
	if n, ok := parseID(id); ok {
		p = r.pending.take(n)
	}
	if p != nil && p.kind == reqCall {
		p.call.reply <- callReply{err: err}
		p = nil
	}
	r.deliver(&oversizedFrame{gen: r.gen, req: p, err: err, size: size, limit: limit})
}

// unreadable fails at once the request that a frame Classify rejected (with
// err) was meant to answer, when the frame names one in flight: its id is
// recovered from the frame's head or tail (protocol.RecoverID), as an
// oversized frame's is. It returns the id of the request it failed, or
// false for a frame that names none (a banner, a stray print, an answer
// that came too late), which the caller skips and counts.
func (r *router) unreadable(frame []byte, err error) (int64, bool) {
	id, ok := parseID(protocol.RecoverID(frame))
	if !ok || !r.failUnreadable(id, err) {
		return 0, false
	}
	return id, true
}

// failUnreadable fails request id, if it is in flight, because its
// response could not be read (err, wrapping protocol.ErrInvalidMessage,
// says why). A call fails with an error wrapping err; the actor's own
// requests are answered with a JSON-RPC parse error carrying the same
// words, which their handlers report.
func (r *router) failUnreadable(id int64, err error) bool {
	p := r.pending.take(id)
	if p == nil {
		return false
	}
	if p.kind == reqCall {
		p.call.reply <- callReply{err: fmt.Errorf("server %q: %s: unreadable response: %w", r.server, p.call.what(), err)}
		return true
	}
	msg := protocol.Message{
		Kind:  protocol.KindResponse,
		ID:    json.RawMessage(strconv.FormatInt(id, 10)),
		Error: &protocol.Error{Code: protocol.CodeParseError, Message: "unreadable response: " + err.Error()},
	}
	r.deliver(&responseMsg{gen: r.gen, req: p, msg: msg})
	return true
}

// skip hands the actor a frame that is not JSON-RPC and answers nothing in
// flight, to be counted and logged (a prefix of it: the flow charges that
// much). It returns false if the connection is stopping.
func (r *router) skip(frame []byte, err error, stop <-chan struct{}) bool {
	bad := newBadFrame(r.gen, frame, err)
	if !r.flow.acquire(len(bad.line), stop) {
		return false
	}
	r.deliver(bad)
	return true
}

// newBadFrame keeps what the log shows of a skipped frame.
func newBadFrame(gen uint64, frame []byte, err error) *badFrame {
	if len(frame) > 200 {
		frame = frame[:200]
	}
	return &badFrame{gen: gen, line: frame, err: err}
}

func parseID(id []byte) (int64, bool) {
	if len(id) == 0 {
		return 0, false
	}
	m := protocol.Message{Kind: protocol.KindResponse, ID: id}
	return m.IntID()
}

// size is how many requests are in flight.
func (t *pendingTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
