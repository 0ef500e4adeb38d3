package sidecar_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// A server that stops reading its stdin is found out and leaves ready:
// /readyz answers 503 and names it, in backoff, until it is ready again.
func TestReadyzWhenServerStopsReading(t *testing.T) {
	deaf := mcptest("deaf", "-stop-reading-after-list")
	deaf.Timeout = mcpvisor.Duration(time.Minute)
	// A backoff of an hour holds the server out of ready while /readyz is asked.
	slow := mcpvisor.RestartPolicy{InitialInterval: time.Hour, MaxInterval: time.Hour, RandomizationFactor: -1}
	a := openAPIHost(t, mcpvisor.Options{Restart: slow}, sidecar.Options{}, deaf, mcptest("ok"))
	if r := a.do("GET", "/readyz", nil); r.status != http.StatusOK {
		t.Fatalf("readyz before: %d %s", r.status, r.body)
	}
	// Two frames over a pipe's size: the server may swallow the first as it
	// stops reading; the second's write blocks.
	big := json.RawMessage(`{"pad":"` + strings.Repeat("x", 256<<10) + `"}`)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := a.h.Call(context.Background(), "mcp__deaf__echo", big)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, mcpvisor.ErrNotReading) {
			t.Fatalf("call to a server that stopped reading = %v, want ErrNotReading", err)
		}
	}
	var body struct {
		Status   string `json:"status"`
		NotReady []struct {
			Name, State string
		} `json:"notReady"`
	}
	// The calls fail as the actor drops the connection, just before it
	// publishes the state.
	eventually(t, "readyz to answer 503", func() bool {
		r := a.do("GET", "/readyz", nil)
		r.json(t, &body)
		return r.status == http.StatusServiceUnavailable
	})
	if body.Status != "not_ready" || len(body.NotReady) != 1 || body.NotReady[0].Name != "deaf" || body.NotReady[0].State != string(mcpvisor.StateBackoff) {
		t.Errorf("readyz = %+v, want deaf not ready, in backoff", body)
	}
	if r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__ok__echo", "arguments": map[string]any{}}); r.status != http.StatusOK {
		t.Errorf("a call to the neighbour: %d %s", r.status, r.body)
	}
}
