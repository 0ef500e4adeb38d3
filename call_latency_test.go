package mcpvisor_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// A call made while its server starts waits for it, and that wait is the
// server's start (Call.ServerStart), not the call's latency: the history
// and the metrics count only the call's own time. The server's start is
// held on a FIFO until the call has entered the pipeline, so the call
// always waits for it.
func TestLatencyLeavesOutServerStart(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	slow := mcpvisor.ServerConfig{Name: "slow", Type: "stdio", Command: "/bin/sh",
		Args:    []string{"-c", `read _ < "$0"; exec "$1" -name slow`, gate, bin.mcptest},
		Enabled: true}
	entered := make(chan *mcpvisor.Call, 1)
	type seen struct {
		latency, serverStart, total time.Duration
	}
	done := make(chan seen, 1)
	observe := func(next mcpvisor.CallFunc) mcpvisor.CallFunc {
		return func(ctx context.Context, c *mcpvisor.Call) (*mcpvisor.Result, error) {
			entered <- c
			res, err := next(ctx, c)
			done <- seen{c.Latency(), c.ServerStart, time.Since(c.Start)}
			return res, err
		}
	}
	h := openHost(t, mcpvisor.Options{CallMiddleware: []mcpvisor.CallMiddleware{observe}}, slow)
	if st := status(t, h, "slow"); st.State == mcpvisor.StateReady {
		t.Fatalf("slow is ready before its gate opened")
	}
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := h.Call(ctx, "mcp__slow__echo", json.RawMessage(`{"text":"hi"}`))
		errc <- err
	}()
	<-entered
	// Opening the FIFO for writing waits for the shell to read it.
	if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("call: %v", err)
	}
	s := <-done
	if s.serverStart <= 0 {
		t.Fatalf("ServerStart %v for a call made before its server could start", s.serverStart)
	}
	// Latency is the total less the start, computed before the total was.
	if s.latency > s.total-s.serverStart {
		t.Errorf("latency %v, want at most the total %v less the server's start %v", s.latency, s.total, s.serverStart)
	}
	if s.serverStart > s.total {
		t.Errorf("server start %v longer than the whole call %v", s.serverStart, s.total)
	}
}
