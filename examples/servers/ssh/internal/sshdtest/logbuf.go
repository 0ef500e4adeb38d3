package sshdtest

import (
	"context"
	"io"
	"strings"
	"sync"
)

// logBuffer holds sshd's stderr. Every write replaces changed, so a waiter
// wakes on new output instead of polling.
type logBuffer struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{}
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *logBuffer) snapshot() (string, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String(), l.changed
}

func (l *logBuffer) String() string {
	s, _ := l.snapshot()
	return s
}

// wait blocks until cond holds for the log, or ctx ends.
func (l *logBuffer) wait(ctx context.Context, cond func(log string) bool) error {
	for {
		s, changed := l.snapshot()
		if cond(s) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// drain copies r into l until r ends; it closes done then.
func (l *logBuffer) drain(r io.Reader, done chan<- struct{}) {
	defer close(done)
	_, _ = io.Copy(l, r)
}
