package elicit

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/broadcast"
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
	deadline time.Duration
	now      func() time.Time
	log      *slog.Logger
	timers   sync.WaitGroup // one per armed deadline timer

	mu      sync.Mutex
	pending map[string]*pending
	seq     uint64
	changed broadcast.Signal
	closed  bool
}

type pending struct {
	req   Request
	seq   uint64 // Open order, since Created may tie
	reply chan Response
	timer *time.Timer
}

// NewBroker returns an empty broker.
func NewBroker(opts BrokerOptions) *Broker {
	b := &Broker{
		deadline: opts.Deadline,
		now:      opts.Now,
		log:      opts.Logger,
		pending:  make(map[string]*pending),
	}
	if b.deadline <= 0 {
		b.deadline = DefaultDeadline
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b
}

// Open registers req as pending and returns its id and a channel that
// receives its one Response; the channel is buffered, so the broker never
// waits for the reader, and it is never closed. Open sets req.ID, Created
// and Deadline; the broker keeps its own copy, so later changes to req do
// not reach it. On a closed broker the channel already holds a cancel.
// Open panics if req is nil.
func (b *Broker) Open(req *Request) (id string, wait <-chan Response) {
	if req == nil {
		panic("elicit: Broker.Open of a nil Request")
	}
	id = newID()
	reply := make(chan Response, 1)

	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	req.ID, req.Created, req.Deadline = id, now, now.Add(b.deadline)
	if b.closed {
		reply <- Response{Action: ActionCancel}
		return id, reply
	}
	p := &pending{req: req.clone(), seq: b.seq, reply: reply}
	b.seq++
	b.timers.Add(1)
	// The callback needs b.mu, held here, so p.timer is set before it runs.
	p.timer = time.AfterFunc(b.deadline, func() {
		defer b.timers.Done()
		b.expire(id, p)
	})
	b.pending[id] = p
	b.notifyLocked()
	return id, reply
}

// Handle is a Handler backed by the broker: it opens req and blocks until it
// is answered, or until ctx ends, when it cancels it. The error is always nil.
func (b *Broker) Handle(ctx context.Context, req *Request) (Response, error) {
	id, wait := b.Open(req)
	select {
	case resp := <-wait:
		return resp, nil
	case <-ctx.Done():
		// A Resolve may win the race; either way exactly one answer arrives.
		_ = b.Cancel(id, "context ended: "+ctx.Err().Error())
		return <-wait, nil
	}
}

// List returns copies of the pending elicitations, oldest first.
func (b *Broker) List() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps := b.sortedLocked()
	out := make([]Request, len(ps))
	for i, p := range ps {
		out[i] = p.req.clone()
	}
	return out
}

// Get returns a copy of the pending elicitation with that id.
func (b *Broker) Get(id string) (Request, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.pending[id]
	if !ok {
		return Request{}, false
	}
	return p.req.clone(), true
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
	b.mu.Lock()
	p, ok := b.pending[id]
	if !ok {
		b.mu.Unlock()
		return fmt.Errorf("elicit: resolve %s: %w", id, ErrUnknown)
	}
	resp := Response{Action: action}
	if action == ActionAccept {
		completed, err := p.req.Complete(content)
		if err != nil {
			b.mu.Unlock()
			return fmt.Errorf("elicit: resolve %s: %w", id, err)
		}
		resp.Content = completed
	}
	b.removeLocked(id, p)
	b.mu.Unlock()
	b.deliver(p, resp, "")
	return nil
}

// Cancel answers the pending elicitation id with cancel; reason goes to the
// log only. An id that is not pending gives ErrUnknown.
func (b *Broker) Cancel(id, reason string) error {
	b.mu.Lock()
	p, ok := b.pending[id]
	if !ok {
		b.mu.Unlock()
		return fmt.Errorf("elicit: cancel %s: %w", id, ErrUnknown)
	}
	b.removeLocked(id, p)
	b.mu.Unlock()
	b.deliver(p, Response{Action: ActionCancel}, reason)
	return nil
}

// Complete handles notifications/elicitation/complete: it answers accept to
// the pending url-mode elicitation that server opened with elicitationID,
// since the server reports the interaction done, and reports whether there
// was one. Unknown and already answered ids are ignored, as the spec
// requires.
func (b *Broker) Complete(elicitationID, server string) bool {
	b.mu.Lock()
	var match *pending
	for _, p := range b.pending {
		if p.req.Mode == ModeURL && p.req.Server == server && p.req.ElicitationID == elicitationID {
			match = p
			break
		}
	}
	if match == nil {
		b.mu.Unlock()
		return false
	}
	b.removeLocked(match.req.ID, match)
	b.mu.Unlock()
	b.deliver(match, Response{Action: ActionAccept}, "")
	return true
}

// Expire cancels every pending elicitation whose Deadline is not after now
// and returns how many. The deadline timers do this on their own; Expire is
// for a host that keeps its own clock.
func (b *Broker) Expire(now time.Time) int {
	b.mu.Lock()
	var due []*pending
	for _, p := range b.sortedLocked() {
		if !p.req.Deadline.After(now) {
			b.removeLocked(p.req.ID, p)
			due = append(due, p)
		}
	}
	b.mu.Unlock()
	for _, p := range due {
		b.deliver(p, Response{Action: ActionCancel}, "deadline passed")
	}
	return len(due)
}

// Changed returns a channel that is closed at the next change to the
// pending set (an Open, or an answer of any kind). Call it again after it
// fires for the next change; read the set with List.
func (b *Broker) Changed() <-chan struct{} { return b.changed.C() }

// Close cancels every pending elicitation, and any opened later, and returns
// once no deadline timer is running. It may be called more than once.
func (b *Broker) Close() {
	b.mu.Lock()
	b.closed = true
	all := b.sortedLocked()
	for _, p := range all {
		b.removeLocked(p.req.ID, p)
	}
	b.mu.Unlock()
	for _, p := range all {
		b.deliver(p, Response{Action: ActionCancel}, "broker closed")
	}
	b.timers.Wait()
}

// expire is the deadline timer's callback for p.
func (b *Broker) expire(id string, p *pending) {
	b.mu.Lock()
	if b.pending[id] != p {
		b.mu.Unlock()
		return
	}
	b.removeLocked(id, p)
	b.mu.Unlock()
	b.deliver(p, Response{Action: ActionCancel}, "deadline passed")
}

// removeLocked takes p out of the pending set. Whoever removes it delivers
// its one answer.
func (b *Broker) removeLocked(id string, p *pending) {
	delete(b.pending, id)
	if p.timer.Stop() {
		b.timers.Done()
	}
	b.notifyLocked()
}

// deliver sends the answer, outside b.mu: the channel has room for it, and
// the logger may block.
func (b *Broker) deliver(p *pending, resp Response, reason string) {
	p.reply <- resp
	attrs := []slog.Attr{
		slog.String("id", p.req.ID),
		slog.String("server", p.req.Server),
		slog.Any("response", resp),
	}
	if reason != "" {
		attrs = append(attrs, slog.String("reason", reason))
	}
	b.log.LogAttrs(context.Background(), slog.LevelInfo, "elicitation answered", attrs...)
}

func (b *Broker) notifyLocked() { b.changed.Notify() }

func (b *Broker) sortedLocked() []*pending {
	ps := make([]*pending, 0, len(b.pending))
	for _, p := range b.pending {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(x, y *pending) int { return cmp.Compare(x.seq, y.seq) })
	return ps
}

// newID returns 16 random bytes in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails; it crashes the program instead
	return hex.EncodeToString(b[:])
}
