package mcpvisor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// WaitSettled returns at each server's first outcome, real processes
// behind them: a command that is not found at once, a server that never
// answers at its startupTimeout, a good one when ready. The restart delay
// is an hour, so WaitReady would still be waiting; the test's deadline is
// far beyond any startup, so only the settling can end the wait.
func TestWaitSettled(t *testing.T) {
	silent := mcptest("silent", "-hang-init")
	silent.StartupTimeout = mcpvisor.Duration(time.Second)
	off := mcptest("off")
	off.Enabled = false
	h := openHost(t, mcpvisor.Options{Restart: mcpvisor.RestartPolicy{InitialInterval: time.Hour, MaxInterval: time.Hour, RandomizationFactor: -1}},
		mcpvisor.ServerConfig{Name: "missing", Type: "stdio", Command: "/nonexistent/server", Enabled: true},
		silent, mcptest("good"), off)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := h.WaitSettled(ctx); err != nil {
		t.Fatalf("WaitSettled: %v", err)
	}
	for _, want := range []struct {
		name    string
		state   mcpvisor.State
		lastErr string
	}{
		{"missing", mcpvisor.StateBackoff, "/nonexistent/server"},
		{"silent", mcpvisor.StateBackoff, "startup timeout"},
		{"good", mcpvisor.StateReady, ""},
		{"off", mcpvisor.StateDisabled, ""},
	} {
		st := status(t, h, want.name)
		if st.State != want.state || !strings.Contains(st.LastError, want.lastErr) {
			t.Errorf("%s: %s (%q), want %s with %q", want.name, st.State, st.LastError, want.state, want.lastErr)
		}
	}
	// Named servers, a disabled one among them, settle alike.
	if err := h.WaitSettled(ctx, "missing", "off"); err != nil {
		t.Errorf("WaitSettled(missing, off): %v", err)
	}
	if err := h.WaitSettled(ctx, "nope"); !errors.Is(err, mcpvisor.ErrUnknownServer) {
		t.Errorf("WaitSettled(nope): %v, want ErrUnknownServer", err)
	}
}

// A server still starting when ctx ends is named in the error.
func TestWaitSettledContextEnds(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcptest("silent", "-hang-init"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := h.WaitSettled(ctx)
	if !errors.Is(err, mcpvisor.ErrUnavailable) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "silent") {
		t.Errorf("WaitSettled with an ended ctx: %v, want ErrUnavailable, context.Canceled and the server's name", err)
	}
}
