// Package member is the contract between a host and its membership of a
// cluster, and nothing of how a membership is kept: the root package calls
// a Replica and implements Host, which the replica calls back; package
// cluster makes the Replica (cluster/internal/replica), over a Node
// (internal/cluster, protoactor's cluster and remote). Importing this
// package links none of that machinery.
package member

import (
	"context"
	"errors"
	"log/slog"
)

// Node is one member of a cluster, as its replica uses it. All methods are
// safe for concurrent use.
type Node interface {
	// Join makes the node a member. The hooks run only from here on.
	Join() error
	// Stop leaves the cluster: the others see this member go at once. It
	// blocks until the node's goroutines have exited (bounded in time),
	// and may be called more than once, concurrently: a later call waits
	// for the first.
	Stop()
	// Name is the cluster's.
	Name() string
	// Self is this member's address, as the others know it ("" before
	// Join).
	Self() string
	// Members are the addresses of the members, sorted; Labels each one's
	// labels, by address.
	Members() []string
	Labels() map[string][]string
	// Owner is the member name is placed on, among those labelled label
	// when it is not "" ("" while no such member is known).
	Owner(name, label string) string
	// Publish sets this member's state under key, which the others
	// receive by gossip (Hooks.OnState); Published is how many bytes it
	// has published so far, by kind of state (key up to its first "/").
	Publish(key string, state []byte)
	Published() map[string]int64
	// Forward sends body (the handler's to read) to the member at addr's
	// Hooks.Handler and returns its answer; rev answers what the handler
	// tells and asks its Caller meanwhile.
	Forward(ctx context.Context, addr string, body []byte, rev *Reverse) ([]byte, error)
	// Tell sends body (JSON) to the member at addr's Hooks.OnTell, one
	// way, in order; lost if the member is gone.
	Tell(addr string, body []byte)
}

// Hooks are how a node reaches its replica.
type Hooks struct {
	// Handler answers the requests forwarded to this member.
	Handler Handler
	// OnPlacement is called, from one goroutine, after every change of the
	// membership; Owner answers by it.
	OnPlacement func()
	// OnState is called, from the same goroutine, when a member's
	// published state under key changes (key "" and state nil: it left).
	OnState func(member, key string, state []byte)
	// OnTell receives what another member Tells this one, in order; it
	// must not block.
	OnTell func(body []byte)
	// OnLost is called, from its own goroutine, when the membership no
	// longer holds this member: it should stop what it runs and join
	// again as a new Node.
	OnLost func()
	Logger *slog.Logger
}

// Handler answers a forwarded request: body is what the caller sent, the
// answer what it receives, both JSON. An error crosses as its message and
// kind (Kinded).
type Handler func(ctx context.Context, body []byte) ([]byte, error)

// Reverse is what a forwarded request's caller answers while it waits:
// the handler's notes and questions (Caller). Either may be nil.
type Reverse struct {
	// OnNote receives each note on the goroutine that called Forward.
	OnNote func(body []byte)
	// Ask answers a question; it runs in its own goroutine.
	Ask Handler
}

// Caller is the member a request being handled came from.
type Caller interface {
	// Addr is the caller's address.
	Addr() string
	// Note sends body (JSON) to the caller's Reverse.OnNote, in order,
	// before the answer; dropped when the caller has no room for it.
	Note(body []byte)
	// Ask sends body (JSON) to the caller's Reverse.Ask and returns its
	// answer; it fails when the request it belongs to has ended there.
	Ask(ctx context.Context, body []byte) ([]byte, error)
}

type callerKey struct{}

// WithCaller is ctx carrying the caller of the forwarded request it
// belongs to.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the caller of the forwarded request ctx belongs to, or
// nil.
func CallerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// RemoteError is an error a member's handler returned, as the caller
// receives it: its message, and the kind the handler gave it (Kinded).
type RemoteError struct {
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message"`
}

func (e *RemoteError) Error() string     { return e.Message }
func (e *RemoteError) ErrorKind() string { return e.Kind }

// Kinded is an error that names its kind for the other side, so that the
// caller can map it back to one of its own sentinels.
type Kinded interface {
	error
	ErrorKind() string
}

// KindUnanswered is the kind of a question whose request had ended when
// it arrived, or whose caller answers none.
const KindUnanswered = "unanswered"

// ErrUnreachable is a forwarded request whose member did not answer: it
// left, or the network between is down. Whether the request ran there is
// not known.
var ErrUnreachable = errors.New("cluster member unreachable")
