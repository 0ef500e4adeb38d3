package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/hosttest"
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

var fastRestart = hosttest.FastRestart

// openHost opens a host of servers, closed when the test ends.
func openHost(t testing.TB, opts mcpvisor.Options, servers ...mcpvisor.ServerConfig) *mcpvisor.Host {
	t.Helper()
	return hosttest.Open(t, opts, servers...)
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
