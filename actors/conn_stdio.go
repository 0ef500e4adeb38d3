package actors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// stallThreshold is how long a child's stdin may take nothing while frames
// wait for it before the server counts as not reading its input: new calls
// fail at once with ErrNotReading instead of queueing behind it, and the
// connection reports the server unhealthy, to be restarted by its policy.
//
// The same bound holds for a frame sent while the server owes nothing (no
// request in flight, none cancelled unanswered): a server that reads must
// take it from the pipe at once, so one that leaves it there for
// stallThreshold is not reading either, and the call it carried fails then,
// not at its timeout. A server busy with a request it has read is not
// judged that way: one that reads a line, handles it, then reads the next
// would look the same.
const stallThreshold = time.Second

// writeRounds bounds how many times a caller that wrote its own frame goes
// on to write the frames other callers queued meanwhile, before it leaves
// the rest to the writer goroutine.
const writeRounds = 4

// maxSpare is the largest write buffer kept for reuse.
const maxSpare = 64 << 10

var _ conn = (*stdioConn)(nil)

// stdioConn is one incarnation of a stdio server: the process, its stdout
// read by whoever holds the read token (stdoutReader: the reader goroutine,
// or a caller waiting for its response), and a write path that writes to
// stdin directly when the pipe has room and otherwise queues for a writer
// goroutine. The actor owns it; close joins the goroutines.
type stdioConn struct {
	gen     uint64
	proc    *supervision.Process  // nil over test pipes
	contain *ContainmentStatus    // how proc is contained; nil over test pipes
	halt    func(context.Context) // stops the child (the stop ladder) and closes both pipes
	stdin   stdinPipe
	rd      *stdoutReader
	router  router
	stop    chan struct{}
	closing sync.Once
	wg      sync.WaitGroup

	// The write path. Frames go out in the order send accepted them. One
	// writer at a time owns the pipe: a caller writing without waiting,
	// or the writer goroutine waiting for room. While one does, others
	// append their frames to queue, and the writer takes them too: many
	// small frames from concurrent callers go out in one write(2).
	wmu        sync.Mutex
	owner      writeOwner
	head       []byte       // the rest of a frame a caller could not finish: written before queue
	queue      []byte       // frames with their newlines, waiting for the writer
	spare      []byte       // a written queue buffer, kept for the next
	blocked    atomic.Int64 // unix nanos when the writer goroutine's blocked write last made progress; 0 when idle
	broken     error
	notReading error // set once stdin took nothing for stall: every send fails with it
	maxBacklog int
	kick       chan struct{}

	// The stall watch: a timer that runs while the writer goroutine waits
	// for room, and reports the server unhealthy once stdin has taken
	// nothing for stall.
	stall      time.Duration
	stallTmr   *time.Timer
	stallArmed atomic.Bool
	progressed func(int) // c.progress, bound once

	// The drain watch: a frame sent to a server that owes nothing must
	// leave the pipe within stall. Offsets count the bytes of stdin from
	// the start: sent is where the frames send accepted end, written where
	// the pipe's content ends; what the server consumed is written less
	// what the pipe still holds (stdinPipe.unread).
	sent      int64 // under wmu
	written   atomic.Int64
	live      atomic.Bool // the handshake is done: the server reads from now on
	watching  atomic.Bool
	watchEnd  atomic.Int64 // where the watched frame ends
	watchFrom atomic.Int64 // consumed when the watch began or last saw progress
	drainTmr  *time.Timer
	// serverCPU is the CPU time the server's process has used, where the
	// system tells it (nil over test pipes). A server that reads nothing
	// for stall but ran meanwhile is busy or starved by a loaded machine,
	// not deaf: it gets another stall. watchCPU is what it had at the
	// last look, or -1.
	serverCPU func() (int64, bool)
	watchCPU  atomic.Int64
}

// writeOwner says who writes to stdin now.
type writeOwner uint8

const (
	ownerNone   writeOwner = iota
	ownerCaller            // a caller in send, without waiting
	ownerWriter            // the writer goroutine, waiting for room
)

// stdinPipe is the child's stdin as the write path needs it.
type stdinPipe interface {
	// writeNow writes what the pipe takes now, without waiting.
	writeNow(b []byte) (int, error)
	// writeWait writes all of b, waiting for room as long as it takes,
	// and calls progressed with what the pipe took each time it took some.
	writeWait(b []byte, progressed func(n int)) error
	// unread is how many bytes written wait in the pipe for the server to
	// read them; false if the pipe cannot tell.
	unread() (int, bool)
}

// fileStdin is a real pipe: writeNow writes through its raw descriptor,
// which is non-blocking.
type fileStdin struct {
	*os.File
	raw syscall.RawConn
	w   *rawWrite
}

// rawWrite is the state of one writeNow, kept from one to the next so that
// a write allocates nothing: writeNow has one caller at a time (the write
// path's owner).
type rawWrite struct {
	buf   []byte
	n     int
	err   error
	write func(fd uintptr) bool // w.writeFD, bound once
}

func newFileStdin(f *os.File) (fileStdin, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return fileStdin{}, err
	}
	w := &rawWrite{}
	w.write = w.writeFD
	return fileStdin{File: f, raw: raw, w: w}, nil
}

// stderrSettle bounds how long the report of a child's exit waits for the
// last of its stderr: a grandchild may hold the pipe open.
const stderrSettle = 100 * time.Millisecond

// dialStdio is the dialFunc of stdio servers: it spawns the process in a
// cell of the runtime's containment, journaled before the spawn and
// forgotten once everything in it is gone.
func (r *Runtime) dialStdio(gen uint64, spec *ServerSpec, cio connIO) (conn, error) {
	cell, err := r.containment.NewCell(spec.Name, spec.Limits)
	if err != nil {
		return nil, err
	}
	id := cell.Placement().Marker
	r.recordContainment(spec.Name, cell.Placement(), true)
	stopped := func(err error) {
		if err != nil {
			// Kept: the next start of the host tries again.
			r.logger.Warn("processes of a stopped server are still running", "server", spec.Name, "err", err)
			return
		}
		r.forgetContainment(id)
	}
	c, err := startStdio(gen, spec, cell, cio, stopped)
	if err != nil {
		r.forgetContainment(id) // StartProcess released the cell: nothing runs
		return nil, err         // never a typed nil in the interface
	}
	r.recordContainment(spec.Name, cell.Placement(), false)
	return c, nil
}

// startStdio spawns the process in cell (nil: its process group alone) and
// its goroutines. cio.deliver sends a message to the owning actor; it must
// not block. stopped, if not nil, learns how the stop ladder ended.
func startStdio(gen uint64, spec *ServerSpec, cell *supervision.Cell, cio connIO, stopped func(error)) (*stdioConn, error) {
	proc, err := supervision.StartProcess(supervision.ProcessSpec{
		Command:   spec.Command,
		Args:      spec.Args,
		Env:       spec.Env,
		Dir:       spec.Dir,
		StopGrace: spec.StopGrace,
		TermGrace: spec.TermGrace,
		Stderr:    cio.stderr,
		Cell:      cell,
	})
	if err != nil {
		return nil, err
	}
	stdin, err := newFileStdin(proc.Stdin())
	if err != nil {
		err = errors.Join(err, proc.Stop(context.Background()))
		return nil, err
	}
	halt := func(ctx context.Context) {
		err := proc.Stop(ctx)
		if stopped != nil {
			stopped(err)
		}
	}
	// The child's stdout is an os.Pipe: pollable, so its reads take
	// deadlines (the read token relies on them).
	c := newStdioConn(gen, spec, stdin, proc.Stdout(), halt, cio.deliver, cio.event)
	c.proc = proc
	c.serverCPU = func() (int64, bool) { return processCPU(proc.Pid()) }
	c.contain = containmentStatusOf(proc.Cell())
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		<-proc.Done()
		// What the child wrote last is read before its exit is reported:
		// the exit's reason quotes it (withStderr).
		settle := time.NewTimer(stderrSettle)
		select {
		case <-proc.StderrDone():
		case <-settle.C:
		case <-c.stop:
		}
		settle.Stop()
		cio.deliver(&processExited{gen: gen, exit: proc.Exit()})
	}()
	return c, nil
}

// newStdioConn starts the reader and writer goroutines of a connection over
// a child's pipes. halt must stop the child and close both pipes.
func newStdioConn(gen uint64, spec *ServerSpec, stdin stdinPipe, stdout stdoutPipe, halt func(context.Context), deliver func(any), event func(*protocol.Message) bool) *stdioConn {
	c := &stdioConn{
		gen:        gen,
		halt:       halt,
		stdin:      stdin,
		router:     newRouter(gen, spec, deliver, event),
		stop:       make(chan struct{}),
		kick:       make(chan struct{}, 1),
		maxBacklog: max(spec.WriteQueue*4096, 4*spec.MaxFrame),
		stall:      stallThreshold,
	}
	c.progressed = c.progress
	c.stallTmr = time.AfterFunc(time.Hour, c.checkStall)
	c.stallTmr.Stop()
	c.drainTmr = time.AfterFunc(time.Hour, c.checkDrain)
	c.drainTmr.Stop()
	c.watchCPU.Store(-1)
	c.rd = newStdoutReader(gen, stdout, spec.MaxFrame, &c.router, c.stop)
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		c.rd.run()
	}()
	go c.writeLoop()
	return c
}

func (c *stdioConn) generation() uint64 { return c.gen }

func (c *stdioConn) pid() int {
	if c.proc == nil {
		return 0
	}
	return c.proc.Pid()
}

func (c *stdioConn) pending() *pendingTable { return c.router.pending }
func (c *stdioConn) release(n int)          { c.router.flow.release(n) }
func (c *stdioConn) abandon(int64)          {}

// ready starts the drain watch: before the handshake is done, a server
// that has not begun to read (a wrapper still installing it) is slow, not
// deaf, and the handshake's timeout bounds it.
func (c *stdioConn) ready() { c.live.Store(true) }

// send writes m's frame and its newline to stdin without blocking: directly
// when no one else is writing and the pipe has room, else by whoever
// writes now (another caller, or the writer goroutine waiting for room),
// after what they already hold. A server that has not drained its stdin
// for stallThreshold, or a backlog past its bound, means the server is not
// reading: the frame is refused with ErrNotReading.
func (c *stdioConn) send(m outMsg) error {
	frame := m.frame
	c.wmu.Lock()
	if err := c.notReading; err != nil {
		c.wmu.Unlock()
		return err
	}
	if c.broken != nil {
		// The connection is dying: the frame is dropped, and the request
		// it carried fails with the rest, with the exit status as reason.
		c.wmu.Unlock()
		return nil
	}
	if c.owner != ownerNone {
		if since := c.blocked.Load(); since != 0 && time.Since(time.Unix(0, since)) > c.stall {
			c.wmu.Unlock()
			return fmt.Errorf("%w: its stdin has taken nothing for %s", ErrNotReading, time.Since(time.Unix(0, since)).Round(time.Millisecond))
		}
		if queued := len(c.head) + len(c.queue); queued+len(frame) > c.maxBacklog {
			c.wmu.Unlock()
			return fmt.Errorf("%w: %d bytes queued for its stdin", ErrNotReading, queued)
		}
		c.queue = append(append(c.queue, frame...), '\n')
		c.sent += int64(len(frame) + 1)
		end := c.sent
		c.wmu.Unlock()
		c.watchDrain(m.kind, end, len(frame)+1)
		return nil
	}
	c.owner = ownerCaller
	c.sent += int64(len(frame) + 1)
	end := c.sent
	busy := m.kind == outRequest && c.router.pending.inFlight() > leadMaxPending
	c.wmu.Unlock()
	buf := append(frame, '\n')
	if busy {
		// The server has earlier requests to answer before this one: a
		// moment's yield costs this one nothing, and the frames the callers
		// that run meanwhile queue go in the same write, one system call
		// for many.
		runtime.Gosched()
		c.wmu.Lock()
		if len(c.queue) > 0 {
			buf = append(buf, c.queue...)
			c.queue = c.queue[:0]
		}
		c.wmu.Unlock()
	}
	c.writeOut(buf)
	c.watchDrain(m.kind, end, len(frame)+1)
	return nil
}

// watchDrain starts the drain watch on a frame of size bytes ending at end,
// if the server owes nothing but what this frame asks (a request of its
// own in the pending table) and no watch runs. It costs two atomic loads
// when it does not start, and a timer reset, at most once per stall, when
// it does.
func (c *stdioConn) watchDrain(kind outKind, end int64, size int) {
	if !c.live.Load() || c.watching.Load() {
		return
	}
	owes := 0
	if kind == outRequest {
		owes = 1
	}
	if p := c.router.pending; p.inFlight() > owes || p.cancelled.Load() {
		return
	}
	if c.watching.Swap(true) {
		return
	}
	c.watchEnd.Store(end)
	c.watchFrom.Store(end - int64(size))
	c.drainTmr.Reset(c.stall)
}

// checkDrain runs on the drain timer, stall after a watched frame was sent
// or the server was last seen reading it. A server that has read past the
// frame, or read some of it since, reads; one that has read nothing in the
// time is not reading. A frame still held by the writer goroutine (a full
// pipe) is the stall watch's to judge.
func (c *stdioConn) checkDrain() {
	end, from := c.watchEnd.Load(), c.watchFrom.Load()
	written := c.written.Load()
	unread, ok := c.stdin.unread()
	if !ok || written < end {
		c.watchCPU.Store(-1)
		c.watching.Store(false)
		return
	}
	consumed := written - int64(unread)
	switch {
	case consumed >= end:
		c.watchCPU.Store(-1)
		c.watching.Store(false)
	case consumed != from:
		c.watchFrom.Store(consumed)
		c.drainTmr.Reset(c.stall)
	case c.ranSinceLastLook():
		c.drainTmr.Reset(c.stall)
	default:
		c.unhealthy(fmt.Errorf("%w: what was sent to it while it owed nothing has waited in its stdin for %s", ErrNotReading, c.stall))
	}
}

// ranSinceLastLook reports whether the server's process used CPU since
// checkDrain last looked, or this is the first look of the watch: a server
// that read nothing in a stall is judged only once it has also not run for
// one (a deaf server is reported after two stalls where its CPU time can be
// read, after one elsewhere).
func (c *stdioConn) ranSinceLastLook() bool {
	if c.serverCPU == nil {
		return false
	}
	cpu, ok := c.serverCPU()
	if !ok {
		return false
	}
	return c.watchCPU.Swap(cpu) != cpu
}

// writeOut is a caller writing to stdin without waiting: buf, then what
// other callers queued meanwhile, for up to writeRounds rounds. What the
// pipe does not take, and what is left after the rounds, goes to the writer
// goroutine, in order.
func (c *stdioConn) writeOut(buf []byte) {
	reuse := false // buf is a queue buffer, to keep once written
	for round := 0; ; round++ {
		n, err := c.stdin.writeNow(buf)
		c.written.Add(int64(n))
		c.wmu.Lock()
		if err != nil {
			c.broken = err
			c.owner = ownerNone
			c.wmu.Unlock()
			c.router.deliver(&writeFailed{gen: c.gen, err: err})
			return
		}
		if n < len(buf) || round == writeRounds && len(c.queue) > 0 {
			if n < len(buf) {
				// The rest must go before anything else. A caller's own
				// frame is copied: its buffer goes back to its call.
				c.head = buf[n:]
				if !reuse {
					c.head = append([]byte(nil), c.head...)
				}
			} else if reuse {
				c.keep(buf)
			}
			c.owner = ownerWriter
			c.wmu.Unlock()
			select {
			case c.kick <- struct{}{}:
			default:
			}
			return
		}
		if reuse {
			c.keep(buf)
		}
		if len(c.queue) == 0 {
			c.owner = ownerNone
			c.wmu.Unlock()
			return
		}
		buf, c.queue = c.queue, c.spare
		c.spare = nil
		reuse = true
		c.wmu.Unlock()
	}
}

// keep makes a written queue buffer the spare, unless it is large. c.wmu
// is held.
func (c *stdioConn) keep(buf []byte) {
	if cap(buf) <= maxSpare {
		c.spare = buf[:0]
	}
}

func (f fileStdin) writeNow(buf []byte) (int, error) {
	w := f.w
	w.buf, w.n, w.err = buf, 0, nil
	err := f.raw.Write(w.write)
	n := w.n
	if w.err != nil {
		err = w.err
	}
	w.buf, w.err = nil, nil
	return n, err
}

// writeFD writes w.buf to fd until it is written or the pipe is full.
func (w *rawWrite) writeFD(fd uintptr) bool {
	for w.n < len(w.buf) {
		m, err := syscall.Write(int(fd), w.buf[w.n:])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			break
		}
		if err != nil {
			w.err = err
			break
		}
		w.n += m
	}
	return true // never wait: the writer goroutine does the waiting
}

// writeLoop writes what a caller left to it, blocking on a full pipe as
// long as it must, until nothing is left.
func (c *stdioConn) writeLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.kick:
		case <-c.stop:
			return
		}
		for {
			c.wmu.Lock()
			if c.owner != ownerWriter {
				c.wmu.Unlock()
				break
			}
			head, queue := c.head, c.queue
			if len(head) == 0 && len(queue) == 0 {
				c.owner = ownerNone
				c.wmu.Unlock()
				break
			}
			c.head, c.queue, c.spare = nil, c.spare, nil
			c.wmu.Unlock()
			c.blocked.Store(time.Now().UnixNano())
			if !c.stallArmed.Swap(true) {
				c.stallTmr.Reset(c.stall)
			}
			err := c.writeAll(head, queue)
			c.blocked.Store(0)
			c.wmu.Lock()
			if err != nil {
				first := c.broken == nil
				c.broken = err
				c.owner = ownerNone
				c.wmu.Unlock()
				if first {
					c.router.deliver(&writeFailed{gen: c.gen, err: err})
				}
				return
			}
			c.keep(queue)
			c.wmu.Unlock()
		}
	}
}

func (c *stdioConn) writeAll(bufs ...[]byte) error {
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		if err := c.stdin.writeWait(b, c.progressed); err != nil {
			return err
		}
	}
	return nil
}

// progress records that the pipe took n bytes of a blocked write: the
// server reads, however slowly.
func (c *stdioConn) progress(n int) {
	c.written.Add(int64(n))
	c.blocked.Store(time.Now().UnixNano())
}

// checkStall runs on the stall timer: while the writer goroutine waits for
// room, it looks again when stall will have passed since the last
// progress; once it has, the server is not reading its input. Its frames
// will never be read: the connection reports the server unhealthy, and
// every send fails with ErrNotReading until the actor replaces it.
func (c *stdioConn) checkStall() {
	since := c.blocked.Load()
	if since == 0 {
		c.stallArmed.Store(false)
		// A blocked write that began since blocked was read may have found
		// the timer still armed: then it is armed again here.
		if c.blocked.Load() != 0 && !c.stallArmed.Swap(true) {
			c.stallTmr.Reset(c.stall)
		}
		return
	}
	idle := time.Since(time.Unix(0, since))
	if idle < c.stall {
		c.stallTmr.Reset(c.stall - idle)
		return
	}
	c.unhealthy(fmt.Errorf("%w: its stdin has taken nothing for %s", ErrNotReading, idle.Round(time.Millisecond)))
}

// unhealthy marks the server not reading: every send fails with err from
// now on, and the actor learns it once, unless the connection is already
// dying.
func (c *stdioConn) unhealthy(err error) {
	c.wmu.Lock()
	first := c.notReading == nil && c.broken == nil
	if first {
		c.notReading = err
	}
	c.wmu.Unlock()
	if first {
		c.router.deliver(&connUnhealthy{gen: c.gen, err: err})
	}
}

func (f fileStdin) writeWait(b []byte, progressed func(int)) error {
	var werr error
	n := 0
	err := f.raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, err := syscall.Write(int(fd), b[n:])
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return false // the poller waits for room
			case err != nil:
				werr = err
				return true
			}
			n += m
			progressed(m)
		}
		return true
	})
	if werr != nil {
		return werr
	}
	return err
}

// close stops the process (the stop ladder) and joins the goroutines; a
// caller reading stdout is taken out of its Read, and close returns once
// it has handed the token back. It blocks; the actor runs it on a
// goroutine of its own. Idempotent.
func (c *stdioConn) close(ctx context.Context) {
	c.closing.Do(func() {
		idle := c.rd.shut()
		close(c.stop)
		c.stallTmr.Stop()
		c.drainTmr.Stop()
		c.halt(ctx)
		c.wg.Wait()
		if idle != nil {
			<-idle
		}
	})
}
