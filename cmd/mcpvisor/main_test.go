package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/mcphttptest"
	"github.com/mcpvisor/mcpvisor/internal/testbin"
)

var notesBin, mcptestBin, cliBin, conformanceBin string

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{
		"github.com/mcpvisor/mcpvisor/cmd/mcpvisor":             &cliBin,
		"github.com/mcpvisor/mcpvisor/examples/servers/mcptest": &mcptestBin,
		"github.com/mcpvisor/mcpvisor/examples/servers/notes":   &notesBin,
		"github.com/mcpvisor/mcpvisor/examples/conformance":     &conformanceBin,
	})
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	body = strings.ReplaceAll(body, "NOTES", notesBin)
	body = strings.ReplaceAll(body, "MCPTEST", mcptestBin)
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCLIData(t, t.TempDir(), args...)
}

// runCLIData runs the CLI on the data directory dir.
func runCLIData(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runArgs(append(args, "--data", dir)...)
}

const twoServers = `{"mcpServers": {
  "notes": {"command": "NOTES", "description": "notes"},
  "off": {"command": "NOTES", "disabled": true}
}}`

func TestToolsJSON(t *testing.T) {
	cfg := writeConfig(t, twoServers)
	out, errOut, code := runCLI(t, "tools", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var tools []map[string]any
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, out)
	}
	found := false
	for _, tl := range tools {
		for _, k := range []string{"name", "server", "tool", "description", "destructive"} {
			if _, ok := tl[k]; !ok {
				t.Errorf("tool %v lacks %q", tl["name"], k)
			}
		}
		if tl["name"] == "mcp__notes__add" {
			found = tl["server"] == "notes" && tl["tool"] == "add" && tl["destructive"] == false
		}
		if tl["server"] == "off" {
			t.Errorf("disabled server's tool listed: %v", tl["name"])
		}
	}
	if !found {
		t.Errorf("mcp__notes__add missing or wrong in %s", out)
	}
}

func TestCall(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {
	  "notes": {"command": "NOTES"},
	  "broken": {"command": "/nonexistent/server"}
	}}`)
	out, errOut, code := runCLI(t, "call", "--config", cfg, "mcp__notes__add", `{"a":2,"b":40}`)
	if code != 0 || strings.TrimSpace(out) != "42" {
		t.Fatalf("call add: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Flags after the positional arguments work too.
	out, _, code = runCLI(t, "call", "--config", cfg, "mcp__notes__add", `{"a":1,"b":1}`, "--json")
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["wire"] != "2" || res["type"] != "string" {
		t.Fatalf("call --json: exit %d, %q", code, out)
	}
	// A tool error: reason on stderr, non-zero exit, nothing on stdout.
	out, errOut, code = runCLI(t, "call", "--config", cfg, "mcp__notes__divide", `{"a":1,"b":0}`)
	if code == 0 || out != "" || !strings.Contains(errOut, "returned an error") {
		t.Errorf("divide by zero: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"mcp__nope__x"}},
		{[]string{"not-namespaced"}},
		{[]string{"mcp__notes__add", "{bad json"}},
	} {
		_, errOut, code := runCLI(t, append([]string{"call", "--config", cfg}, tc.args...)...)
		if code == 0 || errOut == "" {
			t.Errorf("call %v: exit %d, stderr %q; want a failure with a reason", tc.args, code, errOut)
		}
	}
	_, errOut, code = runCLI(t, "call", "--config", cfg, "mcp__broken__x")
	if code == 0 || !strings.Contains(errOut, "broken") {
		t.Errorf("call to a server that cannot start: exit %d, stderr %q", code, errOut)
	}
}

func TestStatus(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {
	  "notes": {"command": "NOTES"},
	  "old": {"command": "MCPTEST", "args": ["-version", "1999-01-01"]},
	  "off": {"command": "NOTES", "enabled": false}
	}}`)
	// An enabled server is not ready: exit 1, the states printed all the
	// same, and the one not ready named on stderr.
	out, errOut, code := runCLI(t, "status", "--config", cfg, "--json", "--wait", "20s")
	if code != 1 || !strings.Contains(errOut, `server "old" is failed`) || strings.Contains(errOut, `"notes"`) {
		t.Fatalf("exit %d, stderr %q; want 1 and old named", code, errOut)
	}
	var sts []map[string]any
	if err := json.Unmarshal([]byte(out), &sts); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, st := range sts {
		states[st["name"].(string)] = st["state"].(string)
	}
	want := map[string]string{"notes": "ready", "old": "failed", "off": "disabled"}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("%s is %q, want %q (all: %v)", k, states[k], v, states)
		}
	}
	out, _, _ = runCLI(t, "status", "--config", cfg)
	if !strings.Contains(out, "SERVER") || !strings.Contains(out, "unsupported protocol version") {
		t.Errorf("status table:\n%s", out)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"bad json", `{"mcpServers": {"a": {"command": "x",}`, "config:"},
		{"missing command", `{"mcpServers": {"a": {"args": []}}}`, `server "a": field "command"`},
		{"disabled invalid", `{"mcpServers": {"a": {"command": "x", "url": "http://h/", "disabled": true}}}`, `server "a"`},
		{"bad name", `{"mcpServers": {"a__b": {"command": "x"}}}`, `a__b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeConfig(t, tt.body)
			_, errOut, code := runCLI(t, "tools", "--config", cfg)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want it to mention %q", code, errOut, tt.want)
			}
		})
	}
	_, errOut, code := runCLI(t, "tools", "--config", "/nonexistent/mcp.json")
	if code == 0 || !strings.Contains(errOut, "/nonexistent/mcp.json") {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
	if _, _, code := runCLI(t, "tools"); code != 2 {
		t.Errorf("no --config: exit %d, want 2", code)
	}
	if _, errOut, code := runCLI(t, "frobnicate", "--config", "x"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
}

// A remote server works through the CLI exactly as a stdio one.
func TestHTTPServer(t *testing.T) {
	srv := mcphttptest.Start(t, &mcphttptest.Server{SSE: true})
	cfg := writeConfig(t, `{"mcpServers": {"web": {"type": "http", "url": "`+srv.URL+`", "allowPrivate": true}}}`)
	out, errOut, code := runCLI(t, "tools", "--config", cfg)
	if code != 0 || !strings.Contains(out, "mcp__web__echo") {
		t.Fatalf("tools: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "call", "--config", cfg, "mcp__web__echo", `{"via":"http"}`)
	if code != 0 || out != "{\n  \"via\": \"http\"\n}\n" {
		t.Fatalf("call: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Without allowPrivate too: the user's own file may name a loopback
	// server (one the API or a model registers may not).
	cfg = writeConfig(t, `{"mcpServers": {"web": {"type": "http", "url": "`+srv.URL+`"}}}`)
	out, errOut, code = runCLI(t, "call", "--config", cfg, "mcp__web__echo", `{"via":"loopback"}`)
	if code != 0 || !strings.Contains(out, "loopback") || strings.Contains(errOut, "allowPrivate") {
		t.Errorf("call without allowPrivate: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestEventsAckAndHistory(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"m": {"command": "MCPTEST"}}}`)
	dir := t.TempDir()
	if _, errOut, code := runCLIData(t, dir, "call", "--config", cfg, "mcp__m__notify"); code != 0 {
		t.Fatalf("call: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCLIData(t, dir, "events", "--pending", "--json")
	if code != 0 {
		t.Fatalf("events: exit %d: %s", code, errOut)
	}
	var evs []struct {
		ID     uint64          `json:"id"`
		Server string          `json:"server"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Status string          `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &evs); err != nil || len(evs) != 1 {
		t.Fatalf("events --pending --json = %q (%v), want an array of one", out, err)
	}
	if ev := evs[0]; ev.Server != "m" || ev.Method != "event/test" || string(ev.Params) != `{"n":1}` || ev.Status != "pending" || ev.ID == 0 {
		t.Fatalf("events --pending --json = %q", out)
	}
	ev := evs[0]
	if out, _, code := runCLIData(t, dir, "events", "--json", "--server", "nobody"); code != 0 || out != "[]\n" {
		t.Errorf("events --json with none: exit %d, %q, want []", code, out)
	}
	if _, errOut, code := runCLIData(t, dir, "events", "ack", strconv.FormatUint(ev.ID, 10)); code != 0 {
		t.Fatalf("events ack: exit %d: %s", code, errOut)
	}
	if out, _, _ := runCLIData(t, dir, "events", "--pending"); strings.TrimSpace(out) != "" {
		t.Errorf("pending after ack: %q", out)
	}
	if out, _, _ := runCLIData(t, dir, "events"); !strings.Contains(out, "event/test") || !strings.Contains(out, "processed") {
		t.Errorf("events after ack: %q", out)
	}
	if _, errOut, code := runCLIData(t, dir, "events", "ack", "424242"); code == 0 || !strings.Contains(errOut, "424242") {
		t.Errorf("ack of an unknown id: exit %d, %q", code, errOut)
	}
	// --json is json.Marshal of the journal's records, camelCase.
	out, _, _ = runCLIData(t, dir, "events", "--json", "--method", "event/test")
	var acked []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &acked); err != nil || len(acked) != 1 || acked[0]["processedAt"] == nil || acked[0]["processed_at"] != nil {
		t.Errorf("events --json after ack = %q (%v), want processedAt", out, err)
	}
	out, errOut, code = runCLIData(t, dir, "history", "--calls", "--json")
	if code != 0 {
		t.Fatalf("history --calls --json: exit %d: %s", code, errOut)
	}
	j, err := mcpvisor.OpenJournal(dir, mcpvisor.JournalOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := j.History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall, Limit: 50, Newest: true})
	j.Close()
	if err != nil || len(recs) == 0 {
		t.Fatalf("history: %d records (%v)", len(recs), err)
	}
	var got []json.RawMessage
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != len(recs) {
		t.Fatalf("history --calls --json is not an array of %d: %v\n%s", len(recs), err, out)
	}
	for i, r := range slices.Backward(recs) { // the newest first
		if b, _ := json.Marshal(r); string(got[len(recs)-1-i]) != string(b) {
			t.Errorf("history --calls --json [%d] = %s, want json.Marshal of the records, the newest first: %s", len(recs)-1-i, got[len(recs)-1-i], b)
		}
	}
	if !strings.Contains(out, `"durationNs":`) {
		t.Errorf("history --calls --json: %s", out)
	}

	out, _, code = runCLIData(t, dir, "history")
	for _, want := range []string{"spawned", "ready", "stopped"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("history lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	if stopped, spawned := strings.Index(out, "stopped"), strings.LastIndex(out, "spawned"); stopped > spawned {
		t.Errorf("history is not the newest first (stopped after spawned):\n%s", out)
	}
	out, _, _ = runCLIData(t, dir, "history", "--calls")
	if !strings.Contains(out, "mcp__m__notify") || !strings.Contains(out, "ok") {
		t.Errorf("history --calls:\n%s", out)
	}
}

// A server registered through the API is in the registry: call finds it
// without the config file naming it.
func TestCallFindsRegistryOnlyServerAndLockedJournal(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: dir, Config: &mcpvisor.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Register(context.Background(), mcpvisor.ServerConfig{Name: "later", Command: notesBin, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	// While that host runs, the journal is locked: the CLI says so.
	_, errOut, code := runCLIData(t, dir, "events")
	if code == 0 || !strings.Contains(errOut, filepath.Join(dir, "journal")) || !strings.Contains(errOut, "another mcpvisor") {
		t.Errorf("events on a held journal: exit %d, %q", code, errOut)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLIData(t, dir, "call", "--config", cfg, "mcp__later__add", `{"a":2,"b":3}`)
	if code != 0 || strings.TrimSpace(out) != "5" {
		t.Errorf("call of a registry-only server: exit %d, %q, %q", code, out, errOut)
	}
}

// events --follow runs the servers and prints their events as they are
// journaled, until interrupted.
func TestEventsFollow(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"m": {"command": "MCPTEST", "args": ["-event-at-start"]}}}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"events", "--follow", "--json", "--config", cfg, "--data", t.TempDir()}, pw, io.Discard)
		pw.Close()
		done <- err
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("events --follow printed nothing: %v", <-done)
	}
	if line := sc.Text(); !strings.Contains(line, `"method":"event/test"`) || !strings.Contains(line, `"params":{"n":0}`) {
		t.Errorf("followed event = %s", line)
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if err := <-done; err != nil {
		t.Errorf("events --follow after interrupt: %v", err)
	}
	if _, errOut, code := runCLI(t, "events", "--follow"); code != 2 || !strings.Contains(errOut, "--config") {
		t.Errorf("events --follow without --config: exit %d, %q", code, errOut)
	}
}

// runArgs runs the CLI in this process on exactly args.
func runArgs(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	if err != nil {
		code = exitCode(err)
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), code
}
