package actors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/supervision"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// stallThreshold is how long a child's stdin may stay full before new calls
// fail at once with ErrNotReading instead of queueing behind it.
const stallThreshold = time.Second

var _ conn = (*stdioConn)(nil)

// stdioConn is one incarnation of a stdio server: the process, a reader
// goroutine that routes stdout frames, and a write path that writes to stdin
// directly when the pipe has room and otherwise queues for a writer
// goroutine. The actor owns it; close joins the goroutines.
type stdioConn struct {
	gen     uint64
	proc    *supervision.Process
	stdin   syscall.RawConn
	router  router
	stop    chan struct{}
	closing sync.Once
	wg      sync.WaitGroup

	// The write path. Frames go out in the order send accepted them: once
	// anything is queued, later frames queue behind it.
	wmu          sync.Mutex
	backlog      [][]byte // frames with their newline, waiting for the writer
	backlogBytes int
	writing      bool         // the writer goroutine holds frames it is writing
	blocked      atomic.Int64 // unix nanos when the writer began a blocked write; 0 when idle
	broken       error
	maxBacklog   int
	kick         chan struct{}
}

// dialStdio is the dialFunc of stdio servers: it spawns the process.
func dialStdio(gen uint64, spec *ServerSpec, cio connIO) (conn, error) {
	c, err := startStdio(gen, spec, cio.deliver, cio.event, cio.stderr)
	if err != nil {
		return nil, err // never a typed nil in the interface
	}
	return c, nil
}

// startStdio spawns the process and its goroutines. deliver sends a message
// to the owning actor; it must not block.
func startStdio(gen uint64, spec *ServerSpec, deliver func(any), event func(*protocol.Message) bool, stderr func([]byte)) (*stdioConn, error) {
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
	raw, err := proc.Stdin().SyscallConn()
	if err != nil {
		proc.Stop(context.Background())
		return nil, err
	}
	c := &stdioConn{
		gen:        gen,
		proc:       proc,
		stdin:      raw,
		router:     newRouter(gen, spec, deliver, event),
		stop:       make(chan struct{}),
		kick:       make(chan struct{}, 1),
		maxBacklog: max(spec.WriteQueue*4096, 4*spec.MaxFrame),
	}
	c.wg.Add(3)
	go c.readLoop(spec.MaxFrame)
	go c.writeLoop(deliver)
	go func() {
		defer c.wg.Done()
		<-proc.Done()
		deliver(&processExited{gen: gen, exit: proc.Exit()})
	}()
	return c, nil
}

func (c *stdioConn) pid() int               { return c.proc.Pid() }
func (c *stdioConn) generation() uint64     { return c.gen }
func (c *stdioConn) pending() *pendingTable { return c.router.pending }
func (c *stdioConn) release(n int)          { c.router.flow.release(n) }
func (c *stdioConn) abandon(int64)          {}
func (c *stdioConn) ready()                 {}

// send writes m's frame and its newline to stdin without blocking: directly
// when nothing is queued and the pipe has room, otherwise (the rest of it)
// through the writer goroutine. A server that has not drained its stdin for
// stallThreshold, or a backlog past its bound, means the server is not
// reading: the frame is refused with ErrNotReading.
func (c *stdioConn) send(m outMsg) error {
	frame := m.frame
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.broken != nil {
		// The connection is dying: the frame is dropped, and the request
		// it carried fails with the rest, with the exit status as reason.
		return nil
	}
	idle := len(c.backlog) == 0 && !c.writing
	if !idle {
		if since := c.blocked.Load(); since != 0 && time.Since(time.Unix(0, since)) > stallThreshold {
			return fmt.Errorf("%w: its stdin has been full for %s", ErrNotReading, time.Since(time.Unix(0, since)).Round(time.Millisecond))
		}
		if c.backlogBytes+len(frame) > c.maxBacklog {
			return fmt.Errorf("%w: %d bytes queued for its stdin", ErrNotReading, c.backlogBytes)
		}
	}
	buf := append(frame, '\n')
	if idle {
		n, err := c.tryWrite(buf)
		if err != nil {
			c.broken = err
			c.router.deliver(&writeFailed{gen: c.gen, err: err})
			return nil
		}
		if n == len(buf) {
			return nil
		}
		buf = buf[n:] // the rest must follow before anything else
	}
	c.backlog = append(c.backlog, buf)
	c.backlogBytes += len(buf)
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

// tryWrite writes what the pipe takes now, without waiting.
func (c *stdioConn) tryWrite(buf []byte) (int, error) {
	var n int
	var werr error
	err := c.stdin.Write(func(fd uintptr) bool {
		for n < len(buf) {
			m, err := syscall.Write(int(fd), buf[n:])
			if err == syscall.EINTR {
				continue
			}
			if err == syscall.EAGAIN {
				break
			}
			if err != nil {
				werr = err
				break
			}
			n += m
		}
		return true // never wait: the writer goroutine does the waiting
	})
	if werr == nil {
		werr = err
	}
	if werr != nil {
		return n, werr
	}
	return n, nil
}

func (c *stdioConn) readLoop(maxFrame int) {
	defer c.wg.Done()
	fr := protocol.NewFrameReader(c.proc.Stdout(), maxFrame)
	for {
		frame, err := fr.ReadFrame()
		if err != nil {
			var tooLarge *protocol.FrameTooLargeError
			if errors.As(err, &tooLarge) {
				c.router.oversized(tooLarge.ID(), tooLarge.Size, tooLarge.Limit)
				continue
			}
			c.router.deliver(&readerDone{gen: c.gen, err: err})
			return
		}
		msg, err := protocol.Classify(frame)
		if err != nil {
			if len(frame) > 200 {
				frame = frame[:200]
			}
			if !c.router.flow.acquire(len(frame), c.stop) {
				return
			}
			c.router.deliver(&badFrame{gen: c.gen, line: frame, err: err})
			continue
		}
		if !c.router.route(msg, len(frame), c.stop) {
			return
		}
	}
}

// writeLoop writes the backlog, blocking on a full pipe as long as it must.
func (c *stdioConn) writeLoop(deliver func(any)) {
	defer c.wg.Done()
	out := c.proc.Stdin()
	for {
		select {
		case <-c.kick:
		case <-c.stop:
			return
		}
		for {
			c.wmu.Lock()
			frames := c.backlog
			c.backlog, c.backlogBytes = nil, 0
			c.writing = len(frames) > 0
			c.wmu.Unlock()
			if len(frames) == 0 {
				break
			}
			c.blocked.Store(time.Now().UnixNano())
			err := writeAll(out, frames)
			c.blocked.Store(0)
			if err != nil {
				c.wmu.Lock()
				first := c.broken == nil
				c.broken = err
				c.writing = false
				c.wmu.Unlock()
				if first {
					deliver(&writeFailed{gen: c.gen, err: err})
				}
				return
			}
		}
	}
}

func writeAll(f *os.File, frames [][]byte) error {
	for _, b := range frames {
		if _, err := f.Write(b); err != nil {
			return err
		}
	}
	return nil
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
