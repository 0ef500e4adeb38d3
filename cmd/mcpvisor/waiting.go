package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// What status, tools and the other one-shot commands do while servers
// start. A first run of an npx server downloads its package before the
// server answers, which can take longer than --wait: a command that
// stares at nothing for 30 s and then calls that server failed is wrong
// twice. So, while waiting:
//
//   - after startNoteAfter, and every startNoteEvery after that, stderr
//     says which servers are still starting and the last line each wrote
//     to stderr (npm's progress), or that it wrote none;
//   - --wait bounds the wait for servers that show no progress. One still
//     starting that wrote to stderr within the last startProgressWindow is
//     waited for on, until it is quiet that long or its own startupTimeout
//     (120 s by default) settles it: a download in progress is not a
//     failure, and the startup timeout, not the command's patience, is what
//     says a server failed to start.
const (
	startNoteAfter      = 2 * time.Second
	startNoteEvery      = 5 * time.Second
	startProgressWindow = 10 * time.Second
)

// starter is what the wait needs of a host (a *mcpvisor.Host).
type starter interface {
	WaitSettled(ctx context.Context, names ...string) error
	Status() []mcpvisor.ServerStatus
	LastStderr(server string) (string, time.Time)
}

// waitStarting waits until every enabled server of h has settled (ready
// or its start failed), at most wait unless a server still starting shows
// progress (above), and returns the enabled servers not ready. With notes
// not nil it says there what the servers still starting are doing.
func waitStarting(ctx context.Context, h starter, wait time.Duration, notes io.Writer) []mcpvisor.ServerStatus {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		_ = h.WaitSettled(wctx) // not settled in time: the states say so
	}()
	defer func() { cancel(); <-settled }()

	start := time.Now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var note <-chan time.Time // nil without notes: never
	noteTimer := time.NewTimer(startNoteAfter)
	defer noteTimer.Stop()
	if notes != nil {
		note = noteTimer.C
	}
	for {
		select {
		case <-settled:
			return notReady(h.Status())
		case <-ctx.Done():
			return notReady(h.Status())
		case <-note:
			sayStarting(h, notes, time.Since(start))
			noteTimer.Reset(startNoteEvery)
		case <-deadline.C:
			if d := stillProgressing(h); d > 0 {
				deadline.Reset(d)
				continue
			}
			return notReady(h.Status())
		}
	}
}

// starting are the enabled servers among sts still starting.
func starting(sts []mcpvisor.ServerStatus) []mcpvisor.ServerStatus {
	var out []mcpvisor.ServerStatus
	for _, st := range sts {
		if st.Enabled && (st.State == mcpvisor.StateStarting || st.State == mcpvisor.StateInitializing) {
			out = append(out, st)
		}
	}
	return out
}

// stillProgressing is how much longer to wait for the servers still
// starting: until the latest of their last stderr lines is
// startProgressWindow old; 0 when none wrote one that recently.
func stillProgressing(h starter) time.Duration {
	var wait time.Duration
	for _, st := range starting(h.Status()) {
		if _, at := h.LastStderr(st.Name); !at.IsZero() {
			wait = max(wait, time.Until(at.Add(startProgressWindow)))
		}
	}
	return wait
}

// sayStarting writes a line for each server still starting: its state,
// how long the command has waited, and its last stderr line.
func sayStarting(h starter, w io.Writer, waited time.Duration) {
	for _, st := range starting(h.Status()) {
		what := "nothing on stderr yet"
		if line, at := h.LastStderr(st.Name); line != "" {
			what = fmt.Sprintf("stderr %s ago: %s", time.Since(at).Round(time.Second), printable(strings.TrimSpace(line)))
		}
		fmt.Fprintf(w, "mcpvisor: %s is still starting (%s, %s waited): %s\n", st.Name, st.State, waited.Round(time.Second), what)
	}
}
