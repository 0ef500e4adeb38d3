package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/actor"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/eventstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// envelope is a forwarded request or its answer, as JSON in a
// wrapperspb.BytesValue: protoactor's remote carries protobuf messages,
// and a well-known type needs no generated code.
type envelope struct {
	ID     string          `json:"id"`
	Body   json.RawMessage `json:"body,omitempty"`
	Cancel bool            `json:"cancel,omitempty"` // stop the request ID
	Answer bool            `json:"answer,omitempty"` // the answer to the request ID
	Note   bool            `json:"note,omitempty"`   // a note for the caller of the request ID
	Tell   bool            `json:"tell,omitempty"`   // a one-way message for Config.OnTell
	// For names the request of the receiver's this one is asked on behalf
	// of (Caller.Ask): the receiver's Reverse answers it.
	For string       `json:"for,omitempty"`
	Err *RemoteError `json:"error,omitempty"`
}

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

// encodeEnvelope marshals e; its body must be JSON (Forward checks what
// it is given, and the handler's answer is checked here).
func encodeEnvelope(e envelope) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		b, _ = json.Marshal(envelope{ID: e.ID, Err: &RemoteError{Message: "cluster: the answer is not JSON: " + err.Error()}})
	}
	return b
}

func decodeEnvelope(b []byte) (envelope, error) {
	var e envelope
	err := json.Unmarshal(b, &e)
	return e, err
}

var protoUnmarshalOptions = proto.UnmarshalOptions{}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// nodeActor answers the requests forwarded to this member: each runs in
// its own goroutine, so a slow one holds up no other, and answers its
// sender directly; a cancel ends the one it names.
type nodeActor struct{ n *Node }

func (a *nodeActor) Receive(ctx actor.Context) {
	b, ok := ctx.Message().(*wrapperspb.BytesValue)
	if !ok {
		return
	}
	env, err := decodeEnvelope(b.Value)
	if err != nil || env.ID == "" {
		return
	}
	n := a.n
	if env.Answer || env.Note {
		n.answered(env)
		return
	}
	if env.Tell {
		if n.cfg.OnTell != nil {
			n.cfg.OnTell(env.Body)
		}
		return
	}
	if env.Cancel {
		n.mu.Lock()
		cancel := n.inbound[env.ID]
		n.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return
	}
	sender := ctx.Sender()
	if sender == nil {
		return
	}
	handler := n.cfg.Handler
	if env.For != "" {
		handler = n.reverse(env.For)
	}
	rctx, cancel := context.WithCancel(context.Background())
	rctx = member.WithCaller(rctx, &Caller{n: n, pid: sender, id: env.ID})
	n.mu.Lock()
	n.inbound[env.ID] = cancel
	n.mu.Unlock()
	system := ctx.ActorSystem()
	go func() {
		defer func() {
			n.mu.Lock()
			delete(n.inbound, env.ID)
			n.mu.Unlock()
			cancel()
		}()
		out := envelope{ID: env.ID, Answer: true}
		body, err := handler(rctx, env.Body)
		if err != nil {
			re := &RemoteError{Message: err.Error()}
			var k Kinded
			if errors.As(err, &k) {
				re.Kind = k.ErrorKind()
			}
			out.Err = re
		} else {
			out.Body = body
		}
		system.Root.Send(sender, &wrapperspb.BytesValue{Value: encodeEnvelope(out)})
	}()
}

// Caller is the member a request being handled came from, which the
// handler can tell of its progress (Note) and ask what only it can answer
// (Ask) while the request runs.
type Caller struct {
	n   *Node
	pid *actor.PID
	id  string
}

// CallerOf returns the caller of the forwarded request ctx belongs to,
// or nil.
func CallerOf(ctx context.Context) *Caller {
	c, _ := member.CallerOf(ctx).(*Caller)
	return c
}

// Addr is the caller's address.
func (c *Caller) Addr() string { return c.pid.Address }

// Note sends body (JSON) to the caller's Reverse.OnNote, in the order of
// the calls, before the answer. A note the caller has no room for is
// dropped.
func (c *Caller) Note(body []byte) {
	c.n.system.Root.Send(c.pid, &wrapperspb.BytesValue{Value: encodeEnvelope(envelope{ID: c.id, Note: true, Body: body})})
}

// Ask sends body (JSON) to the caller's Reverse.Ask and returns its
// answer; it ends with ctx, as a forwarded request does, and fails when
// the request it belongs to has ended there.
func (c *Caller) Ask(ctx context.Context, body []byte) ([]byte, error) {
	return c.n.send(ctx, c.pid.Address, body, c.id, nil)
}

// Tell sends body (JSON) to the member at addr's Config.OnTell, one way:
// in the order of the calls, lost if the member is gone.
func (n *Node) Tell(addr string, body []byte) {
	n.system.Root.Send(actor.NewPID(addr, nodeActorName), &wrapperspb.BytesValue{Value: encodeEnvelope(envelope{ID: "tell", Tell: true, Body: body})})
}

// reverse is the handler of a question asked on behalf of request id,
// forwarded from here.
func (n *Node) reverse(id string) Handler {
	n.mu.Lock()
	o, ok := n.outbound[id]
	n.mu.Unlock()
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
