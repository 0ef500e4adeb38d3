package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// The read side of a stdio connection: one FrameReader over the child's
// stdout, read by whoever holds the read token. The reader goroutine holds
// it by default. A caller that is the only one waiting, or the first in
// line while few wait, takes it and reads the pipe on its own goroutine
// until its response comes (it leads), routing every frame on the way as
// the reader goroutine would; then it hands the token to the next caller in
// line, or back. Waking a caller from the reader goroutine costs more than
// a fast server's whole round trip; a caller blocked in its own Read is
// woken by the poller directly, as a synchronous client is.
//
// The reader goroutine, blocked in Read, is taken out of it with a read
// deadline in the past (the pipe is pollable): it sees the deadline error,
// finds a caller in line and hands the token over, while the server works
// on the request. The FrameReader survives deadline errors without losing
// a byte, so the token may change hands in the middle of a line.
//
// When a leader gets its answer and no other request waits for one, the
// token stays free for leadGrace before the reader goroutine takes it
// back: a caller that calls again within it takes the token without any
// hand-over. Waking the reader goroutine at every answer made an idle
// processor spin up beside the server's and cost more than the hand-over
// it replaced.

// leadMaxPending is how many requests may be in flight on the connection,
// the caller's own included, for a caller to lead. With more, the reader
// goroutine reads for everyone: a response wakes its caller either way, and
// a busy reader goroutine reads many frames per Read without hand-overs.
const leadMaxPending = 2

// leadGrace is how long the token stays free after a leader's answer when
// no other request waits for one. Server-initiated messages arriving then
// wait at most that long; no response to a request sent on the fast path
// ever waits for it.
const leadGrace = time.Millisecond

// leadDeadlineSlack is how much earlier than its own deadline a leader may
// find the read deadline a previous leader set, and keep it.
const leadDeadlineSlack = time.Second

// pastDeadline, set as a read deadline, ends a blocked Read at once.
var pastDeadline = time.Unix(1, 0)

// noWait, as flow.acquire's stop, makes it take credit only if there is
// some now.
var noWait = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// stdoutPipe is the child's stdout as the read side needs it: an *os.File
// pipe, whose Read a deadline interrupts.
type stdoutPipe interface {
	io.Reader
	SetReadDeadline(t time.Time) error
}

// stdoutReader owns the read token of one stdio connection. Its state is
// guarded by mu; the FrameReader belongs to whoever holds the token.
type stdoutReader struct {
	gen    uint64
	src    stdoutPipe
	fr     *protocol.FrameReader
	router *router
	stop   <-chan struct{} // the connection is closing

	mu sync.Mutex
	// leader is the caller that holds the token; nil when the reader
	// goroutine does (running) or the token is free: a leader has handed
	// it back and the reader goroutine has not taken it yet.
	leader  *callMsg
	running bool
	free    atomic.Bool // leader == nil && !running && carry == nil, for enqueue's quick look
	// next is the caller first in line, the only one that waits on grant.
	// It stays set until that caller takes the token (lead) or leaves.
	next *callMsg
	// carry is what a leader read but could not hand on without waiting
	// for flow credit: the reader goroutine routes it first, before any
	// later frame.
	carry *carried
	// takeBack tells the reader goroutine to take the token back once no
	// caller holds it: carry waits, a request waits for its answer, the
	// grace is over, or the connection ends.
	takeBack bool
	deadline time.Time // the read deadline set on src; zero: none
	ended    bool      // stdout ended or failed and readerDone was sent: no one reads any more
	closing  bool      // the connection is closing: no one leads any more
	idle     chan struct{}
	grant    chan struct{} // cap 1: the token, for next
	wake     chan struct{} // cap 1: the token may be free for the reader goroutine
	// grace fires when the reader goroutine may take a free token back:
	// leadGrace after freeAt, the last time a leader left it free. It is
	// armed at most once per leadGrace, not at every answer: moving a
	// timer earlier than the poller's sleep wakes the thread sleeping in
	// it, a wake-up on the server's processor at every call.
	grace      *time.Timer
	graceArmed bool
	freeAt     time.Time
}

// carried is an inbound message waiting for flow credit, and its charge.
type carried struct {
	msg  any // *inboundMsg or *badFrame
	size int
}

// endlessFactor and endlessMin say when a line is endless output: once it
// has run past endlessFactor frame limits, and at least endlessMin bytes,
// with no newline. A line a little over the limit is rejected and the
// server goes on (its call fails); one that never ends would be read and
// discarded for ever, at the pipe's full speed, costing the host two
// busy processors. Past the bound the reader stops and the server is
// restarted. 256 MiB goes by in well under a second on a pipe.
const (
	endlessFactor = 16
	endlessMin    = 256 << 20
)

// endlessAfter is how long a line may run with no newline, for a frame
// limit of maxFrame bytes.
func endlessAfter(maxFrame int) int64 {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return max(endlessFactor*int64(maxFrame), endlessMin)
}

func newStdoutReader(gen uint64, src stdoutPipe, maxFrame int, r *router, stop <-chan struct{}) *stdoutReader {
	grace := time.NewTimer(leadGrace)
	grace.Stop()
	fr := protocol.NewFrameReader(src, maxFrame)
	fr.SetDiscardLimit(endlessAfter(maxFrame))
	return &stdoutReader{
		gen:     gen,
		src:     src,
		fr:      fr,
		router:  r,
		stop:    stop,
		running: true,
		grant:   make(chan struct{}, 1),
		wake:    make(chan struct{}, 1),
		grace:   grace,
	}
}

// run is the reader goroutine: it reads while it holds the token, until
// stdout ends or the connection closes.
func (s *stdoutReader) run() {
	defer s.grace.Stop()
	for s.hold() {
		frame, err := s.fr.ReadFrame()
		if isDeadline(err) {
			continue // taken out of Read: hold hands the token over
		}
		if _, ok := s.handle(frame, err, true); !ok {
			return
		}
	}
}

// hold returns once the reader goroutine holds the token and no caller is
// in line for it, or false when reading is over. A caller in line is given
// the token, and the reader goroutine waits for it to come back.
func (s *stdoutReader) hold() bool {
	s.mu.Lock()
	for {
		if s.ended {
			s.mu.Unlock()
			return false
		}
		if s.running {
			if s.next == nil || s.closing {
				break
			}
			s.running = false
			s.leader = s.next
			s.grant <- struct{}{}
		} else if s.leader == nil && s.takeBack {
			s.takeBack = false
			s.running = true
			s.free.Store(false)
			if c := s.carry; c != nil {
				s.carry = nil
				s.mu.Unlock()
				if !s.router.flow.acquire(c.size, s.stop) {
					return false
				}
				s.router.deliver(c.msg)
				s.mu.Lock()
			}
			continue
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
			s.mu.Lock()
		case <-s.grace.C:
			s.mu.Lock()
			s.graceArmed = false
			if s.free.Load() {
				if left := leadGrace - time.Since(s.freeAt); left > 0 {
					s.armGrace(left) // freed again since it was armed
				} else {
					s.takeBack = true
				}
			}
		case <-s.stop:
			return false
		}
	}
	s.setDeadline(time.Time{})
	s.mu.Unlock()
	return true
}

// setDeadline sets src's read deadline, unless it is set already. s.mu is
// held.
func (s *stdoutReader) setDeadline(t time.Time) {
	if !t.Equal(s.deadline) {
		s.deadline = t
		_ = s.src.SetReadDeadline(t)
	}
}

// armGrace arms the grace timer to fire in d. s.mu is held.
func (s *stdoutReader) armGrace(d time.Duration) {
	s.graceArmed = true
	s.grace.Reset(d)
}

// handle hands on what one ReadFrame returned, as the reader goroutine
// always has: a call's response to its caller, the rest to the actor. The
// reader goroutine waits for flow credit (wait); a leader does not, and a
// message that would need to wait comes back as carry. ok is false when
// reading is over: stdout ended (readerDone is sent), or the connection
// closed while the reader goroutine waited for credit.
func (s *stdoutReader) handle(frame []byte, err error, wait bool) (carry *carried, ok bool) {
	stop := s.stop
	if !wait {
		stop = noWait
	}
	if err != nil {
		var tooLarge *protocol.FrameTooLargeError
		if errors.As(err, &tooLarge) && !tooLarge.Unterminated {
			s.router.oversized(tooLarge.ID(), tooLarge.Size, tooLarge.Limit)
			return nil, true
		}
		s.mu.Lock()
		s.ended = true
		s.mu.Unlock()
		if tooLarge != nil {
			// Endless output: no one reads any more, and the server,
			// left writing into a full pipe, is restarted.
			s.router.deliver(&connUnhealthy{gen: s.gen, err: fmt.Errorf("%w: wrote %d bytes without a newline (frame limit %d)",
				protocol.ErrFrameTooLarge, tooLarge.Size, tooLarge.Limit)})
			return nil, false
		}
		s.router.deliver(&readerDone{gen: s.gen, err: err})
		return nil, false
	}
	var out any
	msg, err := protocol.Classify(frame)
	if err != nil {
		// An answer that cannot be read fails its request now, rather
		// than leave it to time out; anything else is skipped, counted.
		if _, ok := s.router.unreadable(frame, err); ok {
			return nil, true
		}
		bad := newBadFrame(s.gen, frame, err)
		out, frame = bad, bad.line
	} else {
		if s.router.handOff(&msg) {
			return nil, true
		}
		out = &inboundMsg{gen: s.gen, msg: msg, size: len(frame)}
	}
	if !s.router.flow.acquire(len(frame), stop) {
		if wait {
			return nil, false
		}
		return &carried{msg: out, size: len(frame)}, true
	}
	s.router.deliver(out)
	return nil, true
}

// isDeadline reports whether a read ended only because a deadline passed.
func isDeadline(err error) bool {
	return err != nil && errors.Is(err, os.ErrDeadlineExceeded)
}

// enqueue is called by a fast-path caller once its request is sent. If m
// may lead (canLead), few requests are in flight and no one else is in
// line, it puts m in line for the token and returns the channel the token
// comes on; else nil, and m's answer comes on its reply channel only (a
// free token then goes back to the reader goroutine at once). A caller in
// line must call leave when it stops waiting, and lead when it receives
// the token.
func (s *stdoutReader) enqueue(m *callMsg, canLead bool) <-chan struct{} {
	few := canLead && s.router.pending.inFlight() <= leadMaxPending
	if !few && !s.free.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !few || s.next != nil || s.ended || s.closing {
		s.reclaim()
		return nil
	}
	s.next = m
	switch {
	case s.free.Load():
		// No one reads: m does, at once.
		s.free.Store(false)
		s.takeBack = false
		s.leader = m
		s.grant <- struct{}{}
	case s.running:
		// The reader goroutine may be blocked in Read: a deadline in the
		// past takes it out, and it hands the token over.
		s.setDeadline(pastDeadline)
	}
	// Otherwise a caller leads, and hands the token on when it is done.
	return s.grant
}

// reclaim gives a free token back to the reader goroutine now. s.mu is held.
func (s *stdoutReader) reclaim() {
	if s.free.Load() {
		s.takeBack = true
		signal(s.wake)
	}
}

// leave takes m out of the line, handing the token on if it was given to
// m and not taken. It may be called whether m is in line or not.
func (s *stdoutReader) leave(m *callMsg) {
	s.mu.Lock()
	if s.next == m {
		s.next = nil
		if s.leader == m {
			<-s.grant
			s.stepDown(nil)
		}
	}
	s.mu.Unlock()
}

// lead is m's caller reading the pipe, having received the token: until
// m's answer, which it returns, or until it must stop, returning false:
// deadline passed (the call's timeout: the caller looks at its timer), ctx
// ended, the connection closes, stdout ended, or a frame needs flow credit
// it cannot have now. Every frame read on the way is routed as the reader
// goroutine would. A zero deadline hands the token on at once.
func (s *stdoutReader) lead(ctx context.Context, m *callMsg, deadline time.Time) (callReply, bool) {
	s.mu.Lock()
	s.next = nil
	if deadline.IsZero() || s.closing || s.ended || ctx.Err() != nil {
		s.stepDown(nil)
		s.mu.Unlock()
		return callReply{}, false
	}
	// A deadline already set a little earlier than m's is kept: m may
	// then stop reading up to leadDeadlineSlack before its timeout and
	// wait the ordinary way, and most calls move no timer.
	if d := s.deadline; d.IsZero() || d.After(deadline) || deadline.Sub(d) > leadDeadlineSlack || !d.After(time.Now()) {
		s.setDeadline(deadline)
	}
	s.mu.Unlock()
	if ctx.Done() != nil {
		m.leading = s
		stop := context.AfterFunc(ctx, m.kickFunc())
		defer stop()
	}
	var carry *carried
	for {
		// The answer may have come before the token did, routed by
		// whoever read it then.
		select {
		case rep := <-m.reply:
			s.release(nil)
			return rep, true
		default:
		}
		frame, err := s.fr.ReadFrame()
		if isDeadline(err) {
			break
		}
		var ok bool
		if carry, ok = s.handle(frame, err, false); !ok || carry != nil {
			break
		}
	}
	s.release(carry)
	return callReply{}, false
}

// kick takes m out of its Read if it still leads (its context ended).
func (s *stdoutReader) kick(m *callMsg) {
	s.mu.Lock()
	if s.leader == m {
		s.setDeadline(pastDeadline)
	}
	s.mu.Unlock()
}

// release ends a leader's turn.
func (s *stdoutReader) release(carry *carried) {
	s.mu.Lock()
	s.stepDown(carry)
	s.mu.Unlock()
}

// stepDown passes the token on from its leader: to the next caller in line;
// else it is free, and the reader goroutine takes it back, at once when a
// request waits for its answer or carry must be routed, else after
// leadGrace. s.mu is held.
func (s *stdoutReader) stepDown(carry *carried) {
	s.leader = nil
	if carry == nil && s.next != nil && !s.closing && !s.ended {
		s.leader = s.next
		s.grant <- struct{}{}
		return
	}
	s.carry = carry
	if carry == nil {
		// Stored before inFlight is read: a caller that adds a request
		// after that read sees the token free in enqueue.
		s.free.Store(true)
		if !s.closing && !s.ended && s.router.pending.inFlight() == 0 {
			s.freeAt = time.Now()
			if !s.graceArmed {
				s.armGrace(leadGrace)
			}
		} else {
			s.takeBack = true
			signal(s.wake)
		}
	} else {
		s.takeBack = true
		signal(s.wake)
	}
	if s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// shut refuses leaders from now on and takes the one reading, if any, out
// of its Read. The channel it returns is closed once no caller holds the
// token (nil if none does).
func (s *stdoutReader) shut() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	s.reclaim()
	if s.leader == nil {
		return nil
	}
	s.setDeadline(pastDeadline)
	s.idle = make(chan struct{})
	return s.idle
}

// signal sends on a channel of capacity 1 without waiting.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
