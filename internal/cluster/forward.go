package cluster

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/actor"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/eventstream"
)

// The types a host and a node share live in internal/member, which links
// none of this package's machinery.
type (
	RemoteError = member.RemoteError
	Kinded      = member.Kinded
	Reverse     = member.Reverse
	Handler     = member.Handler
)

// KindUnanswered is the kind of a question whose request had ended when
// it arrived, or whose caller answers none.
const KindUnanswered = member.KindUnanswered

// ErrUnreachable is a forwarded request whose member did not answer.
var ErrUnreachable = member.ErrUnreachable

// receive handles a frame from the other member of l, on l's reader:
// answers, notes, cancels and tells at once, in order; each request in
// its own goroutine, so a slow one holds up no other, answered on l.
func (n *Node) receive(l *link, f frame) {
	switch f.kind {
	case frameAnswer, frameNote:
		n.answered(l, f)
		return
	case frameTell:
		if n.cfg.OnTell != nil {
			n.cfg.OnTell(f.body)
		}
		return
	case frameCancel:
		l.mu.Lock()
		cancel := l.inbound[f.id]
		l.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return
	case frameRequest:
	default:
		return
	}
	handler := n.cfg.Handler
	if f.forID != 0 {
		handler = n.reverse(l, f.forID)
	}
	rctx, cancel := context.WithCancel(context.Background())
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		cancel()
		return
	}
	l.inbound[f.id] = cancel
	l.mu.Unlock()
	rctx = member.WithCaller(rctx, &Caller{n: n, l: l, id: f.id})
	n.handle(func() {
		defer func() {
			l.mu.Lock()
			delete(l.inbound, f.id)
			l.mu.Unlock()
			cancel()
		}()
		out := frame{kind: frameAnswer, id: f.id}
		body, err := handler(rctx, f.body)
		switch {
		case err != nil:
			re := &RemoteError{Message: err.Error()}
			var k Kinded
			if errors.As(err, &k) {
				re.Kind = k.ErrorKind()
			}
			out.err = re
		case !json.Valid(body):
			out.err = &RemoteError{Message: "cluster: the answer is not JSON"}
		default:
			out.body = body
		}
		if n.leaving() {
			// Cancelled as this member leaves: the caller learns that it
			// left, not that its request was cancelled.
			return
		}
		_ = l.write(&out)
	})
}

// idleHandlers bounds the goroutines that wait for another request once
// theirs is answered.
const idleHandlers = 32

// handle runs a request's handler in a goroutine of its own: one that
// answered a request before and waits for the next, else a new one. A
// request never waits for another. A new goroutine's stack grows several
// times while it runs a call (copied each time); one kept from a request
// before has grown already.
func (n *Node) handle(run func()) {
	select {
	case n.handoff <- run:
	default:
		n.wg.Add(1)
		go n.handler(run)
	}
}

// handler runs run, then the requests handed to it while it waits, until
// enough others wait or the member stops.
func (n *Node) handler(run func()) {
	defer n.wg.Done()
	for {
		run()
		if n.idle.Add(1) > idleHandlers {
			n.idle.Add(-1)
			return
		}
		select {
		case run = <-n.handoff:
			n.idle.Add(-1)
		case <-n.done:
			n.idle.Add(-1)
			return
		}
	}
}

// Caller is the member a request being handled came from, which the
// handler can tell of its progress (Note) and ask what only it can answer
// (Ask) while the request runs.
type Caller struct {
	n  *Node
	l  *link // the link the request came on, and its answer goes back on
	id uint64
}

// CallerOf returns the caller of the forwarded request ctx belongs to,
// or nil.
func CallerOf(ctx context.Context) *Caller {
	c, _ := member.CallerOf(ctx).(*Caller)
	return c
}

// Addr is the caller's address.
func (c *Caller) Addr() string { return c.l.addr }

// Note sends body (JSON) to the caller's Reverse.OnNote, in the order of
// the calls, before the answer. A note the caller has no room for is
// dropped.
func (c *Caller) Note(body []byte) {
	_ = c.l.write(&frame{kind: frameNote, id: c.id, body: body})
}

// Ask sends body (JSON) to the caller's Reverse.Ask and returns its
// answer; it ends with ctx, as a forwarded request does, and fails when
// the request it belongs to has ended there.
func (c *Caller) Ask(ctx context.Context, body []byte) ([]byte, error) {
	if !json.Valid(body) {
		return nil, errors.New("cluster: a forwarded body must be JSON")
	}
	return c.n.send(ctx, c.l, body, c.id, nil)
}

// Tell sends body (JSON) to the member at addr's Config.OnTell, one way:
// in the order of the calls, lost if the member is gone. It does not
// block: while the link to addr opens, the tell waits in it.
func (n *Node) Tell(addr string, body []byte) {
	n.lmu.Lock()
	l := n.links[addr]
	if l == nil {
		d, err := n.dialLocked(addr)
		if err == nil {
			d.pending = append(d.pending, body)
		}
		n.lmu.Unlock()
		return
	}
	n.lmu.Unlock()
	_ = l.write(&frame{kind: frameTell, body: body})
}

// reverse is the handler of a question asked on behalf of request id,
// forwarded from here over l (a question from any other member finds
// none).
func (n *Node) reverse(l *link, id uint64) Handler {
	n.omu.Lock()
	o, ok := n.outbound[id]
	n.omu.Unlock()
	ok = ok && o.link == l
	msg := "cluster: the request this question belongs to has ended"
	if ok {
		if o.rev != nil && o.rev.Ask != nil {
			return o.rev.Ask
		}
		msg = "cluster: the caller of this request answers no questions"
	}
	return func(context.Context, []byte) ([]byte, error) {
		return nil, &RemoteError{Kind: KindUnanswered, Message: msg}
	}
}

// actorEventSub is a subscription to an actor system's event stream.
type actorEventSub struct {
	es  *eventstream.EventStream
	sub *eventstream.Subscription
}

func subscribe(system *actor.ActorSystem, f func(any)) *actorEventSub {
	return &actorEventSub{es: system.EventStream, sub: system.EventStream.Subscribe(func(ev interface{}) { f(ev) })}
}

func (s *actorEventSub) unsubscribe() { s.es.Unsubscribe(s.sub) }
