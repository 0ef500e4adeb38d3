package mcpvisor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/hosttools"
	"github.com/mcpvisor/mcpvisor/internal/mcphttptest"
)

// The public names of the host tools are the ones internal/hosttools
// serves: the root spells them out so that go doc shows them.
func TestHostToolNamesMatch(t *testing.T) {
	for _, p := range [][2]string{
		{mcpvisor.ToolActivate, hosttools.Activate}, {mcpvisor.ToolSearch, hosttools.Search},
		{mcpvisor.ToolRegister, hosttools.Register}, {mcpvisor.ToolDelete, hosttools.Delete},
		{mcpvisor.ToolToggle, hosttools.Toggle}, {mcpvisor.ToolList, hosttools.List},
	} {
		if p[0] != p[1] || !mcpvisor.IsHostTool(p[0]) {
			t.Errorf("root name %q, hosttools name %q", p[0], p[1])
		}
	}
	if mcpvisor.ConfigGroup != hosttools.ConfigGroup {
		t.Errorf("ConfigGroup %q, hosttools.ConfigGroup %q", mcpvisor.ConfigGroup, hosttools.ConfigGroup)
	}
}

func toolNames(tools []mcpvisor.Tool) []string {
	out := make([]string, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// hostCall calls a tool for the session and fails the test on a Go error.
func hostCall(t *testing.T, s mcpvisor.Session, tool string, args any) *mcpvisor.Result {
	t.Helper()
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Call(ctx, tool, raw)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

type serverItem struct {
	Name         string `json:"name"`
	FriendlyName string `json:"friendly_name"`
	Description  string `json:"description"`
	Transport    string `json:"transport"`
	Enabled      bool   `json:"enabled"`
	State        string `json:"state"`
	Tools        int    `json:"tools"`
	LastError    string `json:"last_error"`
}

func listItems(t *testing.T, s mcpvisor.Session) map[string]serverItem {
	t.Helper()
	res := hostCall(t, s, mcpvisor.ToolList, map[string]any{"type": "mcp"})
	if res.IsError || res.Type != mcpvisor.ResultJSON {
		t.Fatalf("list_items: %s", res.Wire())
	}
	var v struct {
		Items []serverItem `json:"items"`
	}
	if err := json.Unmarshal(res.JSON, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]serverItem{}
	for _, it := range v.Items {
		out[it.Name] = it
	}
	return out
}

// grepTree lists the files under dir, but skip, that hold needle.
func grepTree(t *testing.T, dir, skip, needle string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == skip {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(needle)) {
			hits = append(hits, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestHostToolsManageServers is the model's view: activate config, register
// a server with a secret in its environment, list it, call it, disable,
// enable and delete it, with host restarts between, and find the secret
// nowhere but the secret store.
func TestHostToolsManageServers(t *testing.T) {
	data := t.TempDir()
	const secret = "-version 2025-06-18" // mcptest reads flags from MCPTEST_ARGS
	var logs bytes.Buffer
	var logMu sync.Mutex
	opts := mcpvisor.Options{DataDir: data, Journal: mcpvisor.JournalOptions{KeepCallPayloads: true},
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug - 8}))}
	h := openHost(t, opts, mcptest("a"))
	waitReady(t, h, "a")
	s := h.Session("chat", "")

	if got := toolNames(s.Tools()); !slices.Equal(got, []string{mcpvisor.ToolActivate}) {
		t.Fatalf("a new session's tools: %v, want only activate_tools", got)
	}
	if _, err := s.Call(context.Background(), mcpvisor.ToolRegister, json.RawMessage(`{}`)); !errors.Is(err, mcpvisor.ErrNotGranted) {
		t.Fatalf("register_mcp before activating config: %v, want ErrNotGranted", err)
	}
	if res := hostCall(t, s, mcpvisor.ToolActivate, map[string]any{"groups": []string{"config"}}); res.IsError || !strings.Contains(res.Text, "Active groups: config") {
		t.Fatalf("activate config: %s", res.Wire())
	}
	want := []string{mcpvisor.ToolActivate, mcpvisor.ToolRegister, mcpvisor.ToolDelete, mcpvisor.ToolToggle, mcpvisor.ToolList}
	if got := toolNames(s.Tools()); !slices.Equal(got, want) {
		t.Fatalf("tools with config: %v, want %v", got, want)
	}
	if other := toolNames(h.Session("other", "").Tools()); len(other) != 1 {
		t.Errorf("another session sees %v: grants leak", other)
	}

	res := hostCall(t, s, mcpvisor.ToolRegister, map[string]any{
		"name": "b", "transport": "stdio", "command": bin.mcptest, "args": []string{"-name", "b"},
		"env": map[string]string{"MCPTEST_ARGS": secret}, "description": "A test server", "friendly_name": "Bee",
	})
	var reg struct {
		Name  string   `json:"name"`
		State string   `json:"state"`
		Tools []string `json:"tools"`
	}
	if err := json.Unmarshal(res.JSON, &reg); err != nil || res.IsError {
		t.Fatalf("register_mcp: %s (%v)", res.Wire(), err)
	}
	if reg.State != "ready" || !slices.Contains(reg.Tools, "mcp__b__echo") {
		t.Fatalf("register_mcp answered %+v, want b ready with mcp__b__echo", reg)
	}
	if st := status(t, h, "b"); st.ProtocolVersion != "2025-06-18" {
		t.Errorf("b negotiated %q: its env did not reach it", st.ProtocolVersion)
	}
	if desc := s.Tools()[0].Description; !strings.Contains(desc, "Groups: a, b.") {
		t.Errorf("activate_tools' description does not name the new server: %q", desc)
	}
	items := listItems(t, s)
	if b := items["b"]; b.FriendlyName != "Bee" || b.Description != "A test server" || b.Transport != "stdio" ||
		!b.Enabled || b.State != "ready" || b.Tools == 0 {
		t.Errorf("list_items b = %+v", b)
	}
	if _, ok := items["a"]; !ok {
		t.Errorf("list_items lacks a: %v", items)
	}

	if _, err := s.Call(context.Background(), "mcp__b__echo", json.RawMessage(`{"text":"hi"}`)); !errors.Is(err, mcpvisor.ErrNotGranted) {
		t.Fatalf("b's tool before activating b: %v", err)
	}
	hostCall(t, s, mcpvisor.ToolActivate, map[string]any{"groups": []string{"b"}})
	if res := hostCall(t, s, "mcp__b__echo", map[string]any{"text": "hi"}); res.IsError || !strings.Contains(res.Text, "hi") {
		t.Fatalf("echo through b: %s", res.Wire())
	}

	res = hostCall(t, s, mcpvisor.ToolToggle, map[string]any{"kind": "mcp", "id": "b", "enabled": false})
	if res.IsError || status(t, h, "b").State != mcpvisor.StateDisabled {
		t.Fatalf("toggle off: %s; b is %s", res.Wire(), status(t, h, "b").State)
	}
	if slices.ContainsFunc(s.Tools(), func(t mcpvisor.Tool) bool { return t.Server == "b" }) {
		t.Errorf("b's tools are still listed once it is disabled: %v", toolNames(s.Tools()))
	}
	res = hostCall(t, s, mcpvisor.ToolToggle, map[string]any{"kind": "mcp", "id": "b", "enabled": true})
	if res.IsError || !strings.Contains(res.Text, "ready") {
		t.Fatalf("toggle on: %s", res.Wire())
	}

	// A restart: the registry, the grants and b's secret come back.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = openHost(t, opts, mcptest("a"))
	waitReady(t, h, "a", "b")
	s = h.Session("chat", "")
	if st := status(t, h, "b"); st.ProtocolVersion != "2025-06-18" {
		t.Errorf("after a restart b negotiated %q: its secret env was not restored", st.ProtocolVersion)
	}
	if res := hostCall(t, s, "mcp__b__echo", map[string]any{"text": "again"}); res.IsError {
		t.Fatalf("echo through b after a restart: %s", res.Wire())
	}
	hits := grepTree(t, data, filepath.Join(data, "secrets.json"), secret)
	logMu.Lock()
	inLogs := strings.Contains(logs.String(), secret)
	logMu.Unlock()
	if len(hits) > 0 || inLogs {
		t.Errorf("the secret env value is in %v (logs: %v); it belongs in secrets.json only", hits, inLogs)
	}
	if fi, err := os.Stat(filepath.Join(data, "secrets.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secrets.json: %v, mode %v", err, fi.Mode())
	}
	hist, err := h.Journal().History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall})
	if err != nil {
		t.Fatal(err)
	}
	var registered, refused bool
	for _, r := range hist {
		if r.Tool == mcpvisor.ToolRegister && strings.Contains(r.Error, "not granted") {
			refused = true // the call before config was activated: history too
			continue
		}
		if r.Tool == mcpvisor.ToolRegister {
			registered = true
			if !strings.Contains(string(r.Arguments), `"MCPTEST_ARGS":"(redacted)"`) {
				t.Errorf("register_mcp's history arguments: %s", r.Arguments)
			}
		}
	}
	if !refused {
		t.Error("no call record of the register_mcp refused for want of a grant")
	}
	if !registered {
		t.Error("no call record of register_mcp")
	}

	res = hostCall(t, s, mcpvisor.ToolDelete, map[string]any{"name": "b"})
	if res.IsError {
		t.Fatalf("delete_mcp: %s", res.Wire())
	}
	if _, ok := listItems(t, s)["b"]; ok {
		t.Fatal("b is still listed after delete_mcp")
	}
	if b, _ := os.ReadFile(filepath.Join(data, "secrets.json")); bytes.Contains(b, []byte(secret)) {
		t.Error("b's secret outlived it")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = openHost(t, opts, mcptest("a"))
	if slices.ContainsFunc(h.Status(), func(st mcpvisor.ServerStatus) bool { return st.Name == "b" }) {
		t.Fatal("b came back after a restart")
	}
}

func TestHostToolArgumentErrors(t *testing.T) {
	h := openHost(t, mcpvisor.Options{AlwaysOn: []string{mcpvisor.ConfigGroup}}, mcptest("a"))
	s := h.Session("chat", "")
	for _, tt := range []struct {
		tool string
		args string
		want string
	}{
		{mcpvisor.ToolRegister, `{"transport":"stdio","command":"x"}`, `field "name": required`},
		{mcpvisor.ToolRegister, `{"name":"x","transport":"ftp"}`, `field "transport"`},
		{mcpvisor.ToolRegister, `{"name":"x","transport":"stdio"}`, `field "command": required`},
		{mcpvisor.ToolRegister, `{"name":"x","transport":"stdio","command":"x","url":"https://e.com"}`, `field "url": only for http and sse`},
		{mcpvisor.ToolRegister, `{"name":"x","transport":"http","url":"https://e.com","env":{"A":"b"}}`, `field "env": only for stdio`},
		{mcpvisor.ToolRegister, `{"name":"x","transport":"http","url":"ftp://e.com"}`, `field "url"`},
		{mcpvisor.ToolRegister, `{"name":"x","transport":"stdio","command":"x","args":["${HOME}"]}`, `field "args[0]": ${...} references`},
		{mcpvisor.ToolRegister, `{"name":"x","transport":"stdio","command":"x","cwd":"/"}`, `unknown field "cwd"`},
		{mcpvisor.ToolRegister, `{"name":"config","transport":"stdio","command":"x"}`, `reserved`},
		{mcpvisor.ToolRegister, `{"name":"x","transport":"stdio","command":"x","args":"-v"}`, `field "args"`},
		{mcpvisor.ToolDelete, `{"name":"nope"}`, `no server is named "nope" (servers: a)`},
		{mcpvisor.ToolToggle, `{"kind":"cron","id":"a","enabled":true}`, `the kinds are: "mcp"`},
		{mcpvisor.ToolToggle, `{"kind":"mcp","id":"a"}`, `field "enabled": required`},
		{mcpvisor.ToolList, `{"type":"plugins"}`, `the types are: "mcp"`},
		{mcpvisor.ToolActivate, `{"groups":[]}`, `at least one group`},
		{mcpvisor.ToolActivate, `{"groups":["nope"]}`, `unknown tool group`},
	} {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			res, err := s.Call(context.Background(), tt.tool, json.RawMessage(tt.args))
			if err != nil {
				t.Fatalf("a Go error, want a tool error the model reads: %v", err)
			}
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Errorf("got %q (isError %v), want an error containing %q", res.Text, res.IsError, tt.want)
			}
		})
	}
	if got := len(h.Status()); got != 1 {
		t.Errorf("%d servers after only bad calls", got)
	}
}

func TestHostToolsOff(t *testing.T) {
	h := openHost(t, mcpvisor.Options{NoHostTools: true}, mcptest("a"))
	s := h.Session("chat", "")
	if got := s.Tools(); len(got) != 0 {
		t.Fatalf("tools with NoHostTools: %v", toolNames(got))
	}
	if _, err := s.Call(context.Background(), mcpvisor.ToolActivate, json.RawMessage(`{"groups":["a"]}`)); !errors.Is(err, mcpvisor.ErrUnknownTool) {
		t.Fatalf("activate_tools with NoHostTools: %v, want ErrUnknownTool", err)
	}
}

// TestApproveHookSeesTheCommandLine: every host-tool call reaches the hook
// with its full arguments; a stdio registration shows its exact command
// line, and the summary names env variables without their values.
func TestApproveHookSeesTheCommandLine(t *testing.T) {
	var mu sync.Mutex
	var seen []mcpvisor.ApprovalRequest
	allow := false
	h := openHost(t, mcpvisor.Options{AlwaysOn: []string{mcpvisor.ConfigGroup},
		Approve: func(_ context.Context, req *mcpvisor.ApprovalRequest) (mcpvisor.ApprovalDecision, error) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, *req)
			return mcpvisor.ApprovalDecision{Allow: allow, Reason: "not on a Friday"}, nil
		}}, mcptest("a"))
	s := h.Session("chat", "")
	args := map[string]any{"name": "c", "transport": "stdio", "command": bin.mcptest,
		"args": []string{"-name", "it's c", "x\u202eevil"}, "env": map[string]string{"TOKEN": "tok-123"}}
	res := hostCall(t, s, mcpvisor.ToolRegister, args)
	if !res.IsError || !strings.Contains(res.Text, "not approved (denied: not on a Friday)") {
		t.Fatalf("a denied register_mcp answered %q", res.Text)
	}
	if slices.ContainsFunc(h.Status(), func(st mcpvisor.ServerStatus) bool { return st.Name == "c" }) {
		t.Fatal("a denied registration took effect")
	}
	mu.Lock()
	if len(seen) != 1 {
		t.Fatalf("the hook saw %d requests, want 1", len(seen))
	}
	req := seen[0]
	mu.Unlock()
	if !slices.Equal(req.Command, []string{bin.mcptest, "-name", "it's c", "x\u202eevil"}) {
		t.Errorf("Command = %q", req.Command)
	}
	if !strings.Contains(req.Summary, `-name 'it'\''s c' "x\u202eevil"`) || !strings.Contains(req.Summary, "with env TOKEN") ||
		strings.Contains(req.Summary, "tok-123") {
		t.Errorf("Summary = %q: want the quoted command line and the env names only", req.Summary)
	}
	if req.Tool != mcpvisor.ToolRegister || req.Server != "c" || req.Scope.Session != "chat" ||
		!strings.Contains(string(req.Arguments), "tok-123") {
		t.Errorf("request %+v: want the full arguments", req)
	}

	mu.Lock()
	allow = true
	mu.Unlock()
	if res := hostCall(t, s, mcpvisor.ToolList, map[string]any{}); res.IsError {
		t.Fatalf("list_items: %s", res.Wire())
	}
	res = hostCall(t, s, mcpvisor.ToolRegister, map[string]any{"name": "a", "transport": "stdio", "command": bin.mcptest})
	if res.IsError {
		t.Fatalf("replacing a: %s", res.Wire())
	}
	if res := hostCall(t, s, mcpvisor.ToolDelete, map[string]any{"name": "a"}); res.IsError || strings.Contains(res.Text, "config file") {
		t.Fatalf("delete_mcp of a server registered by a model: %s", res.Wire())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 4 || seen[1].Tool != mcpvisor.ToolList || !seen[3].Destructive {
		t.Fatalf("the hook saw %v, want list_items, register_mcp, then a destructive delete_mcp", seen)
	}
	if !strings.Contains(seen[2].Summary, "replacing the stdio server of that name") {
		t.Errorf("replacing a server: the summary %q does not say so", seen[2].Summary)
	}

	// Each decision is journaled, without the arguments.
	// (list_items, allowed, changes nothing: not recorded).
	evs := waitEvents(t, h, mcpvisor.EventFilter{Method: mcpvisor.EventMethodApproval}, 3)
	first := string(evs[0].Params)
	if !strings.Contains(first, `"tool":"register_mcp"`) || !strings.Contains(first, `"allowed":false`) ||
		!strings.Contains(first, `"reason":"not on a Friday"`) || strings.Contains(first, "tok-123") {
		t.Errorf("the first approval event: %s", first)
	}
	if last := string(evs[2].Params); !strings.Contains(last, `"tool":"delete_mcp"`) || !strings.Contains(last, `"allowed":true`) {
		t.Errorf("the last approval event: %s", last)
	}
	for _, ev := range evs {
		if strings.Contains(string(ev.Params), `"tool":"list_items"`) {
			t.Errorf("an allowed list_items was journaled: %s", ev.Params)
		}
	}
}

// TestDeleteConfigServerSaysItReturns: the config file defines its servers;
// delete_mcp stops one but says it comes back at the next start, as it does.
func TestDeleteConfigServerSaysItReturns(t *testing.T) {
	data := t.TempDir()
	var summary string
	opts := mcpvisor.Options{DataDir: data, AlwaysOn: []string{mcpvisor.ConfigGroup},
		Approve: func(_ context.Context, req *mcpvisor.ApprovalRequest) (mcpvisor.ApprovalDecision, error) {
			summary = req.Summary
			return mcpvisor.ApprovalDecision{Allow: true}, nil
		}}
	h := openHost(t, opts, mcptest("a"))
	res := hostCall(t, h.Session("chat", ""), mcpvisor.ToolDelete, map[string]any{"name": "a"})
	if res.IsError || !strings.Contains(res.Text, "comes back when the host starts again") ||
		!strings.Contains(summary, "defined in the config file") {
		t.Fatalf("delete_mcp of a config server: %s (summary %q)", res.Wire(), summary)
	}
	if len(h.Status()) != 0 {
		t.Fatal("a is still running")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = openHost(t, opts, mcptest("a"))
	if len(h.Status()) != 1 {
		t.Fatal("the config file's server did not come back")
	}
}

// TestApprovalInbox: calls that change the registry wait for
// ResolveApproval, longer than their timeout; list_items does not wait.
func TestApprovalInbox(t *testing.T) {
	h := openHost(t, mcpvisor.Options{AlwaysOn: []string{mcpvisor.ConfigGroup}, ApprovalInbox: true,
		ApprovalDeadline: time.Minute}, mcptest("a"))
	s := h.Session("chat", "")
	if res := hostCall(t, s, mcpvisor.ToolList, nil); res.IsError {
		t.Fatalf("list_items waited or failed: %s", res.Wire())
	}

	// Once approved, the toggle's own work (a synced journal commit) must
	// fit in what is left of the timeout: a second, for a loaded machine.
	const timeout = time.Second
	type outcome struct {
		res *mcpvisor.Result
		err error
	}
	toggle := func() <-chan outcome {
		done := make(chan outcome, 1)
		go func() {
			res, err := s.CallWith(context.Background(), mcpvisor.ToolToggle,
				json.RawMessage(`{"kind":"mcp","id":"a","enabled":false}`), mcpvisor.CallOptions{Timeout: timeout})
			done <- outcome{res, err}
		}()
		return done
	}
	pending := func() mcpvisor.ApprovalRequest {
		t.Helper()
		for {
			changed := h.ApprovalsChanged()
			if list := h.Approvals(); len(list) == 1 {
				return list[0]
			}
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no approval pending")
			}
		}
	}

	done := toggle()
	req := pending()
	if req.Tool != mcpvisor.ToolToggle || req.Server != "a" || req.Summary != `Disable server "a"` || req.Deadline.IsZero() {
		t.Fatalf("pending approval %+v", req)
	}
	// The person takes longer than the call's timeout: the wait must not
	// count against it.
	time.Sleep(2 * timeout)
	if err := h.ResolveApproval(req.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.err != nil || o.res.IsError {
		t.Fatalf("approved toggle: %v %v", o.err, o.res)
	}
	if st := status(t, h, "a"); st.State != mcpvisor.StateDisabled {
		t.Fatalf("a is %s after an approved disable", st.State)
	}
	if err := h.ResolveApproval(req.ID, true, ""); !errors.Is(err, mcpvisor.ErrUnknownApproval) {
		t.Errorf("resolving twice: %v, want ErrUnknownApproval", err)
	}

	done = toggle()
	req = pending()
	if err := h.ResolveApproval(req.ID, false, "keep it"); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.err != nil || !o.res.IsError || !strings.Contains(o.res.Text, "denied: keep it") {
		t.Fatalf("denied toggle: %v %+v", o.err, o.res)
	}
	if len(h.Approvals()) != 0 {
		t.Error("a decided approval is still listed")
	}

	// A reason reaches the model, bounded.
	done = toggle()
	req = pending()
	if err := h.ResolveApproval(req.ID, false, strings.Repeat("no ", 5000)); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.err != nil || len(o.res.Text) > mcpvisor.MaxApprovalReason+200 {
		t.Fatalf("a long reason: %v, %d bytes", o.err, len(o.res.Text))
	}
}

func TestApprovalDeadlineDenies(t *testing.T) {
	h := openHost(t, mcpvisor.Options{AlwaysOn: []string{mcpvisor.ConfigGroup}, ApprovalInbox: true,
		ApprovalDeadline: 50 * time.Millisecond}, mcptest("a"))
	res := hostCall(t, h.Session("chat", ""), mcpvisor.ToolDelete, map[string]any{"name": "a"})
	if !res.IsError || !strings.Contains(res.Text, "no decision within 50ms") {
		t.Fatalf("an unanswered delete_mcp: %q", res.Text)
	}
	if len(h.Status()) != 1 {
		t.Fatal("an unapproved delete took effect")
	}
}

// TestRegisterKeepsCredentialsOutOfTheJournal: Register's literal apiKey
// and header values live in the secret store; the server reconnects with
// them after a restart.
func TestRegisterKeepsCredentialsOutOfTheJournal(t *testing.T) {
	const key, header = "key-5f1e9a", "hdr-77c2b0"
	m := &mcphttptest.Server{GetStatus: 500}
	srv := mcphttptest.Start(t, m)
	data := t.TempDir()
	h := openHost(t, mcpvisor.Options{DataDir: data})
	sc := httpServer("remote", srv.URL)
	sc.APIKey, sc.Headers = key, map[string]string{"X-Team": header}
	ctx := context.Background()
	if err := h.Register(ctx, sc); err != nil {
		t.Fatal(err)
	}
	waitReady(t, h, "remote")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, needle := range []string{key, header} {
		if hits := grepTree(t, data, filepath.Join(data, "secrets.json"), needle); len(hits) > 0 {
			t.Errorf("%q is in %v", needle, hits)
		}
	}
	before := len(m.Stats().Headers)
	h = openHost(t, mcpvisor.Options{DataDir: data})
	waitReady(t, h, "remote")
	got := m.Stats().Headers[before]
	if got.Get("Authorization") != "Bearer "+key || got.Get("X-Team") != header {
		t.Errorf("after a restart the server got Authorization %q, X-Team %q", got.Get("Authorization"), got.Get("X-Team"))
	}
}

// TestCallApproverAddsToTheHosts: CallOptions.Approve is asked only once
// the host's approval allowed the call, and may still refuse it.
func TestCallApproverAddsToTheHosts(t *testing.T) {
	var hostAllows bool
	var mu sync.Mutex
	h := openHost(t, mcpvisor.Options{AlwaysOn: []string{mcpvisor.ConfigGroup},
		Approve: func(context.Context, *mcpvisor.ApprovalRequest) (mcpvisor.ApprovalDecision, error) {
			mu.Lock()
			defer mu.Unlock()
			return mcpvisor.ApprovalDecision{Allow: hostAllows, Reason: "host says no"}, nil
		}}, mcptest("a"))
	var asked []mcpvisor.ApprovalRequest
	opts := mcpvisor.CallOptions{Approve: func(_ context.Context, req *mcpvisor.ApprovalRequest) (mcpvisor.ApprovalDecision, error) {
		asked = append(asked, *req)
		return mcpvisor.ApprovalDecision{Allow: !req.Changes, Reason: "caller says no"}, nil
	}}
	s := h.Session("chat", "")
	toggle := json.RawMessage(`{"kind":"mcp","id":"a","enabled":false}`)
	res, err := s.CallWith(context.Background(), mcpvisor.ToolToggle, toggle, opts)
	if err != nil || !strings.Contains(res.Text, "host says no") || len(asked) != 0 {
		t.Fatalf("host denies: %v %v; the caller was asked %d times, want 0", res, err, len(asked))
	}
	mu.Lock()
	hostAllows = true
	mu.Unlock()
	res, err = s.CallWith(context.Background(), mcpvisor.ToolToggle, toggle, opts)
	if err != nil || !strings.Contains(res.Text, "caller says no") || len(asked) != 1 || !asked[0].Changes {
		t.Fatalf("host allows, caller denies: %v %v (asked %+v)", res, err, asked)
	}
	if st := status(t, h, "a"); !st.Enabled || st.State == mcpvisor.StateDisabled {
		t.Fatalf("a denied toggle took effect: %s", st.State)
	}
	if res, err := s.CallWith(context.Background(), mcpvisor.ToolList, nil, opts); err != nil || res.IsError || asked[1].Changes {
		t.Fatalf("list_items: %v %v (Changes %v)", res, err, asked[1].Changes)
	}
}

// TestActivateWaitsForStart is a one-shot client's first step on a cold
// host: activate_tools answers once the activated servers are up or have
// failed, naming the tools that became callable and the server that did
// not come up, instead of "no tools yet".
func TestActivateWaitsForStart(t *testing.T) {
	broken := mcpvisor.ServerConfig{Name: "broken", Type: "stdio", Command: filepath.Join(t.TempDir(), "no-such-server"), Enabled: true}
	h := openHost(t, mcpvisor.Options{}, mcptest("a"), broken)
	s := h.Session("cold", "")
	res := hostCall(t, s, mcpvisor.ToolActivate, map[string]any{"groups": []string{"a", "broken"}})
	if res.IsError {
		t.Fatalf("activate: %s", res.Wire())
	}
	var v struct {
		Groups   []string `json:"groups"`
		Tools    []string `json:"tools"`
		NotReady []struct {
			Name, State, Error string
		} `json:"notReady"`
	}
	if err := json.Unmarshal(res.JSON, &v); err != nil {
		t.Fatalf("structured: %v: %s", err, res.JSON)
	}
	if !slices.Contains(v.Tools, mcpvisor.ToolName("a", "echo")) || slices.Contains(v.Tools, mcpvisor.ToolActivate) {
		t.Errorf("tools %v: want a's tools, and only the activated groups'", v.Tools)
	}
	if len(v.NotReady) != 1 || v.NotReady[0].Name != "broken" || v.NotReady[0].Error == "" {
		t.Errorf("notReady %+v: want broken, with its error", v.NotReady)
	}
	if !strings.Contains(res.Text, "Now callable: "+mcpvisor.ToolName("a", "echo")) || !strings.Contains(res.Text, `Server "broken" is not ready`) {
		t.Errorf("text: %s", res.Text)
	}
}

// A config file's literal env values, like an API entry's, are kept in
// secrets.json and not in the journal; the server still gets them, after a
// restart too, and a server removed from the file takes them along.
func TestConfigSecretsStayOutOfTheJournal(t *testing.T) {
	data := t.TempDir()
	const secret = "tok-config-8f3e1c77"
	sc := mcptest("c")
	sc.Env = map[string]string{"SERVICE_TOKEN": secret, "MCPTEST_ARGS": "-tools 2"}
	opts := mcpvisor.Options{DataDir: data}
	for life := range 2 {
		h := openHost(t, opts, sc)
		waitReady(t, h, "c")
		if tools := toolsOf(h, "c"); !slices.Contains(tools, "t0001") {
			t.Fatalf("life %d: the server did not get its env (MCPTEST_ARGS): tools %v", life, tools)
		}
		// The row itself (the journal's files may hold it compressed).
		rows, err := h.Journal().Servers()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if bytes.Contains(r.Config, []byte(secret)) {
				t.Errorf("life %d: registry row %s holds the secret: %s", life, r.Name, r.Config)
			}
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if hits := grepTree(t, data, filepath.Join(data, "secrets.json"), secret); len(hits) > 0 {
			t.Errorf("life %d: the config's secret env value is in %v; it belongs in secrets.json only", life, hits)
		}
		if b, _ := os.ReadFile(filepath.Join(data, "secrets.json")); !bytes.Contains(b, []byte(secret)) {
			t.Errorf("life %d: secrets.json lacks the secret", life)
		}
	}
	h := openHost(t, opts) // c is gone from the file
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(data, "secrets.json")); bytes.Contains(b, []byte(secret)) {
		t.Error("the secret of a server removed from the file outlived it")
	}
}
