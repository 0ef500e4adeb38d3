package elicit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/inbox"
)

// DefaultDeadline is how long a person has to answer when BrokerOptions sets
// no Deadline.
const DefaultDeadline = 5 * time.Minute

// BrokerOptions configures a Broker. The zero value means the defaults.
type BrokerOptions struct {
	// Deadline is how long an elicitation stays pending before the broker
	// answers cancel. Zero or less means DefaultDeadline.
	Deadline time.Duration
	// Now returns the current time, for Created and Deadline. Nil means
	// time.Now. The deadline timer runs on the runtime clock regardless; Now
	// matters to Expire.
	Now func() time.Time
	// Logger gets one record per answered elicitation: its id, server, the
	// action, the names of the fields answered (never their values) and, for
	// a cancel, why. Nil discards.
	Logger *slog.Logger
}

// Broker is the built-in inbox of pending elicitations, for a host without
// its own Handler: the protocol side Opens a request and waits, a UI Lists
// the pending ones and Resolves them as the person answers. Each request is
// answered exactly once, by Resolve, Cancel, Complete, its deadline, Expire
// or Close.
//
// All methods are safe for concurrent use; none blocks except Handle and
// Close, which waits for running deadline timers.
type Broker struct {
	in  *inbox.Inbox[Request, Response]
	log *slog.Logger
}

// NewBroker returns an empty broker.
func NewBroker(opts BrokerOptions) *Broker {
	b := &Broker{log: opts.Logger}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if opts.Deadline <= 0 {
		opts.Deadline = DefaultDeadline
	}
	cancel := Response{Action: ActionCancel}
	b.in = inbox.New(inbox.Options[Request, Response]{
		Deadline: opts.Deadline, Now: opts.Now, OnDeadline: cancel, OnClose: cancel,
		Left: func(e inbox.Entry[Request], why error) {
			reason := "context ended: " + why.Error()
			switch {
			case errors.Is(why, inbox.ErrExpired):
				reason = "deadline passed"
			case errors.Is(why, inbox.ErrClosed):
				reason = "broker closed"
			}
			b.logAnswer(e, cancel, reason)
		},
	})
	return b
}

// Open registers req as pending and returns its id and a channel that
// receives its one Response; the channel is buffered, so the broker never
// waits for the reader, and it is never closed. Open sets req.ID, Created
// and Deadline; the broker keeps its own copy, so later changes to req do
// not reach it. On a closed broker the channel already holds a cancel.
// Open panics if req is nil.
func (b *Broker) Open(req *Request) (id string, wait <-chan Response) {
	t := b.open(req)
	return t.ID, t.C
}

func (b *Broker) open(req *Request) *inbox.Ticket[Request, Response] {
	if req == nil {
		panic("elicit: Broker.Open of a nil Request")
	}
	t, _ := b.in.Open(req.clone()) // closed: t.C holds the cancel
	req.ID, req.Created, req.Deadline = t.ID, t.Created, t.Deadline
	return t
}

// Handle is a Handler backed by the broker: it opens req and blocks until it
// is answered, or until ctx ends, when it cancels it. The error is always nil.
func (b *Broker) Handle(ctx context.Context, req *Request) (Response, error) {
	resp, err := b.open(req).Wait(ctx)
	if err != nil {
		return Response{Action: ActionCancel}, nil
	}
	return resp, nil
}

// List returns copies of the pending elicitations, oldest first.
func (b *Broker) List() []Request {
	es := b.in.Pending()
	out := make([]Request, len(es))
	for i, e := range es {
		out[i] = request(e)
	}
	return out
}

// Get returns a copy of the pending elicitation with that id.
func (b *Broker) Get(id string) (Request, bool) {
	e, ok := b.in.Get(id)
	if !ok {
		return Request{}, false
	}
	return request(e), true
}

// Resolve answers the pending elicitation id with the person's action.
//
// An accept in form mode runs Request.Complete on content; if that fails,
// the elicitation stays pending, so the person can correct the form, and the
// error (wrapping an *InvalidError) is returned. An accept in url mode needs
// empty content. For decline and cancel, content is ignored.
//
// An id that is not pending gives ErrUnknown; an action that is not accept,
// decline or cancel gives ErrInvalidAction.
func (b *Broker) Resolve(id string, action Action, content map[string]any) error {
	if !action.Valid() {
		return fmt.Errorf("elicit: resolve %s: %w", id, ErrInvalidAction)
	}
	e, ok := b.in.Get(id)
	if !ok {
		return fmt.Errorf("elicit: resolve %s: %w", id, ErrUnknown)
	}
	resp := Response{Action: action}
	if action == ActionAccept {
		completed, err := e.Req.Complete(content)
		if err != nil {
			return fmt.Errorf("elicit: resolve %s: %w", id, err)
		}
		resp.Content = completed
	}
	return b.answer("resolve", id, resp, "")
}

// Cancel answers the pending elicitation id with cancel; reason goes to the
// log only. An id that is not pending gives ErrUnknown.
func (b *Broker) Cancel(id, reason string) error {
	return b.answer("cancel", id, Response{Action: ActionCancel}, reason)
}

// Complete handles notifications/elicitation/complete: it answers accept to
// the pending url-mode elicitation that server opened with elicitationID,
// since the server reports the interaction done, and reports whether there
// was one. Unknown and already answered ids are ignored, as the spec
// requires.
func (b *Broker) Complete(elicitationID, server string) bool {
	for _, e := range b.in.Pending() {
		if e.Req.Mode == ModeURL && e.Req.Server == server && e.Req.ElicitationID == elicitationID {
			return b.answer("complete", e.ID, Response{Action: ActionAccept}, "") == nil
		}
	}
	return false
}

// Expire cancels every pending elicitation whose Deadline is not after now
// and returns how many. The deadline timers do this on their own; Expire is
// for a host that keeps its own clock.
func (b *Broker) Expire(now time.Time) int { return b.in.Expire(now) }

// Changed returns a channel that is closed at the next change to the
// pending set (an Open, or an answer of any kind). Call it again after it
// fires for the next change; read the set with List.
func (b *Broker) Changed() <-chan struct{} { return b.in.Changed() }

// Close cancels every pending elicitation, and any opened later, and returns
// once no deadline timer is running. It may be called more than once.
func (b *Broker) Close() { b.in.Close() }

// answer delivers resp to the pending elicitation id, for op.
func (b *Broker) answer(op, id string, resp Response, reason string) error {
	e, err := b.in.Resolve(id, resp)
	if err != nil {
		return fmt.Errorf("elicit: %s %s: %w", op, id, ErrUnknown)
	}
	b.logAnswer(e, resp, reason)
	return nil
}

func (b *Broker) logAnswer(e inbox.Entry[Request], resp Response, reason string) {
	attrs := []slog.Attr{
		slog.String("id", e.ID),
		slog.String("server", e.Req.Server),
		slog.Any("response", resp),
	}
	if reason != "" {
		attrs = append(attrs, slog.String("reason", reason))
	}
	b.log.LogAttrs(context.Background(), slog.LevelInfo, "elicitation answered", attrs...)
}

// request is the pending elicitation e, as the broker's callers see it.
func request(e inbox.Entry[Request]) Request {
	r := e.Req.clone()
	r.ID, r.Created, r.Deadline = e.ID, e.Created, e.Deadline
	return r
}
