package mcpvisor_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// inputServer is an mcptest server that calls itself what the config
// input srv-name answers: its serverInfo shows what the host resolved.
func inputServer() mcpvisor.ServerConfig {
	return mcptest("in", "-name", "${input:srv-name}")
}

var inputDecl = []mcpvisor.ConfigInput{{ID: "srv-name", Type: "promptString", Description: "The server's name"}}

func openInputHost(t *testing.T, opts mcpvisor.Options) (*mcpvisor.Host, error) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.StopGrace, opts.TermGrace = 500*time.Millisecond, 500*time.Millisecond
	opts.Restart = fastRestart
	opts.Config = &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{inputServer()}, Inputs: inputDecl}
	h, err := mcpvisor.Open(context.Background(), opts)
	if err == nil {
		t.Cleanup(func() { _ = h.Close() })
	}
	return h, err
}

func TestInputFromEnvironment(t *testing.T) {
	if got := mcpvisor.InputEnvName("srv-name"); got != "MCPVISOR_INPUT_SRV_NAME" {
		t.Fatalf("InputEnvName = %q", got)
	}
	h, err := openInputHost(t, mcpvisor.Options{DataDir: t.TempDir(), LookupEnv: func(k string) (string, bool) {
		if k == "MCPVISOR_INPUT_SRV_NAME" {
			return "from-env", true
		}
		return "", false
	}})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, h, "in")
	if got := status(t, h, "in").ServerInfo.Name; got != "from-env" {
		t.Errorf("the server was started with name %q, want from-env", got)
	}
}

func TestInputAskedOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	var asked atomic.Int32
	var got mcpvisor.InputRequest
	h, err := openInputHost(t, mcpvisor.Options{DataDir: dir, AskInput: func(_ context.Context, q mcpvisor.InputRequest) (string, error) {
		asked.Add(1)
		got = q
		return "typed", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, h, "in")
	if n := asked.Load(); n != 1 {
		t.Fatalf("asked %d times, want 1", n)
	}
	if got.Server != "in" || got.ID != "srv-name" || got.Description != "The server's name" {
		t.Errorf("asked %+v", got)
	}
	if name := status(t, h, "in").ServerInfo.Name; name != "typed" {
		t.Errorf("server name %q, want typed", name)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	// The next run on the same data directory reuses the answer.
	h, err = openInputHost(t, mcpvisor.Options{DataDir: dir, AskInput: func(context.Context, mcpvisor.InputRequest) (string, error) {
		return "", errors.New("asked again")
	}})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, h, "in")
	if name := status(t, h, "in").ServerInfo.Name; name != "typed" {
		t.Errorf("after a restart the server name is %q, want typed", name)
	}
}

func TestInputThroughInbox(t *testing.T) {
	h, err := openInputHost(t, mcpvisor.Options{DataDir: t.TempDir(), Inbox: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pending []mcpvisor.ElicitationRequest
	for {
		changed := h.ElicitationsChanged()
		if pending = h.Elicitations(); len(pending) > 0 {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("the input never reached the inbox")
		}
	}
	st := status(t, h, "in")
	if st.State != mcpvisor.StateNeedsInput || !strings.Contains(st.LastError, "MCPVISOR_INPUT_SRV_NAME") {
		t.Errorf("waiting server: state %s, error %q", st.State, st.LastError)
	}
	q := pending[0]
	if q.Server != "in" || !strings.Contains(q.Message, "The server's name") {
		t.Errorf("inbox asks %+v", q)
	}
	if err := h.ResolveElicitation(q.ID, "accept", map[string]any{"value": "answered"}); err != nil {
		t.Fatal(err)
	}
	// The answer replaces the placeholder with the server: wait on status
	// changes (WaitReady would return at once on the disabled placeholder).
	for {
		changed := h.StatusChanged()
		if st := status(t, h, "in"); st.State == mcpvisor.StateReady {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("not ready after the answer: %+v", status(t, h, "in"))
		}
	}
	if name := status(t, h, "in").ServerInfo.Name; name != "answered" {
		t.Errorf("server name %q, want answered", name)
	}
}

func TestInputWithNobodyToAsk(t *testing.T) {
	_, err := openInputHost(t, mcpvisor.Options{DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "MCPVISOR_INPUT_SRV_NAME") || !errors.Is(err, mcpvisor.ErrConfig) {
		t.Fatalf("Open = %v; want a config error naming MCPVISOR_INPUT_SRV_NAME", err)
	}
}
