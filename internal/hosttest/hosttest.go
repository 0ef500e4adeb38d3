// Package hosttest opens hosts for tests: a temporary data directory, no
// logs, short restarts and stop ladders, closed when the test ends. The
// root package's tests and those of the packages above it share it.
package hosttest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// FastRestart keeps restart tests short; the shapes (growth, reset,
// intensity) are the same as with the defaults.
var FastRestart = mcpvisor.RestartPolicy{
	InitialInterval:     20 * time.Millisecond,
	MaxInterval:         200 * time.Millisecond,
	RandomizationFactor: -1,
	StableAfter:         time.Minute,
	MaxRestarts:         1000,
	Window:              time.Minute,
}

// Open opens a host of servers, closed (and its Close checked) when the
// test ends. Zero fields of opts get the test defaults: a temporary
// DataDir, a discarding Logger, FastRestart, 500 ms stop graces.
func Open(t testing.TB, opts mcpvisor.Options, servers ...mcpvisor.ServerConfig) *mcpvisor.Host {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Restart == (mcpvisor.RestartPolicy{}) {
		opts.Restart = FastRestart
	}
	if opts.StopGrace == 0 {
		opts.StopGrace, opts.TermGrace = 500*time.Millisecond, 500*time.Millisecond
	}
	opts.Config = &mcpvisor.Config{Servers: servers}
	h, err := mcpvisor.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}
