package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// sdkStdioStep is the part of a line of gateway/testdata/sdk-client.mjs
// this test reads (gateway/sdk_test.go reads them all).
type sdkStdioStep struct {
	Server *struct {
		Name string `json:"name"`
	} `json:"server"`
	Tools       []string `json:"tools"`
	ListChanged int      `json:"listChanged"`
	IsError     bool     `json:"isError"`
	Text        string   `json:"text"`
	Progress    []struct {
		Progress float64 `json:"progress"`
		Total    float64 `json:"total"`
	} `json:"progress"`
	StructuredContent struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	} `json:"structuredContent"`
	Asked    []json.RawMessage `json:"asked"`
	Rejected *struct {
		Message string `json:"message"`
	} `json:"rejected"`
	Errors []string `json:"errors"`
	Exit   *struct {
		Code   *int    `json:"code"`
		Signal *string `json:"signal"`
	} `json:"exit"` // closed: how mcpvisor exited
}

// TestSDKClientStdio has the official TypeScript SDK client launch
// `mcpvisor stdio` (StdioClientTransport) and run a session through it:
// activate_tools and list_changed, a call, progress, an elicitation the
// client answers, a call it aborts (notifications/cancelled), then close,
// which ends mcpvisor's stdin.
func TestSDKClientStdio(t *testing.T) {
	node, sdk := peers.SDKClient(t)
	script, err := filepath.Abs(filepath.Join("..", "..", "gateway", "testdata", "sdk-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, `{"mcpServers":{"a":{"command":"MCPTEST","args":["-name","a"]}}}`)
	plan, err := json.Marshal(map[string]any{
		"sdk": sdk, "transport": "stdio",
		"command": cliBin, "args": []string{"stdio", "--config", cfg, "--data", t.TempDir(), "--lazy"},
		"group": "a", "echoText": "hello over stdio",
		"askArgs":      json.RawMessage(`{"message":"Your name?","schema":{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer","default":7}},"required":["name"]}}`),
		"elicitAnswer": json.RawMessage(`{"name":"Grace"}`),
		"timeoutMs":    (90 * time.Second).Milliseconds(),
	})
	if err != nil {
		t.Fatal(err)
	}
	raw := peers.RunSteps(t, 2*time.Minute, node, script, []string{string(plan)}, nil)
	step := func(name string) sdkStdioStep {
		t.Helper()
		s, ok := raw[name]
		if !ok {
			t.Fatalf("no step %q", name)
		}
		var v sdkStdioStep
		s.Decode(t, &v)
		return v
	}

	if s := step("initialize"); s.Server == nil || s.Server.Name != "mcpvisor" {
		t.Fatalf("initialize: server %+v", s.Server)
	}
	if tools := step("list-before").Tools; len(tools) != 1 || tools[0] != "activate_tools" {
		t.Fatalf("tools before activation: %v", tools)
	}
	if s := step("activate"); s.IsError || !strings.Contains(s.Text, "Active groups: a") {
		t.Fatalf("activate_tools: %+v", s)
	}
	after := step("list-after")
	if after.ListChanged < 1 || !slices.Contains(after.Tools, "mcp__a__echo") || !slices.Contains(after.Tools, "mcp__a__progress") {
		t.Fatalf("after activation: %d list_changed, tools %v", after.ListChanged, after.Tools)
	}
	if s := step("echo"); s.IsError || !strings.Contains(s.Text, `"text":"hello over stdio"`) {
		t.Fatalf("echo: %+v", s)
	}

	// The SDK's stdio transport may drop a progress notification that
	// arrives in the same read as the call's response: it handles the
	// response at once and the notification a microtask later, when the
	// call's progress handler is gone (modelcontextprotocol/typescript-sdk
	// issue 2580). So any number up to 3 is right here; the result is not.
	prog := step("progress")
	if prog.IsError || prog.Text != "done after 3 steps" || len(prog.Progress) > 3 {
		t.Fatalf("progress: %+v", prog)
	}
	for i, p := range prog.Progress {
		if p.Total != 3 || (i > 0 && p.Progress <= prog.Progress[i-1].Progress) {
			t.Fatalf("progress notifications %+v", prog.Progress)
		}
	}

	el := step("elicit")
	if len(el.Asked) != 1 || el.IsError {
		t.Fatalf("elicit: asked %d times, %+v", len(el.Asked), el)
	}
	if got := el.StructuredContent; got.Action != "accept" || got.Content["name"] != "Grace" || got.Content["n"] != float64(7) {
		t.Fatalf("the server received %+v", got)
	}

	if s := step("abort-streaming"); len(s.Progress) != 1 || s.Rejected == nil || !strings.Contains(s.Rejected.Message, "aborts the streaming call") {
		t.Fatalf("the aborted call: %+v", s)
	}
	step("ping")
	if s := step("echo-again"); s.IsError || !strings.Contains(s.Text, "hello over stdio again") {
		t.Fatalf("echo after the abort: %+v", s)
	}
	// At the end of its stdin mcpvisor ends the session and exits 0, within
	// the 2 s the SDK gives it before SIGTERM.
	if exit := step("closed").Exit; exit == nil || exit.Code == nil || *exit.Code != 0 || exit.Signal != nil {
		t.Errorf("mcpvisor stdio exited %+v, want code 0 at the end of its input", exit)
	}
	// No response to the aborted call, nor anything else the SDK could not
	// place, save the progress issue 2580 drops.
	for _, name := range []string{"errors", "closed"} {
		for _, e := range step(name).Errors {
			if !strings.HasPrefix(e, "Received a progress notification for an unknown token") {
				t.Errorf("%s: the SDK reported %q", name, e)
			}
		}
	}
}
