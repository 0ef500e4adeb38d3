package mcpvisor_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// TestMeasureNeighbourOfEndlessOutput measures a healthy server's call
// rate alone, then in the seconds after another server began writing a
// line without end, and logs both. It is a measurement, not a test of
// timing: set MCPVISOR_MEASURE=1 to run it, and run it without -race.
func TestMeasureNeighbourOfEndlessOutput(t *testing.T) {
	if os.Getenv("MCPVISOR_MEASURE") == "" {
		t.Skip("a measurement: set MCPVISOR_MEASURE=1")
	}
	const window = 3 * time.Second
	endless := mcptest("endless", "-endless-output")
	endless.Timeout = mcpvisor.Duration(time.Hour)
	h := openHost(t, mcpvisor.Options{Logger: slog.New(slog.DiscardHandler)}, endless, mcptest("ok"))
	waitReady(t, h)

	rate := func() float64 {
		var calls atomic.Int64
		end := time.Now().Add(window)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for time.Now().Before(end) {
					if _, err := h.Call(context.Background(), "mcp__ok__echo", json.RawMessage(`{"n":1}`)); err != nil {
						t.Errorf("neighbour: %v", err)
						return
					}
					calls.Add(1)
				}
			})
		}
		wg.Wait()
		return float64(calls.Load()) / window.Seconds()
	}
	alone := rate()
	failed := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		_, err := h.Call(context.Background(), "mcp__endless__echo", json.RawMessage(`{}`))
		t.Logf("the endless call ended after %s: %v", time.Since(start).Round(time.Millisecond), err)
		failed <- time.Since(start)
	}()
	during := rate()
	after := rate()
	t.Logf("neighbour calls/s: alone %.0f; first %s after the endless output began %.0f (%.0f%%); the next %s %.0f (%.0f%%)",
		alone, window, during, 100*during/alone, window, after, 100*after/alone)
	select {
	case <-failed:
	case <-time.After(10 * time.Second):
		t.Log("the endless call has not ended")
	}
}
