package actors

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// stallThreshold is how long a write to a child's stdin may stay blocked
// before new calls fail at once with ErrNotReading instead of queueing behind it.
const stallThreshold = time.Second

// conn is one incarnation of a server connection, whatever the transport.
// Its goroutines report to the owning actor with messages tagged with its
// generation: inboundMsg, badFrame, oversizedFrame, readerDone, writeFailed,
// processExited.
type conn interface {
	// send queues one frame for the server; it never blocks.
	send(frame []byte) error
	// release returns the flow-control credit of a handled inbound frame.
	release(n int)
	// close ends the connection and joins its goroutines; it blocks and is
	// idempotent.
	close(ctx context.Context)
	generation() uint64
	pid() int // the process id, 0 when there is no process
}

var _ conn = (*stdioConn)(nil)

// stdioConn is one incarnation of a stdio server: the process, a reader
// goroutine that turns stdout into messages for the actor, and a writer
// goroutine that drains a bounded queue into stdin. The actor owns it; the
// goroutines are joined by close.
type stdioConn struct {
	gen     uint64
	proc    *supervision.Process
	out     chan []byte
	stop    chan struct{}
	flow    *flow
	blocked atomic.Int64 // unix nanos when the current write began; 0 when idle
	wg      sync.WaitGroup
	closing sync.Once
}

// startStdio spawns the process and its goroutines. deliver sends a message
// to the owning actor; it must not block.
func startStdio(gen uint64, spec *ServerSpec, deliver func(any), stderr func([]byte)) (*stdioConn, error) {
	proc, err := supervision.StartProcess(supervision.ProcessSpec{
		Command:   spec.Command,
		Args:      spec.Args,
		Env:       spec.Env,
		Dir:       spec.Dir,
		StopGrace: spec.StopGrace,
		TermGrace: spec.TermGrace,
		Stderr:    stderr,
	})
	if err != nil {
		return nil, err
	}
	c := &stdioConn{
		gen:  gen,
		proc: proc,
		out:  make(chan []byte, spec.WriteQueue),
		stop: make(chan struct{}),
		// At most about two maximum frames read ahead of the actor.
		flow: newFlow(int64(2 * spec.MaxFrame)),
	}
	c.wg.Add(3)
	go c.readLoop(spec.MaxFrame, deliver)
	go c.writeLoop(deliver)
	go func() {
		defer c.wg.Done()
		<-proc.Done()
		deliver(&processExited{gen: gen, exit: proc.Exit()})
	}()
	return c, nil
}

func (c *stdioConn) pid() int           { return c.proc.Pid() }
func (c *stdioConn) generation() uint64 { return c.gen }
func (c *stdioConn) release(n int)      { c.flow.release(n) }

// send queues one frame (without its newline) for the writer. It never
// blocks: a full queue, or a write stalled for longer than stallThreshold,
// means the server is not reading its input.
func (c *stdioConn) send(frame []byte) error {
	if since := c.blocked.Load(); since != 0 && time.Since(time.Unix(0, since)) > stallThreshold {
		return fmt.Errorf("%w: a write to its stdin has been blocked for %s", ErrNotReading, time.Since(time.Unix(0, since)).Round(time.Millisecond))
	}
	select {
	case c.out <- frame:
		return nil
	default:
		return fmt.Errorf("%w: %d frames queued for its stdin", ErrNotReading, cap(c.out))
	}
}

// stalled reports how long the current write has been blocked, 0 if none.
func (c *stdioConn) stalled() time.Duration {
	since := c.blocked.Load()
	if since == 0 {
		return 0
	}
	return time.Since(time.Unix(0, since))
}

func (c *stdioConn) readLoop(maxFrame int, deliver func(any)) {
	defer c.wg.Done()
	fr := protocol.NewFrameReader(c.proc.Stdout(), maxFrame)
	for {
		frame, err := fr.ReadFrame()
		if err != nil {
			var tooLarge *protocol.FrameTooLargeError
			if errors.As(err, &tooLarge) {
				deliver(&oversizedFrame{gen: c.gen, id: tooLarge.ID(), size: tooLarge.Size, limit: tooLarge.Limit})
				continue
			}
			deliver(&readerDone{gen: c.gen, err: err})
			return
		}
		msg, err := protocol.Classify(frame)
		if err != nil {
			if len(frame) > 200 {
				frame = frame[:200]
			}
			if !c.flow.acquire(len(frame), c.stop) {
				return
			}
			deliver(&badFrame{gen: c.gen, line: frame, err: err})
			continue
		}
		if !c.flow.acquire(len(frame), c.stop) {
			return
		}
		deliver(&inboundMsg{gen: c.gen, msg: msg, size: len(frame)})
	}
}

func (c *stdioConn) writeLoop(deliver func(any)) {
	defer c.wg.Done()
	w := bufio.NewWriterSize(c.proc.Stdin(), 64<<10)
	for {
		var frame []byte
		select {
		case frame = <-c.out:
		case <-c.stop:
			return
		}
		c.blocked.Store(time.Now().UnixNano())
		err := writeFrame(w, frame)
		// Frames queued meanwhile go out in the same flush.
		for err == nil && len(c.out) > 0 {
			err = writeFrame(w, <-c.out)
		}
		if err == nil {
			err = w.Flush()
		}
		c.blocked.Store(0)
		if err != nil {
			deliver(&writeFailed{gen: c.gen, err: err})
			return
		}
	}
}

func writeFrame(w *bufio.Writer, frame []byte) error {
	if _, err := w.Write(frame); err != nil {
		return err
	}
	return w.WriteByte('\n')
}

// close stops the process (the stop ladder) and joins the goroutines. It
// blocks; the actor runs it on a goroutine of its own. Idempotent.
func (c *stdioConn) close(ctx context.Context) {
	c.closing.Do(func() {
		close(c.stop)
		c.proc.Stop(ctx)
		c.wg.Wait()
	})
}

// flow bounds the bytes read from a server but not yet handled by its actor,
// so a server that floods stdout cannot grow the host's memory without limit.
type flow struct {
	limit int64
	mu    sync.Mutex
	used  int64
	wake  chan struct{} // closed when used drops below limit
}

func newFlow(limit int64) *flow { return &flow{limit: limit} }

// acquire takes n bytes, waiting while the limit is exceeded. It returns
// false if stop closed first. A single frame larger than the limit passes
// once nothing else is in flight.
func (f *flow) acquire(n int, stop <-chan struct{}) bool {
	for {
		f.mu.Lock()
		if f.used == 0 || f.used+int64(n) <= f.limit {
			f.used += int64(n)
			f.mu.Unlock()
			return true
		}
		if f.wake == nil {
			f.wake = make(chan struct{})
		}
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-wake:
		case <-stop:
			return false
		}
	}
}

// release returns n bytes.
func (f *flow) release(n int) {
	f.mu.Lock()
	f.used -= int64(n)
	if f.wake != nil && f.used < f.limit {
		close(f.wake)
		f.wake = nil
	}
	f.mu.Unlock()
}
