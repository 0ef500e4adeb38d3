package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/peers"
	"github.com/mcpvisor/mcpvisor/internal/testbin"
)

// Binaries of the example servers, built once for the whole package.
var bin struct{ mcptest string }

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{
		"github.com/mcpvisor/mcpvisor/examples/servers/mcptest": &bin.mcptest,
	})
}

// fastRestart keeps restarts short.
var fastRestart = mcpvisor.RestartPolicy{
	InitialInterval:     20 * time.Millisecond,
	MaxInterval:         200 * time.Millisecond,
	RandomizationFactor: -1,
	StableAfter:         time.Minute,
	MaxRestarts:         1000,
	Window:              time.Minute,
}

// openHost opens a host of servers, closed when the test ends.
func openHost(t testing.TB, opts mcpvisor.Options, servers ...mcpvisor.ServerConfig) *mcpvisor.Host {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Restart == (mcpvisor.RestartPolicy{}) {
		opts.Restart = fastRestart
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

func mcptest(name string, args ...string) mcpvisor.ServerConfig {
	return mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: bin.mcptest, Args: append([]string{"-name", name}, args...), Enabled: true}
}

func taskServer(name string, args ...string) mcpvisor.ServerConfig {
	return mcptest(name, append([]string{"-tasks"}, args...)...)
}

func everythingServer(t *testing.T, name string) mcpvisor.ServerConfig {
	t.Helper()
	node, args := peers.Everything(t)
	return mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: node, Args: args, Enabled: true}
}

func featureCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func status(t testing.TB, h *mcpvisor.Host, name string) mcpvisor.ServerStatus {
	t.Helper()
	for _, st := range h.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no status for %q", name)
	return mcpvisor.ServerStatus{}
}

func call(t *testing.T, h *mcpvisor.Host, tool, args string) *mcpvisor.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.Call(ctx, tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Call(%s): %v", tool, err)
	}
	return res
}

func names(sts []mcpvisor.ServerStatus) []string {
	var out []string
	for _, st := range sts {
		out = append(out, fmt.Sprintf("%s:%v", st.Name, st.Enabled))
	}
	return out
}
