package hosttools

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/inbox"
)

// Inbox holds host-tool calls until a person resolves them or their
// deadline denies them: the approval inbox. All methods are safe for
// concurrent use.
type Inbox struct {
	in  *inbox.Inbox[Request, Decision]
	log *slog.Logger
}

// DefaultDeadline is an Inbox's deadline when NewInbox is given none.
const DefaultDeadline = 5 * time.Minute

// MaxReason bounds the reason of a Decision Resolve is given: longer, it
// is cut, since it reaches a model.
const MaxReason = 1000

// NewInbox returns an empty inbox whose calls are denied once deadline
// (DefaultDeadline if not positive) passes. log receives a line per call
// queued, decided or left.
func NewInbox(deadline time.Duration, log *slog.Logger) *Inbox {
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	b := &Inbox{log: log}
	expired := Decision{Reason: fmt.Sprintf("no decision within %s", deadline)}
	b.in = inbox.New(inbox.Options[Request, Decision]{
		Deadline: deadline, OnDeadline: expired, OnClose: Decision{Reason: "the host is closing"},
		Left: func(e inbox.Entry[Request], why error) {
			reason := "the call was abandoned"
			switch {
			case errors.Is(why, inbox.ErrClosed):
				return
			case errors.Is(why, inbox.ErrExpired):
				reason = expired.Reason
			}
			log.Info("host tool call not approved", "approval", pending(e), "reason", reason)
		},
	})
	return b
}

// Decide is an Approver: it queues req and waits for an answer, the
// deadline (denied) or ctx. Once the inbox is closed it fails with
// actors.ErrClosed.
func (b *Inbox) Decide(ctx context.Context, req *Request) (Decision, error) {
	t, err := b.in.Open(*req)
	if err != nil {
		return Decision{}, actors.ErrClosed
	}
	b.log.Info("host tool call waits for approval", "approval", pending(t.Entry))
	return t.Wait(ctx)
}

// Resolve answers the pending call id, its reason cut to MaxReason bytes,
// and reports false when no call of that id is pending (answered,
// expired, abandoned).
func (b *Inbox) Resolve(id string, d Decision) bool {
	if len(d.Reason) > MaxReason {
		d.Reason = strings.ToValidUTF8(d.Reason[:MaxReason], "") + "…"
	}
	e, err := b.in.Resolve(id, d)
	if err != nil {
		return false
	}
	b.log.Info("host tool call decided", "approval", pending(e), "allow", d.Allow)
	return true
}

// Get returns the pending call id; false when none is (answered,
// expired, abandoned). It never blocks.
func (b *Inbox) Get(id string) (Request, bool) {
	e, ok := b.in.Get(id)
	if !ok {
		return Request{}, false
	}
	return pending(e), true
}

// Pending lists the calls waiting, oldest first, each with its ID and
// Deadline. It never blocks.
func (b *Inbox) Pending() []Request {
	es := b.in.Pending()
	out := make([]Request, len(es))
	for i, e := range es {
		out[i] = pending(e)
	}
	slices.SortFunc(out, func(a, b Request) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Changed returns a channel closed at the next change to Pending.
func (b *Inbox) Changed() <-chan struct{} { return b.in.Changed() }

// Close denies every pending call, and any queued later. Idempotent.
func (b *Inbox) Close() { b.in.Close() }

// pending is the call of e with the id and deadline the inbox gave it.
func pending(e inbox.Entry[Request]) Request {
	r := e.Req
	r.ID, r.Deadline = e.ID, e.Deadline
	return r
}
