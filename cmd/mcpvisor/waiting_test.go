package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// fakeStarter is one server starting, as a test scripts it.
type fakeStarter struct {
	mu      sync.Mutex
	state   mcpvisor.State
	line    string
	at      time.Time
	settled chan struct{}
}

func newFakeStarter() *fakeStarter {
	return &fakeStarter{state: mcpvisor.StateInitializing, settled: make(chan struct{})}
}

func (f *fakeStarter) WaitSettled(ctx context.Context, _ ...string) error {
	select {
	case <-f.settled:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeStarter) Status() []mcpvisor.ServerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return []mcpvisor.ServerStatus{{Name: "memory", Enabled: true, State: f.state}}
}

func (f *fakeStarter) LastStderr(string) (string, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.line, f.at
}

func (f *fakeStarter) stderr(line string) {
	f.mu.Lock()
	f.line, f.at = line, time.Now()
	f.mu.Unlock()
}

func (f *fakeStarter) ready() {
	f.mu.Lock()
	f.state = mcpvisor.StateReady
	f.mu.Unlock()
	close(f.settled)
}

// A first npx run: the server writes npm's progress to stderr for longer
// than --wait. The wait says after startNoteAfter what it is doing, and
// does not give up on it while it shows progress.
func TestWaitStartingSaysWhatAndWaitsOnProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		var notes syncBuffer
		const wait = 30 * time.Second
		done := make(chan []mcpvisor.ServerStatus, 1)
		start := time.Now()
		go func() { done <- waitStarting(context.Background(), f, wait, &notes) }()

		time.Sleep(time.Second)
		f.stderr("npm warn exec The following package was not found and will be installed: @modelcontextprotocol/server-memory@2025.8.4")
		synctest.Wait()
		if notes.String() != "" {
			t.Errorf("a note before %s: %q", startNoteAfter, notes.String())
		}
		time.Sleep(startNoteAfter - time.Second)
		synctest.Wait()
		if got := notes.String(); !strings.Contains(got, "memory is still starting (initializing, 2s waited)") ||
			!strings.Contains(got, "will be installed: @modelcontextprotocol/server-memory") {
			t.Errorf("note after %s = %q, want the server, its state and its last stderr line", startNoteAfter, got)
		}
		// npm keeps reporting past --wait, then the server answers.
		for time.Since(start) < wait+15*time.Second {
			time.Sleep(5 * time.Second)
			f.stderr("npm http fetch GET 200 https://registry.npmjs.org/some-dependency")
		}
		time.Sleep(3 * time.Second)
		f.ready()
		bad := <-done
		if len(bad) != 0 {
			t.Errorf("not ready: %+v; a server making progress was given up at --wait", bad)
		}
		if waited := time.Since(start); waited <= wait {
			t.Errorf("returned after %s, want past --wait %s", waited, wait)
		}
	})
}

// A server that says nothing is given up at --wait, not later.
func TestWaitStartingSilentServerEndsAtWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		var notes syncBuffer
		const wait = 30 * time.Second
		start := time.Now()
		bad := waitStarting(context.Background(), f, wait, &notes)
		if waited := time.Since(start); waited != wait {
			t.Errorf("returned after %s, want --wait %s", waited, wait)
		}
		if len(bad) != 1 || bad[0].Name != "memory" {
			t.Errorf("not ready = %+v, want memory", bad)
		}
		if !strings.Contains(notes.String(), "memory is still starting (initializing, 2s waited): nothing on stderr yet") {
			t.Errorf("notes = %q", notes.String())
		}
	})
}
