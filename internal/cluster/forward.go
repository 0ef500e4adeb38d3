package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
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
	Err    *RemoteError    `json:"error,omitempty"`
}

// RemoteError is an error a member's handler returned, as the caller
// receives it: its message, and the kind the handler gave it (Kinded).
type RemoteError struct {
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message"`
}

func (e *RemoteError) Error() string { return e.Message }

// Kinded is an error that names its kind for the other side, so that the
// caller can map it back to one of its own sentinels.
type Kinded interface {
	error
	ErrorKind() string
}

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
	if env.Answer {
		n.answered(env)
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
	rctx, cancel := context.WithCancel(context.Background())
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
		body, err := n.cfg.Handler(rctx, env.Body)
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

// actorEventSub is a subscription to an actor system's event stream.
type actorEventSub struct {
	es  *eventstream.EventStream
	sub *eventstream.Subscription
}

func subscribe(system *actor.ActorSystem, f func(any)) *actorEventSub {
	return &actorEventSub{es: system.EventStream, sub: system.EventStream.Subscribe(func(ev interface{}) { f(ev) })}
}

func (s *actorEventSub) unsubscribe() { s.es.Unsubscribe(s.sub) }
