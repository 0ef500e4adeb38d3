package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/stdiotest"
	"github.com/mcpvisor/mcpvisor/internal/testbin"
)

// serverBin is the mcptest binary, built once for the whole package.
var serverBin string

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{"github.com/mcpvisor/mcpvisor/examples/servers/mcptest": &serverBin})
}

func start(t *testing.T, args ...string) *stdiotest.Client {
	t.Helper()
	return stdiotest.Start(t, serverBin, stdiotest.Options{Args: args})
}

type initResult struct {
	ProtocolVersion *string `json:"protocolVersion"`
	Capabilities    struct {
		Tools *struct {
			ListChanged bool `json:"listChanged"`
		} `json:"tools"`
		Tasks json.RawMessage `json:"tasks"`
	} `json:"capabilities"`
	ServerInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
}

func initialize(t *testing.T, c *stdiotest.Client, version string) initResult {
	t.Helper()
	m, err := c.Initialize(stdiotest.Context(t), version)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	var res initResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatalf("initialize result %s: %v", m.Result, err)
	}
	return res
}

type toolResult struct{ *stdiotest.ToolResult }

func (r toolResult) text(t *testing.T) string {
	t.Helper()
	text, ok := r.Text()
	if !ok {
		t.Fatalf("want one text block, got %+v", r.Content)
	}
	return text
}

func callParams(name string, args any) map[string]any {
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	return p
}

// callTool calls a tool and fails the test on any error.
func callTool(t *testing.T, c *stdiotest.Client, name string, args any) toolResult {
	t.Helper()
	res, err := c.CallTool(stdiotest.Context(t), name, args)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return toolResult{res}
}

type tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
}

type listPage struct {
	Tools      []tool  `json:"tools"`
	NextCursor *string `json:"nextCursor"`
}

func listPageAt(t *testing.T, c *stdiotest.Client, cursor *string) listPage {
	t.Helper()
	var params any
	if cursor != nil {
		params = map[string]any{"cursor": *cursor}
	}
	m, err := c.Call(stdiotest.Context(t), "tools/list", params)
	if err != nil || m.Error != nil {
		t.Fatalf("tools/list: %v %v", err, m.Error)
	}
	var page listPage
	if err := json.Unmarshal(m.Result, &page); err != nil {
		t.Fatal(err)
	}
	return page
}

// listAll follows nextCursor to the end and returns every page.
func listAll(t *testing.T, c *stdiotest.Client) []listPage {
	t.Helper()
	var pages []listPage
	var cursor *string
	for {
		page := listPageAt(t, c, cursor)
		pages = append(pages, page)
		if page.NextCursor == nil {
			return pages
		}
		if len(pages) > 100 {
			t.Fatal("more than 100 pages")
		}
		cursor = page.NextCursor
	}
}

func toolNames(pages []listPage) []string {
	var names []string
	for _, p := range pages {
		for _, tl := range p.Tools {
			names = append(names, tl.Name)
		}
	}
	return names
}

var builtinTools = []string{"echo", "slow", "crash", "meta", "pid", "spawn_grandchild", "big", "ask_then_answer", "notify", "flood", "stderr", "structured", "image", "list_changed", "rug_pull",
	"ask", "login", "progress", "sleep_task", "need_url", "sample", "roots"}

func exitCode(t *testing.T, c *stdiotest.Client) int {
	t.Helper()
	state, err := c.Wait(stdiotest.Context(t))
	if err != nil {
		t.Fatalf("server did not exit: %v", err)
	}
	return state.ExitCode()
}

// nextStderrContaining skips stderr lines until one contains all of subs.
func nextStderrContaining(t *testing.T, c *stdiotest.Client, subs ...string) string {
	t.Helper()
	ctx := stdiotest.Context(t)
	for {
		line, err := c.NextStderr(ctx)
		if err != nil {
			t.Fatalf("no stderr line containing %q: %v", subs, err)
		}
		if containsAll(line, subs) {
			return line
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// assertNoReply checks that no response arrived within a short window. It
// can only ever prove absence for a bounded time.
func assertNoReply(t *testing.T, reply <-chan *stdiotest.Message, what string) {
	t.Helper()
	select {
	case m := <-reply:
		t.Fatalf("%s was answered: %s", what, m.Raw)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestHandshakeToolsAndCalls(t *testing.T) {
	t.Parallel()
	c := start(t)
	res := initialize(t, c, "2025-11-25")
	if res.ProtocolVersion == nil || *res.ProtocolVersion != "2025-11-25" {
		t.Errorf("protocolVersion = %v, want 2025-11-25", res.ProtocolVersion)
	}
	if res.ServerInfo.Name != "mcptest" || res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
		t.Errorf("initialize result = %+v", res)
	}
	if got, want := string(res.Capabilities.Tasks), `{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}`; got != want {
		t.Errorf("capabilities.tasks = %s, want %s (on by default)", got, want)
	}

	pages := listAll(t, c)
	if len(pages) != 1 {
		t.Errorf("got %d pages without -page, want 1", len(pages))
	}
	if diff := cmp.Diff(builtinTools, toolNames(pages)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	for _, tl := range pages[0].Tools {
		var schema struct{ Type string }
		if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema.Type != "object" || tl.Description == "" || tl.Title == "" {
			t.Errorf("tool %s: title %q, description %q, inputSchema %s", tl.Name, tl.Title, tl.Description, tl.InputSchema)
		}
	}

	if got := callTool(t, c, "echo", map[string]any{"b": []any{1, "<x>"}, "a": nil}).text(t); got != `{"a":null,"b":[1,"<x>"]}` {
		t.Errorf("echo = %s", got)
	}
	if got := callTool(t, c, "echo", nil).text(t); got != `{}` {
		t.Errorf("echo without arguments = %s", got)
	}
	if got := callTool(t, c, "pid", nil).text(t); got != strconv.Itoa(c.Pid()) {
		t.Errorf("pid = %s, want %d", got, c.Pid())
	}
	if got := callTool(t, c, "big", map[string]any{"bytes": 300000}).text(t); len(got) != 300000 {
		t.Errorf("big: got %d bytes, want 300000", len(got))
	}
	if got := callTool(t, c, "slow", map[string]any{"ms": 5}).text(t); got != "slept 5 ms" {
		t.Errorf("slow = %q", got)
	}

	structured := callTool(t, c, "structured", nil)
	if string(structured.StructuredContent) != `{"x":1}` || structured.text(t) != `{"x":1}` {
		t.Errorf("structured = %+v", structured)
	}
	if len(pages[0].Tools[slices.Index(builtinTools, "structured")].OutputSchema) == 0 {
		t.Error("structured has no outputSchema")
	}

	img := callTool(t, c, "image", nil)
	if len(img.Content) != 1 || img.Content[0].Type != "image" || img.Content[0].MimeType != "image/png" {
		t.Fatalf("image = %+v", img)
	}
	raw, err := base64.StdEncoding.DecodeString(img.Content[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(raw)); err != nil || cfg.Width != 1 || cfg.Height != 1 {
		t.Errorf("image is not a 1x1 PNG: %+v %v", cfg, err)
	}

	ctx := stdiotest.Context(t)
	for _, tc := range []struct {
		method string
		params any
		code   int
	}{
		{"tools/call", callParams("no_such_tool", nil), -32602},
		{"no/such/method", nil, -32601},
		{"tools/list", map[string]any{"cursor": "not-a-cursor"}, -32602},
	} {
		m, err := c.Call(ctx, tc.method, tc.params)
		if err != nil || m.Error == nil || m.Error.Code != tc.code {
			t.Errorf("%s %v: got %v / %+v, want error %d", tc.method, tc.params, err, m, tc.code)
		}
	}
	if m, err := c.Call(ctx, "ping", nil); err != nil || string(m.Result) != "{}" {
		t.Errorf("ping = %v, %v", m, err)
	}
	if err := c.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, c); code != 0 {
		t.Errorf("exit code after stdin EOF = %d, want 0", code)
	}
}

func TestVersionFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		client string
		want   *string
	}{
		{"echo latest", nil, "2025-11-25", ptr("2025-11-25")},
		{"older client gets latest", nil, "2025-06-18", ptr("2025-11-25")},
		{"unknown client gets latest", nil, "1999-01-01", ptr("2025-11-25")},
		{"forced", []string{"-version", "2024-11-05"}, "2025-11-25", ptr("2024-11-05")},
		{"omitted", []string{"-no-version"}, "2025-11-25", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := start(t, tc.args...)
			got := initialize(t, c, tc.client).ProtocolVersion
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("protocolVersion (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestPagination(t *testing.T) {
	t.Parallel()
	c := start(t, "-tools", "25", "-page", "10")
	initialize(t, c, "2025-11-25")
	pages := listAll(t, c)
	var sizes []int
	for _, p := range pages {
		sizes = append(sizes, len(p.Tools))
	}
	var wantSizes []int
	for left := len(builtinTools) + 25; left > 0; left -= 10 {
		wantSizes = append(wantSizes, min(left, 10))
	}
	if diff := cmp.Diff(wantSizes, sizes); diff != "" {
		t.Errorf("page sizes (-want +got):\n%s", diff)
	}
	want := slices.Clone(builtinTools)
	for i := range 25 {
		want = append(want, fmt.Sprintf("t%04d", i))
	}
	if diff := cmp.Diff(want, toolNames(pages)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if got := callTool(t, c, "t0024", nil).text(t); got != "t0024" {
		t.Errorf("t0024 = %q", got)
	}
}

func TestEndlessCursor(t *testing.T) {
	t.Parallel()
	c := start(t, "-endless-cursor", "-page", "5")
	initialize(t, c, "2025-11-25")
	seen := map[string]bool{}
	var cursor *string
	for i := range 20 {
		page := listPageAt(t, c, cursor)
		if page.NextCursor == nil {
			t.Fatalf("page %d has no nextCursor", i)
		}
		if seen[*page.NextCursor] {
			t.Fatalf("page %d repeats cursor %q", i, *page.NextCursor)
		}
		seen[*page.NextCursor] = true
		if len(page.Tools) == 0 {
			t.Fatalf("page %d is empty", i)
		}
		cursor = page.NextCursor
	}
}

func TestListShapeFlags(t *testing.T) {
	t.Parallel()
	c := start(t, "-duplicate-tools", "-long-description", "5000", "-name", "weird")
	if got := initialize(t, c, "2025-11-25").ServerInfo.Name; got != "weird" {
		t.Errorf("serverInfo.name = %q, want weird", got)
	}
	pages := listAll(t, c)
	names := toolNames(pages)
	echoes := 0
	for i, n := range names {
		if n == "echo" {
			echoes++
			if d := pages[0].Tools[i].Description; len(d) != 5000 {
				t.Errorf("echo description is %d bytes, want 5000", len(d))
			}
		}
	}
	if echoes != 2 {
		t.Errorf("echo listed %d times, want 2: %v", echoes, names)
	}
}

func TestArgsFromEnv(t *testing.T) {
	t.Parallel()
	c := stdiotest.Start(t, serverBin, stdiotest.Options{
		Env:  []string{"MCPTEST_ARGS=-name fromenv -tools 3"},
		Args: []string{"-tools", "2"}, // the command line wins
	})
	if got := initialize(t, c, "2025-11-25").ServerInfo.Name; got != "fromenv" {
		t.Errorf("serverInfo.name = %q, want fromenv", got)
	}
	if got, want := len(toolNames(listAll(t, c))), len(builtinTools)+2; got != want {
		t.Errorf("%d tools, want %d", got, want)
	}
}

func TestBanner(t *testing.T) {
	t.Parallel()
	c := start(t, "-banner", "3")
	initialize(t, c, "2025-11-25")
	ctx := stdiotest.Context(t)
	for i := range 3 {
		line, err := c.NextBadLine(ctx)
		if err != nil || !strings.HasPrefix(string(line), "Starting server v1.0...") {
			t.Fatalf("banner line %d = %q, %v", i, line, err)
		}
	}
}

func TestAskThenAnswer(t *testing.T) {
	t.Parallel()
	c := stdiotest.Start(t, serverBin, stdiotest.Options{
		OnRequest: func(method string, _ json.RawMessage) (any, *stdiotest.Error) {
			switch method {
			case "ping":
				return map[string]any{}, nil
			case "roots/list":
				return map[string]any{"roots": []any{map[string]any{"uri": "file:///work", "name": "work"}}}, nil
			}
			return nil, &stdiotest.Error{Code: -32601, Message: "Method not found"}
		},
	})
	initialize(t, c, "2025-11-25")
	res := callTool(t, c, "ask_then_answer", nil)
	want := `{"ping":{"result":{}},"roots/list":{"result":{"roots":[{"name":"work","uri":"file:///work"}]}}}`
	if string(res.StructuredContent) != want || res.text(t) != want {
		t.Errorf("ask_then_answer = %s / %s, want %s", res.StructuredContent, res.text(t), want)
	}
	ctx := stdiotest.Context(t)
	ids := map[string]string{}
	for range 2 {
		m, err := c.NextInbound(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids[m.Method] = string(m.ID)
	}
	if diff := cmp.Diff(map[string]string{"ping": `"srv-1"`, "roots/list": `7`}, ids); diff != "" {
		t.Errorf("server request ids (-want +got):\n%s", diff)
	}
	// Twice in one session: the fixed ids are free again once answered.
	if again := callTool(t, c, "ask_then_answer", nil); string(again.StructuredContent) != want {
		t.Errorf("second ask_then_answer = %s", again.StructuredContent)
	}
}

func TestNotify(t *testing.T) {
	t.Parallel()
	c := start(t)
	initialize(t, c, "2025-11-25")
	callTool(t, c, "notify", nil)
	ctx := stdiotest.Context(t)
	got := map[string]string{}
	for range 2 {
		m, err := c.NextInbound(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got[m.Method] = string(m.Params)
	}
	want := map[string]string{
		"notifications/message": `{"data":"notify tool called","level":"warning","logger":"mcptest"}`,
		"event/test":            `{"n":1}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}

	// Above the level set by the client, the log record is not sent.
	if m, err := c.Call(ctx, "logging/setLevel", map[string]any{"level": "error"}); err != nil || m.Error != nil {
		t.Fatalf("logging/setLevel: %v %v", err, m)
	}
	callTool(t, c, "notify", nil)
	m, err := c.NextInbound(ctx)
	if err != nil || m.Method != "event/test" {
		t.Errorf("after setLevel error: got %v %v, want only event/test", m, err)
	}
}

func TestListChanged(t *testing.T) {
	t.Parallel()
	c := start(t)
	initialize(t, c, "2025-11-25")
	if slices.Contains(toolNames(listAll(t, c)), "extra") {
		t.Fatal("extra listed before list_changed")
	}
	callTool(t, c, "list_changed", nil)
	m, err := c.NextInbound(stdiotest.Context(t))
	if err != nil || m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %v %v, want notifications/tools/list_changed", m, err)
	}
	if !slices.Contains(toolNames(listAll(t, c)), "extra") {
		t.Error("extra not listed after list_changed")
	}
	if got := callTool(t, c, "extra", nil).text(t); got != "extra" {
		t.Errorf("extra = %q", got)
	}
}

func TestStderr(t *testing.T) {
	t.Parallel()
	c := start(t, "-stderr-chatter", "4")
	ctx := stdiotest.Context(t)
	for i := range 4 {
		line, err := c.NextStderr(ctx)
		if want := fmt.Sprintf("mcptest: startup chatter %d/4", i+1); err != nil || line != want {
			t.Fatalf("stderr line %d = %q, %v; want %q", i, line, err, want)
		}
	}
	initialize(t, c, "2025-11-25")
	callTool(t, c, "stderr", map[string]any{"lines": 3})
	for i := range 3 {
		nextStderrContaining(t, c, fmt.Sprintf("mcptest: stderr line %d/3", i+1))
	}
}

func TestCancelSlowCall(t *testing.T) {
	t.Parallel()
	c := start(t)
	initialize(t, c, "2025-11-25")
	id, reply, err := c.Send("tools/call", callParams("slow", map[string]any{"ms": 60000}))
	if err != nil {
		t.Fatal(err)
	}
	// The server registers a request before reading the next line, so the
	// cancel always finds it in flight.
	if err := c.Notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "test"}); err != nil {
		t.Fatal(err)
	}
	nextStderrContaining(t, c, `msg="request cancelled"`, "id="+string(id), "reason=test")
	nextStderrContaining(t, c, `msg="dropped response to cancelled request"`, "id="+string(id))
	if m, err := c.Call(stdiotest.Context(t), "ping", nil); err != nil || m.Error != nil {
		t.Fatalf("ping after cancel: %v %v", err, m)
	}
	select {
	case m := <-reply:
		t.Fatalf("cancelled call was answered: %s", m.Raw)
	default:
	}
}

func TestHangCalls(t *testing.T) {
	t.Parallel()
	c := start(t, "-hang-calls")
	initialize(t, c, "2025-11-25")
	if got := len(listAll(t, c)); got != 1 {
		t.Errorf("tools/list: %d pages", got)
	}
	_, reply, err := c.Send("tools/call", callParams("echo", nil))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := c.Call(stdiotest.Context(t), "ping", nil); err != nil || m.Error != nil {
		t.Fatalf("ping while a call hangs: %v %v", err, m)
	}
	assertNoReply(t, reply, "hung tools/call")
	c.CloseStdin()
	if code := exitCode(t, c); code != 0 {
		t.Errorf("exit code = %d, want 0 (stdin EOF ends the server even with a hung call)", code)
	}
}

func TestHangInit(t *testing.T) {
	t.Parallel()
	c := start(t, "-hang-init")
	_, reply, err := c.Send("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := c.Call(stdiotest.Context(t), "ping", nil); err != nil || m.Error != nil {
		t.Fatalf("ping during hung initialize: %v %v", err, m)
	}
	assertNoReply(t, reply, "initialize")
}

func TestStopReadingAfterInit(t *testing.T) {
	t.Parallel()
	c := start(t, "-stop-reading-after-init")
	initialize(t, c, "2025-11-25")
	// A reader would swallow this; a server that stopped reading lets the
	// pipe fill, and the write times out.
	if err := c.Stdin().SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	ping := []byte(`{"jsonrpc":"2.0","method":"notifications/ping-filler","params":{"pad":"` + strings.Repeat("p", 4000) + `"}}`)
	var werr error
	for i := 0; i < 2000 && werr == nil; i++ { // 8 MB, far beyond any pipe buffer
		werr = c.WriteLine(ping)
	}
	if !errors.Is(werr, os.ErrDeadlineExceeded) {
		t.Fatalf("write error = %v, want a deadline (the server kept reading)", werr)
	}
	select {
	case <-c.Exited():
		t.Fatal("server exited; it should stay alive")
	default:
	}
	c.Signal(syscall.SIGKILL) // it would not notice stdin closing either
}

func TestCrashTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args any
		want int
	}{
		{nil, 3},
		{map[string]any{"code": 5}, 5},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.want), func(t *testing.T) {
			t.Parallel()
			c := start(t)
			initialize(t, c, "2025-11-25")
			_, err := c.Call(stdiotest.Context(t), "tools/call", callParams("crash", tc.args))
			if !errors.Is(err, stdiotest.ErrEOF) {
				t.Errorf("crash call: err = %v, want EOF without an answer", err)
			}
			if code := exitCode(t, c); code != tc.want {
				t.Errorf("exit code = %d, want %d", code, tc.want)
			}
		})
	}
}

func TestCrashAfter(t *testing.T) {
	t.Parallel()
	c := start(t, "-crash-after", "2")
	initialize(t, c, "2025-11-25")
	callTool(t, c, "echo", nil)
	if _, err := c.Call(stdiotest.Context(t), "tools/call", callParams("echo", nil)); !errors.Is(err, stdiotest.ErrEOF) {
		t.Errorf("second call: err = %v, want EOF", err)
	}
	if code := exitCode(t, c); code != 3 {
		t.Errorf("exit code = %d, want 3", code)
	}
}

func TestExitAtStart(t *testing.T) {
	t.Parallel()
	c := start(t, "-exit-at-start", "7")
	if code := exitCode(t, c); code != 7 {
		t.Errorf("exit code = %d, want 7", code)
	}
	if line, err := c.NextBadLine(stdiotest.Context(t)); err == nil {
		t.Errorf("stdout had %q", line)
	}
}

func TestCrashAfterMS(t *testing.T) {
	t.Parallel()
	c := start(t, "-crash-after-ms", "50")
	// Only initialize's answer is awaited: on a loaded machine the 50 ms
	// can pass before the initialized notification is written.
	m, err := c.Call(stdiotest.Context(t), "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"},
	})
	if err != nil || m.Error != nil {
		t.Fatalf("initialize: %v %v", err, m)
	}
	if code := exitCode(t, c); code != 3 {
		t.Errorf("exit code = %d, want 3", code)
	}
}

func TestFlood(t *testing.T) {
	t.Parallel()
	const n = 300000
	c := start(t, "-flood-bytes", strconv.Itoa(n))
	initialize(t, c, "2025-11-25")
	id, reply, err := c.Send("tools/call", callParams("echo", nil))
	if err != nil {
		t.Fatal(err)
	}
	line, err := c.NextBadLine(stdiotest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	prefix := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"aaaa`
	if len(line) != n || !strings.HasPrefix(string(line), prefix) || strings.Trim(string(line[len(prefix):]), "a") != "" {
		t.Errorf("flood line: %d bytes starting %.100q; want %d bytes of %q then a's", len(line), line, n, prefix)
	}
	if got := callTool(t, c, "echo", map[string]any{"after": true}).text(t); got != `{"after":true}` {
		t.Errorf("echo after the flood = %q", got)
	}
	assertNoReply(t, reply, "flooded call")
}

func TestOversizeResponse(t *testing.T) {
	t.Parallel()
	const n = 200000
	c := start(t, "-oversize-response", strconv.Itoa(n))
	initialize(t, c, "2025-11-25")
	m, err := c.Call(stdiotest.Context(t), "tools/call", callParams("echo", map[string]any{"k": "v"}))
	if err != nil || m.Error != nil {
		t.Fatalf("echo: %v %v", err, m)
	}
	if len(m.Raw) < n-64 || len(m.Raw) > n+64 {
		t.Errorf("response frame is %d bytes, want about %d", len(m.Raw), n)
	}
	var res stdiotest.ToolResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	if text := (toolResult{&res}).text(t); !strings.HasPrefix(text, `{"k":"v"} xxx`) {
		t.Errorf("echo text starts %.40q", text)
	}
}

// procStat returns the state letter and parent pid of pid, from /proc.
func procStat(pid int) (state byte, ppid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	rest := string(b[bytes.LastIndexByte(b, ')')+2:])
	fields := strings.Fields(rest)
	ppid, err = strconv.Atoi(fields[1])
	return rest[0], ppid, err
}

// waitGone waits until pid has exited (gone, or a zombie nobody reaped).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		state, _, err := procStat(pid)
		if err != nil || state == 'Z' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("process %d outlived its group's SIGKILL", pid)
}

func TestSpawnGrandchild(t *testing.T) {
	t.Parallel()
	c := start(t)
	initialize(t, c, "2025-11-25")
	pid, err := strconv.Atoi(callTool(t, c, "spawn_grandchild", nil).text(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ppid, err := procStat(pid); err != nil || ppid != c.Pid() {
		t.Fatalf("grandchild %d: parent %d, %v; want parent %d", pid, ppid, err, c.Pid())
	}
	c.Close() // kills the process group
	waitGone(t, pid)
}

func TestGrandchildAtStart(t *testing.T) {
	t.Parallel()
	c := start(t, "-grandchild")
	line := nextStderrContaining(t, c, "grandchild pid ")
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "grandchild pid "))
	if err != nil {
		t.Fatalf("stderr %q: %v", line, err)
	}
	if _, ppid, err := procStat(pid); err != nil || ppid != c.Pid() {
		t.Fatalf("grandchild %d: parent %d, %v; want parent %d", pid, ppid, err, c.Pid())
	}
	initialize(t, c, "2025-11-25")
	// Closing stdin ends the server but not its child: the orphan the
	// supervisor has to find. Only the group kill in Close ends it.
	c.CloseStdin()
	if code := exitCode(t, c); code != 0 {
		t.Errorf("exit code = %d", code)
	}
	if state, _, err := procStat(pid); err != nil || state == 'Z' {
		t.Fatalf("grandchild died with its parent (state %c, %v); want an orphan", state, err)
	}
	c.Close()
	waitGone(t, pid)
}

func TestIgnoreSIGTERM(t *testing.T) {
	t.Parallel()
	c := start(t, "-ignore-sigterm")
	initialize(t, c, "2025-11-25")
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if m, err := c.Call(stdiotest.Context(t), "ping", nil); err != nil || m.Error != nil {
		t.Fatalf("ping after SIGTERM: %v %v", err, m)
	}
	c.CloseStdin()
	select {
	case <-c.Exited():
		t.Fatal("exited after SIGTERM and stdin EOF")
	case <-time.After(300 * time.Millisecond):
	}
	if err := c.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	state, err := c.Wait(stdiotest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("state = %v, want killed by SIGKILL", state)
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	cfg, err := parseConfig([]string{"-page", "3"}, "-tools 9 -page 1 -hang-calls", &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.tools != 9 || cfg.page != 3 || !cfg.hangCalls || cfg.exitAtStart != -1 || cfg.name != "mcptest" || !cfg.tasks || cfg.taskState != "" {
		t.Errorf("config = %+v", cfg)
	}
	if cfg, err := parseConfig([]string{"-tasks=false", "-task-state", "/tmp/x"}, "", &stderr); err != nil || cfg.tasks || cfg.taskState != "/tmp/x" {
		t.Errorf("-tasks=false -task-state: %+v, %v", cfg, err)
	}
	if _, err := parseConfig([]string{"-no-such-flag"}, "", &stderr); err == nil {
		t.Error("unknown flag accepted")
	}
	if _, err := parseConfig([]string{"stray"}, "", &stderr); err == nil {
		t.Error("positional argument accepted")
	}
}
