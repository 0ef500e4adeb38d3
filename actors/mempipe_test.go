package actors

import (
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// memPipe is a pipe in memory with what stdioConn needs of an os.Pipe end:
// reads that a deadline interrupts (os.ErrDeadlineExceeded), writes that
// wait for room or take what fits (writeNow). A real pipe's Read blocks in
// the runtime's poller, which testing/synctest does not count as durably
// blocked: a bubble with one never settles. A memPipe's Read waits on a
// channel, and its deadline runs on the bubble's clock.
type memPipe struct {
	mu       sync.Mutex
	buf      []byte
	limit    int  // bytes buffered at most; 0: no limit
	wclosed  bool // the write end is closed: reads end with io.EOF once buf is empty
	rclosed  bool // the read end is closed
	deadline time.Time
	timer    *time.Timer
	changed  chan struct{} // closed and replaced at every change
	blocked  int           // reads waiting now
}

func newMemPipe(limit int) *memPipe {
	return &memPipe{limit: limit, changed: make(chan struct{})}
}

// notify wakes whoever waits on the pipe; p.mu is held.
func (p *memPipe) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *memPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		switch {
		case p.rclosed:
			return 0, &fs.PathError{Op: "read", Path: "mem", Err: os.ErrClosed}
		case !p.deadline.IsZero() && !time.Now().Before(p.deadline):
			return 0, &fs.PathError{Op: "read", Path: "mem", Err: os.ErrDeadlineExceeded}
		case len(p.buf) > 0:
			n := copy(b, p.buf)
			p.buf = p.buf[n:]
			p.notify()
			return n, nil
		case p.wclosed:
			return 0, io.EOF
		}
		c := p.changed
		p.blocked++
		p.mu.Unlock()
		<-c
		p.mu.Lock()
		p.blocked--
	}
}

func (p *memPipe) SetReadDeadline(t time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deadline = t
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if d := time.Until(t); !t.IsZero() && d > 0 {
		p.timer = time.AfterFunc(d, func() {
			p.mu.Lock()
			p.notify()
			p.mu.Unlock()
		})
	}
	p.notify()
	return nil
}

// Write writes all of b, waiting for room.
func (p *memPipe) Write(b []byte) (int, error) {
	n := 0
	err := p.writeWait(b, func(int) {})
	if err == nil {
		n = len(b)
	}
	return n, err
}

// writeWait writes all of b, waiting for room, and calls progressed each
// time the pipe took some.
func (p *memPipe) writeWait(b []byte, progressed func(int)) error {
	n := 0
	for {
		m, err := p.writeNow(b[n:])
		n += m
		if m > 0 {
			progressed(m)
		}
		if err != nil || n == len(b) {
			return err
		}
		p.mu.Lock()
		c := p.changed
		full := p.limit > 0 && len(p.buf) >= p.limit && !p.rclosed
		p.mu.Unlock()
		if full {
			<-c
		}
	}
}

// writeNow writes what fits now.
func (p *memPipe) writeNow(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rclosed || p.wclosed {
		return 0, syscall.EPIPE
	}
	n := len(b)
	if p.limit > 0 {
		n = min(n, p.limit-len(p.buf))
	}
	p.buf = append(p.buf, b[:n]...)
	if n > 0 {
		p.notify()
	}
	return n, nil
}

// unread is how many bytes wait to be read.
func (p *memPipe) unread() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.buf), true
}

// closeWrite closes the write end: the reader sees io.EOF.
func (p *memPipe) closeWrite() {
	p.mu.Lock()
	p.wclosed = true
	p.notify()
	p.mu.Unlock()
}

// closeRead closes the read end: reads fail, writes fail with EPIPE.
func (p *memPipe) closeRead() {
	p.mu.Lock()
	p.rclosed = true
	if p.timer != nil {
		p.timer.Stop()
	}
	p.notify()
	p.mu.Unlock()
}

// reading reports how many reads wait on the pipe now.
func (p *memPipe) reading() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blocked
}
