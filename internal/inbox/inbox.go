package inbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/broadcast"
)

// Options configures an Inbox; they are copied by New. The zero value is
// an inbox without deadlines whose close answer is the zero Ans.
type Options[Req, Ans any] struct {
	// Deadline is how long an entry waits before the inbox answers it
	// OnDeadline. Zero or less: entries wait until answered otherwise.
	Deadline time.Duration
	// OnDeadline is the answer an entry gets when its deadline passes.
	OnDeadline Ans
	// OnClose is the answer Close gives every pending entry, and Open
	// gives on a closed inbox.
	OnClose Ans
	// Now returns the current time, for Entry.Created and Deadline. Nil
	// means time.Now. The deadline timers run on the runtime clock
	// regardless; Now matters to Expire.
	Now func() time.Time
	// Left, when set, is called once for every entry that leaves the inbox
	// other than by Resolve, after its answer is delivered and without the
	// inbox's lock: why is ErrExpired (its deadline or Expire), ErrClosed
	// (Close) or the error of the context its Wait gave up on. It runs on
	// the goroutine that made the change (a deadline timer's, Expire's,
	// Close's or the waiter's); Close waits for the timers' calls, so Left
	// must not block for long.
	Left func(e Entry[Req], why error)
}

// Entry is one request in the inbox.
type Entry[Req any] struct {
	// ID names the entry: 16 random bytes in hex, so an id cannot be
	// guessed from another.
	ID       string
	Req      Req
	Created  time.Time
	Deadline time.Time // zero without Options.Deadline
}

// Inbox holds requests until each is answered exactly once: by Resolve,
// its deadline (Options.OnDeadline), Expire, its waiter's context ending,
// or Close (Options.OnClose). Requests are kept and handed out as shallow
// copies: a Req that holds slices or maps must not be changed after Open.
//
// All methods are safe for concurrent use. None blocks except Ask,
// Ticket.Wait and Close, which waits for running deadline timers.
type Inbox[Req, Ans any] struct {
	opts    Options[Req, Ans]
	timers  sync.WaitGroup // one per armed deadline timer
	changed broadcast.Signal

	mu      sync.Mutex
	pending map[string]*entry[Req, Ans]
	seq     uint64 // Open order, since Created may tie
	closed  bool
}

type entry[Req, Ans any] struct {
	Entry[Req]
	seq   uint64
	reply chan Ans // buffered: the one answer
	timer *time.Timer
}

// New returns an empty inbox.
func New[Req, Ans any](opts Options[Req, Ans]) *Inbox[Req, Ans] {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Inbox[Req, Ans]{opts: opts, pending: map[string]*entry[Req, Ans]{}}
}

// Ticket is the asker's side of one entry.
type Ticket[Req, Ans any] struct {
	Entry[Req]
	// C receives the entry's one answer. It is buffered, so the inbox
	// never waits for its reader, and it is never closed. Read it, or call
	// Wait, not both.
	C <-chan Ans

	in *Inbox[Req, Ans]
	e  *entry[Req, Ans] // nil when Open found the inbox closed
}

// Open adds req to the inbox, gives it an id, Created and Deadline, and
// returns the ticket that receives its answer. On a closed inbox the error
// is ErrClosed and the ticket's C already holds Options.OnClose.
func (in *Inbox[Req, Ans]) Open(req Req) (*Ticket[Req, Ans], error) {
	reply := make(chan Ans, 1)
	t := &Ticket[Req, Ans]{Entry: Entry[Req]{ID: newID(), Req: req}, C: reply, in: in}

	in.mu.Lock()
	defer in.mu.Unlock()
	t.Created = in.opts.Now()
	if in.opts.Deadline > 0 {
		t.Deadline = t.Created.Add(in.opts.Deadline)
	}
	if in.closed {
		reply <- in.opts.OnClose
		return t, ErrClosed
	}
	e := &entry[Req, Ans]{Entry: t.Entry, seq: in.seq, reply: reply}
	in.seq++
	if in.opts.Deadline > 0 {
		in.timers.Add(1)
		// The callback needs in.mu, held here, so e.timer is set before
		// it runs.
		e.timer = time.AfterFunc(in.opts.Deadline, func() {
			defer in.timers.Done()
			in.expire(e)
		})
	}
	in.pending[e.ID] = e
	t.e = e
	in.changed.Notify()
	return t, nil
}

// Wait blocks until the entry is answered, and returns the answer with a
// nil error. If ctx ends first, the entry leaves the inbox unanswered
// (Options.Left gets ctx's error) and Wait returns the zero Ans and ctx's
// error; an answer that arrives as ctx ends stands. Call Wait once.
func (t *Ticket[Req, Ans]) Wait(ctx context.Context) (Ans, error) {
	select {
	case ans := <-t.C:
		return ans, nil
	case <-ctx.Done():
	}
	if !t.in.withdraw(t.e) {
		return <-t.C, nil
	}
	t.in.left(t.Entry, ctx.Err())
	var zero Ans
	return zero, ctx.Err()
}

// Ask opens req and waits for its answer: Open, then Ticket.Wait. On a
// closed inbox it returns Options.OnClose and ErrClosed at once.
func (in *Inbox[Req, Ans]) Ask(ctx context.Context, req Req) (Ans, error) {
	t, err := in.Open(req)
	if err != nil {
		return <-t.C, err
	}
	return t.Wait(ctx)
}

// Resolve answers the pending entry id with ans and returns the entry. An
// id that is not pending is ErrUnknown.
func (in *Inbox[Req, Ans]) Resolve(id string, ans Ans) (Entry[Req], error) {
	in.mu.Lock()
	e, ok := in.pending[id]
	if ok {
		in.removeLocked(e)
	}
	in.mu.Unlock()
	if !ok {
		return Entry[Req]{}, fmt.Errorf("inbox: resolve %q: %w", id, ErrUnknown)
	}
	e.reply <- ans
	return e.Entry, nil
}

// Pending returns the pending entries, in the order they were opened.
func (in *Inbox[Req, Ans]) Pending() []Entry[Req] {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]Entry[Req], 0, len(in.pending))
	for _, e := range in.sortedLocked() {
		out = append(out, e.Entry)
	}
	return out
}

// Get returns the pending entry with that id.
func (in *Inbox[Req, Ans]) Get(id string) (Entry[Req], bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	e, ok := in.pending[id]
	if !ok {
		return Entry[Req]{}, false
	}
	return e.Entry, true
}

// Changed returns a channel closed at the next change to the pending set
// (an Open, or an entry leaving for any reason). Take it before reading
// Pending, and again once it fires.
func (in *Inbox[Req, Ans]) Changed() <-chan struct{} { return in.changed.C() }

// Expire answers Options.OnDeadline to every pending entry whose Deadline
// is set and not after now, and returns how many. The deadline timers do
// this on their own; Expire is for an owner that keeps its own clock.
func (in *Inbox[Req, Ans]) Expire(now time.Time) int {
	in.mu.Lock()
	var due []*entry[Req, Ans]
	for _, e := range in.sortedLocked() {
		if !e.Deadline.IsZero() && !e.Deadline.After(now) {
			in.removeLocked(e)
			due = append(due, e)
		}
	}
	in.mu.Unlock()
	in.answer(due, in.opts.OnDeadline, ErrExpired)
	return len(due)
}

// Close answers Options.OnClose to every pending entry, and to any opened
// later, and returns once no deadline timer is running. It may be called
// more than once.
func (in *Inbox[Req, Ans]) Close() {
	in.mu.Lock()
	in.closed = true
	all := in.sortedLocked()
	for _, e := range all {
		in.removeLocked(e)
	}
	in.mu.Unlock()
	in.answer(all, in.opts.OnClose, ErrClosed)
	in.timers.Wait()
}

// expire is e's deadline timer.
func (in *Inbox[Req, Ans]) expire(e *entry[Req, Ans]) {
	if in.withdraw(e) {
		in.answer([]*entry[Req, Ans]{e}, in.opts.OnDeadline, ErrExpired)
	}
}

// withdraw takes e out of the inbox if it is still pending, and reports
// whether it was. Whoever takes an entry out answers it.
func (in *Inbox[Req, Ans]) withdraw(e *entry[Req, Ans]) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if e == nil || in.pending[e.ID] != e {
		return false
	}
	in.removeLocked(e)
	return true
}

func (in *Inbox[Req, Ans]) removeLocked(e *entry[Req, Ans]) {
	delete(in.pending, e.ID)
	if e.timer != nil && e.timer.Stop() {
		in.timers.Done()
	}
	in.changed.Notify()
}

// answer delivers ans to entries already taken out, outside in.mu: each
// channel has room for it, and Left may log.
func (in *Inbox[Req, Ans]) answer(es []*entry[Req, Ans], ans Ans, why error) {
	for _, e := range es {
		e.reply <- ans
		in.left(e.Entry, why)
	}
}

func (in *Inbox[Req, Ans]) left(e Entry[Req], why error) {
	if in.opts.Left != nil {
		in.opts.Left(e, why)
	}
}

func (in *Inbox[Req, Ans]) sortedLocked() []*entry[Req, Ans] {
	es := make([]*entry[Req, Ans], 0, len(in.pending))
	for _, e := range in.pending {
		es = append(es, e)
	}
	slices.SortFunc(es, func(x, y *entry[Req, Ans]) int { return cmp.Compare(x.seq, y.seq) })
	return es
}

// newID returns 16 random bytes in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails; it crashes the program instead
	return hex.EncodeToString(b[:])
}
