package mcpvisor

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// The host's own stages of its request pipeline (package pipeline tests
// the rest), on a host with a real journal and no servers.

func openBareHost(t testing.TB, opts Options) *Host {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	h, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func TestHostToolStage(t *testing.T) {
	for _, hide := range []bool{false, true} {
		h := openBareHost(t, Options{NoHostTools: hide})
		calls := 0
		next := func(context.Context, *Call) (*Result, error) { calls++; return &Result{}, nil }
		c := h.pipe.NewCall(Scope{}, ToolList, json.RawMessage(`{"type":"mcp"}`), nil)
		res, err := h.hostToolStage(next)(context.Background(), c)
		if hide {
			// With NoHostTools the host builds no such stage: its tools go
			// on to the servers, which know none of them.
			if _, err := h.Call(context.Background(), ToolList, json.RawMessage(`{"type":"mcp"}`)); !errors.Is(err, ErrUnknownTool) && !errors.Is(err, ErrUnknownServer) {
				t.Errorf("NoHostTools: %s answered %v", ToolList, err)
			}
			continue
		}
		if err != nil || res == nil || res.IsError || calls != 0 {
			t.Errorf("%s: %v %+v, next called %d times", ToolList, err, res, calls)
		}
	}
}

// An embedder's stage that answers neither a result nor an error gets
// ErrNoResult, and the stages around it (the history) do not fail on it.
func TestEmbedderStageWithoutAnswer(t *testing.T) {
	silent := func(CallFunc) CallFunc {
		return func(context.Context, *Call) (*Result, error) { return nil, nil }
	}
	h := openBareHost(t, Options{CallMiddleware: []CallMiddleware{silent}})
	res, err := h.Call(context.Background(), "mcp__a__t", nil)
	if res != nil || !errors.Is(err, ErrNoResult) || !strings.Contains(err.Error(), "mcp__a__t") {
		t.Errorf("got %+v, %v; want ErrNoResult naming the tool", res, err)
	}
}
