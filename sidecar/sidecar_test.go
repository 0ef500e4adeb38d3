package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

func TestAuth(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("mcpvisor_up 1\n")) })
	a := openAPI(t, sidecar.Options{Metrics: metrics}, mcptest("t"))
	for _, tc := range []struct {
		name, method, path, auth string
		want                     int
	}{
		{"no token", "GET", "/v1/servers", "", http.StatusUnauthorized},
		{"wrong token", "GET", "/v1/servers", "Bearer nope", http.StatusUnauthorized},
		{"token prefix only", "GET", "/v1/servers", "Bearer " + testToken[:4], http.StatusUnauthorized},
		{"basic scheme", "GET", "/v1/servers", "Basic " + testToken, http.StatusUnauthorized},
		{"unknown route needs the token", "GET", "/v1/nothing", "", http.StatusUnauthorized},
		{"media needs the token", "GET", "/v1/media/0123456789abcdef0123456789abcdef.png", "", http.StatusUnauthorized},
		{"metrics needs the token", "GET", "/metrics", "", http.StatusUnauthorized},
		{"right token", "GET", "/v1/servers", "Bearer " + testToken, http.StatusOK},
		{"unknown route", "GET", "/v1/nothing", "Bearer " + testToken, http.StatusNotFound},
		{"metrics", "GET", "/metrics", "Bearer " + testToken, http.StatusOK},
		{"healthz is open", "GET", "/healthz", "", http.StatusOK},
		{"readyz is open", "GET", "/readyz", "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.doAuth(tc.method, tc.path, nil, tc.auth, nil)
			if r.status != tc.want {
				t.Fatalf("status %d, want %d: %s", r.status, tc.want, r.body)
			}
			switch tc.want {
			case http.StatusUnauthorized:
				if code := r.errorCode(t); code != sidecar.CodeUnauthorized {
					t.Errorf("code %q", code)
				}
				if r.header.Get("WWW-Authenticate") == "" {
					t.Error("no WWW-Authenticate header")
				}
			case http.StatusNotFound:
				if code := r.errorCode(t); code != sidecar.CodeNotFound {
					t.Errorf("code %q", code)
				}
			}
		})
	}
	if r := a.do("GET", "/metrics", nil); string(r.body) != "mcpvisor_up 1\n" {
		t.Errorf("metrics body %q", r.body)
	}
}

func TestNewPanicsWithoutToken(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New with an empty token did not panic")
		}
	}()
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	sidecar.New(h, sidecar.Options{})
}

// TestReadyz: /readyz is open and says ready or not; only with the token
// does it name the servers that are not ready (issue 22, finding 5).
func TestReadyz(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	if r := a.doAuth("GET", "/readyz", nil, "", nil); r.status != http.StatusOK {
		t.Fatalf("readyz %d: %s", r.status, r.body)
	}
	// A server that exits at once never becomes ready.
	if r := a.do("PUT", "/v1/servers/broken", map[string]any{"command": mcptestBin, "args": []string{"-exit-at-start", "3"}}); r.status != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	// Without the token it says not ready, and nothing of what runs.
	r := a.doAuth("GET", "/readyz", nil, "", nil)
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("readyz %d with a broken server: %s", r.status, r.body)
	}
	if got := strings.TrimSpace(string(r.body)); got != `{"status":"not_ready"}` {
		t.Errorf("readyz without the token: %s, want only the status", got)
	}
	// With it, which servers are not ready and their states.
	r = a.do("GET", "/readyz", nil)
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("readyz %d with a broken server and the token: %s", r.status, r.body)
	}
	var body struct {
		NotReady []struct{ Name, State string } `json:"notReady"`
	}
	r.json(t, &body)
	if len(body.NotReady) != 1 || body.NotReady[0].Name != "broken" {
		t.Errorf("notReady = %+v", body.NotReady)
	}
	// A wrong token is no token.
	if r := a.doAuth("GET", "/readyz", nil, "Bearer nope", nil); strings.Contains(string(r.body), "broken") {
		t.Errorf("readyz with a wrong token names the server: %s", r.body)
	}
	// Disabled, it no longer counts.
	if r := a.do("POST", "/v1/servers/broken/disable", nil); r.status != http.StatusOK {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	if r := a.doAuth("GET", "/readyz", nil, "", nil); r.status != http.StatusOK {
		t.Fatalf("readyz %d after disabling: %s", r.status, r.body)
	}
}

type serverList struct {
	Servers []struct {
		Name    string `json:"name"`
		State   string `json:"state"`
		Enabled bool   `json:"enabled"`
		Tools   int    `json:"tools"`
	} `json:"servers"`
}

func (a *api) serverState(name string) (state string, enabled, found bool) {
	a.t.Helper()
	var l serverList
	a.do("GET", "/v1/servers", nil).json(a.t, &l)
	for _, s := range l.Servers {
		if s.Name == name {
			return s.State, s.Enabled, true
		}
	}
	return "", false, false
}

func TestServers(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	if state, enabled, ok := a.serverState("t"); !ok || !enabled || state != string(mcpvisor.StateReady) {
		t.Fatalf("t: state %q enabled %v found %v", state, enabled, ok)
	}

	// Register a server from an mcpServers entry.
	r := a.do("PUT", "/v1/servers/more", map[string]any{"command": mcptestBin, "args": []string{"-name", "more"}, "description": "more tools"})
	if r.status != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.h.WaitReady(ctx, "more"); err != nil {
		t.Fatal(err)
	}
	if r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__more__echo", "arguments": map[string]any{"a": 1}}); r.status != http.StatusOK {
		t.Fatalf("call on the registered server: %d %s", r.status, r.body)
	}

	// Disable, enable.
	r = a.do("POST", "/v1/servers/more/disable", nil)
	if r.status != http.StatusOK {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	if state, enabled, _ := a.serverState("more"); enabled || state != string(mcpvisor.StateDisabled) {
		t.Errorf("after disable: state %q enabled %v", state, enabled)
	}
	if r := a.do("POST", "/v1/servers/more/enable", nil); r.status != http.StatusOK {
		t.Fatalf("enable: %d %s", r.status, r.body)
	}
	if err := a.h.WaitReady(ctx, "more"); err != nil {
		t.Fatal(err)
	}

	// The log tail holds the lifecycle lines.
	var logBody struct {
		Server string   `json:"server"`
		Lines  []string `json:"lines"`
	}
	eventually(t, "log lines", func() bool {
		a.do("GET", "/v1/servers/more/log?lines=5", nil).json(t, &logBody)
		return len(logBody.Lines) > 0
	})
	if len(logBody.Lines) > 5 {
		t.Errorf("%d lines for lines=5", len(logBody.Lines))
	}
	if r := a.do("GET", "/v1/servers/more/log?lines=zero", nil); r.status != http.StatusBadRequest {
		t.Errorf("lines=zero: %d", r.status)
	}

	// Delete.
	if r := a.do("DELETE", "/v1/servers/more", nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if _, _, ok := a.serverState("more"); ok {
		t.Error("deleted server still listed")
	}

	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code, mention      string
	}{
		{"delete unknown", "DELETE", "/v1/servers/ghost", nil, 404, sidecar.CodeUnknownServer, "ghost"},
		{"enable unknown", "POST", "/v1/servers/ghost/enable", nil, 404, sidecar.CodeUnknownServer, "ghost"},
		{"log of unknown", "GET", "/v1/servers/ghost/log", nil, 404, sidecar.CodeUnknownServer, "ghost"},
		{"bad field", "PUT", "/v1/servers/bad", map[string]any{"command": mcptestBin, "args": "not-a-list"}, 400, sidecar.CodeInvalidConfig, "args"},
		{"no command", "PUT", "/v1/servers/bad", map[string]any{"type": "stdio"}, 400, sidecar.CodeInvalidConfig, "command"},
		{"bad name", "PUT", "/v1/servers/bad%20name", map[string]any{"command": mcptestBin}, 400, sidecar.CodeInvalidConfig, "bad name"},
		{"not JSON", "PUT", "/v1/servers/bad", "{", 400, sidecar.CodeInvalidRequest, "JSON"},
		{"not an object", "PUT", "/v1/servers/bad", "[1]", 400, sidecar.CodeInvalidRequest, "object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(tc.method, tc.path, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if code := r.errorCode(t); code != tc.code {
				t.Errorf("code %q, want %q", code, tc.code)
			}
			if !strings.Contains(string(r.body), tc.mention) {
				t.Errorf("message does not mention %q: %s", tc.mention, r.body)
			}
		})
	}
}

type toolList struct {
	Tools []struct {
		Name   string `json:"name"`
		Server string `json:"server"`
	} `json:"tools"`
}

// serverTools counts the tools of servers, leaving out the host's own.
func (l toolList) serverTools() int {
	n := 0
	for _, t := range l.Tools {
		if !mcpvisor.IsHostTool(t.Name) {
			n++
		}
	}
	return n
}

func (l toolList) has(name string) bool {
	for _, t := range l.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func TestToolsSessionsAndCatalog(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	var all toolList
	a.do("GET", "/v1/tools", nil).json(t, &all)
	if !all.has("mcp__t__echo") {
		t.Fatalf("full catalog lacks mcp__t__echo: %+v", all)
	}

	var mine toolList
	a.do("GET", "/v1/tools?session=chat", nil).json(t, &mine)
	if len(mine.Tools) != 1 || !mine.has(mcpvisor.ToolActivate) {
		t.Fatalf("a new session sees %+v, want only activate_tools", mine.Tools)
	}
	r := a.do("POST", "/v1/call", map[string]any{"session": "chat", "tool": "mcp__t__echo", "arguments": map[string]any{}})
	if r.status != http.StatusForbidden || r.errorCode(t) != sidecar.CodeNotGranted {
		t.Fatalf("call before activate: %d %s", r.status, r.body)
	}

	r = a.do("GET", "/v1/catalog?session=chat", nil)
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") ||
		!strings.Contains(string(r.body), "t") {
		t.Fatalf("catalog: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if r := a.do("GET", "/v1/catalog", nil); r.status != http.StatusBadRequest {
		t.Errorf("catalog without a session: %d", r.status)
	}

	if r := a.do("POST", "/v1/sessions/chat/activate", map[string]any{"groups": []string{"t"}}); r.status != http.StatusOK {
		t.Fatalf("activate: %d %s", r.status, r.body)
	}
	a.do("GET", "/v1/tools?session=chat", nil).json(t, &mine)
	if !mine.has("mcp__t__echo") {
		t.Fatalf("after activate: %+v", mine)
	}
	// A stack frame starts with no grants of its own.
	var sub toolList
	a.do("GET", "/v1/tools?session=chat&stack=f1", nil).json(t, &sub)
	if n := sub.serverTools(); n != 0 {
		t.Errorf("stack frame sees %d server tools", n)
	}
	if r := a.do("POST", "/v1/sessions/chat/activate", map[string]any{"groups": []string{"t"}, "stack": "f1"}); r.status != http.StatusOK {
		t.Fatalf("activate f1: %d %s", r.status, r.body)
	}
	r = a.do("POST", "/v1/call", map[string]any{"session": "chat", "stack": "f1", "tool": "mcp__t__echo", "arguments": map[string]any{"x": 1}})
	if r.status != http.StatusOK {
		t.Fatalf("call in f1: %d %s", r.status, r.body)
	}
	if r := a.do("POST", "/v1/sessions/chat/end", map[string]any{"stack": "f1"}); r.status != http.StatusNoContent {
		t.Fatalf("end f1: %d %s", r.status, r.body)
	}
	a.do("GET", "/v1/tools?session=chat&stack=f1", nil).json(t, &sub)
	if n := sub.serverTools(); n != 0 {
		t.Errorf("ended frame still sees %d server tools", n)
	}
	a.do("GET", "/v1/tools?session=chat", nil).json(t, &mine)
	if !mine.has("mcp__t__echo") {
		t.Error("ending a frame revoked the session's grants")
	}
	if r := a.do("POST", "/v1/sessions/chat/end", nil); r.status != http.StatusNoContent {
		t.Fatalf("end: %d %s", r.status, r.body)
	}
	a.do("GET", "/v1/tools?session=chat", nil).json(t, &mine)
	if n := mine.serverTools(); n != 0 {
		t.Errorf("ended session sees %d server tools", n)
	}

	for _, tc := range []struct {
		name, path string
		body       any
		status     int
		code       string
	}{
		{"unknown group", "/v1/sessions/chat/activate", map[string]any{"groups": []string{"nope"}}, 404, sidecar.CodeUnknownGroup},
		{"no groups", "/v1/sessions/chat/activate", map[string]any{}, 400, sidecar.CodeInvalidRequest},
		{"bad body", "/v1/sessions/chat/activate", "{", 400, sidecar.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do("POST", tc.path, tc.body)
			if r.status != tc.status || r.errorCode(t) != tc.code {
				t.Errorf("%d %s", r.status, r.body)
			}
		})
	}
}

func TestCall(t *testing.T) {
	m := sidecar.NewMetrics(sidecar.MetricsOptions{})
	a := openAPIHost(t, mcpvisor.Options{CallMiddleware: []mcpvisor.CallMiddleware{m.CallMiddleware}}, sidecar.Options{}, mcptest("t"))

	var res callResult
	r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__echo", "arguments": map[string]any{"a": 1}})
	if r.status != http.StatusOK {
		t.Fatalf("echo: %d %s", r.status, r.body)
	}
	r.json(t, &res)
	if res.ResultType != "string" || res.IsError || res.Result != `{"a":1}` || len(res.Media) != 0 {
		t.Errorf("echo result %+v", res)
	}

	a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__structured"}).json(t, &res)
	if res.ResultType != "json" || string(res.Structured) != `{"x":1}` {
		t.Errorf("structured result %+v (%s)", res, res.Structured)
	}

	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"unknown tool", map[string]any{"tool": "mcp__t__nope"}, 404, sidecar.CodeUnknownTool},
		{"unknown server", map[string]any{"tool": "mcp__ghost__echo"}, 404, ""},
		{"no tool", map[string]any{}, 400, sidecar.CodeInvalidRequest},
		{"stack without session", map[string]any{"tool": "mcp__t__echo", "stack": "f"}, 400, sidecar.CodeInvalidRequest},
		{"not JSON", "{{", 400, sidecar.CodeInvalidRequest},
		{"too large", `{"tool":"mcp__t__echo","arguments":{"s":"` + strings.Repeat("x", 16<<20) + `"}}`, 413, sidecar.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do("POST", "/v1/call", tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", r.status, tc.status, r.body)
			}
			code := r.errorCode(t)
			if tc.code != "" && code != tc.code {
				t.Errorf("code %q, want %q", code, tc.code)
			}
			if tc.code == "" && code != sidecar.CodeUnknownTool && code != sidecar.CodeUnknownServer {
				t.Errorf("code %q", code)
			}
		})
	}

	// Counted by the host's pipeline, labelled with the server's own tool
	// names.
	fams := metricsScrape(t, m)
	for _, c := range []struct{ tool, outcome string }{{"echo", "ok"}, {"structured", "ok"}, {"nope", sidecar.CodeUnknownTool}} {
		if got := metricValue(t, fams, "mcpvisor_calls_total", "outcome="+c.outcome, "server=t", "tool="+c.tool); got != 1 {
			t.Errorf("mcpvisor_calls_total{t,%s,%s} = %v, want 1", c.tool, c.outcome, got)
		}
	}

	// A call's arguments may be larger than another request's 1 MiB body:
	// up to a stdio frame.
	big := strings.Repeat("x", 2<<20)
	r = a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__echo", "arguments": map[string]any{"s": big}})
	if r.status != http.StatusOK {
		t.Fatalf("echo of 2 MiB: %d %.300s", r.status, r.body)
	}
	r.json(t, &res)
	if res.Result != `{"s":"`+big+`"}` {
		t.Errorf("echo of 2 MiB came back as %d bytes", len(res.Result))
	}
	if r := a.do("PUT", "/v1/servers/x", `{"command":"`+big+`"}`); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("PUT /v1/servers/x with 2 MiB: %d, want 413 (1 MiB for requests other than calls)", r.status)
	}
}

func TestCallSSEProgress(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	body, _ := json.Marshal(map[string]any{"tool": "mcp__t__progress", "arguments": map[string]any{"steps": 3, "delay_ms": 5}})
	req, _ := http.NewRequest("POST", a.ts.URL+"/v1/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	evs := readSSE(t, resp.Body, "result", "error")
	if len(evs) != 4 {
		t.Fatalf("events %+v", evs)
	}
	for i, ev := range evs[:3] {
		var p struct {
			Progress float64 `json:"progress"`
			Total    float64 `json:"total"`
			Message  string  `json:"message"`
		}
		if ev.name != "progress" || json.Unmarshal([]byte(ev.data), &p) != nil ||
			p.Progress != float64(i+1) || p.Total != 3 || p.Message == "" {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
	var res callResult
	if evs[3].name != "result" || json.Unmarshal([]byte(evs[3].data), &res) != nil || res.Result != "done after 3 steps" {
		t.Errorf("last event %+v", evs[3])
	}
}

func TestCallSSEError(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	r := a.doAuth("POST", "/v1/call", map[string]any{"tool": "mcp__t__nope"}, "Bearer "+testToken,
		http.Header{"Accept": {"text/event-stream"}})
	evs := readSSE(t, bytes.NewReader(r.body), "error")
	if len(evs) != 1 || evs[0].name != "error" || !strings.Contains(evs[0].data, `"code":"unknown_tool"`) {
		t.Fatalf("events %+v", evs)
	}
}

// A client that goes away cancels its call, upstream too.
func TestCallCancelledByClient(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body, _ := json.Marshal(map[string]any{"tool": "mcp__t__progress", "arguments": map[string]any{"steps": 10000, "delay_ms": 20}})
	req, _ := http.NewRequestWithContext(ctx, "POST", a.ts.URL+"/v1/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first progress event says the call is in flight.
	if evs := readSSE(t, resp.Body, "progress"); len(evs) != 1 {
		t.Fatalf("events %+v", evs)
	}
	cancel()
	eventually(t, "the call to be recorded as cancelled", func() bool {
		recs, err := a.h.Journal().History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall, Server: "t"})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.Tool == "mcp__t__progress" {
				if rec.Outcome != "cancelled" {
					t.Fatalf("outcome %q", rec.Outcome)
				}
				return true
			}
		}
		return false
	})
}

func TestUnavailable(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	if r := a.do("POST", "/v1/servers/t/disable", nil); r.status != http.StatusOK {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__echo"})
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("call to a disabled server: %d %s", r.status, r.body)
	}
	if code := r.errorCode(t); code != sidecar.CodeUnavailable {
		t.Errorf("code %q", code)
	}
	if !strings.Contains(string(r.body), "disabled") {
		t.Errorf("message does not say disabled: %s", r.body)
	}
}

func TestMedia(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	var res callResult
	a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__image"}).json(t, &res)
	if len(res.Media) != 1 || res.Media[0].Kind != "image" || res.Media[0].MimeType != "image/png" ||
		!strings.HasPrefix(res.Media[0].URL, "/v1/media/") || !strings.Contains(res.Result, res.Media[0].URL) {
		t.Fatalf("image result %+v", res)
	}
	r := a.do("GET", res.Media[0].URL, nil)
	if r.status != http.StatusOK || !bytes.HasPrefix(r.body, []byte("\x89PNG")) || int64(len(r.body)) != res.Media[0].Size {
		t.Fatalf("GET %s: %d %q", res.Media[0].URL, r.status, r.body)
	}
	for k, want := range map[string]string{
		"Content-Type": "image/png", "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox",
	} {
		if got := r.header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}

	if err := os.WriteFile(filepath.Join(a.data, "secret.txt"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(res.Media[0].URL, "/v1/media/")
	for _, bad := range []string{
		"..%2Fsecret.txt", "..%2F..%2Fetc%2Fpasswd", "token", strings.ToUpper(name[:32]) + ".png",
		name + ".tmp", "0123456789abcdef0123456789abcdef.png", name[:32] + ".exe", "%2E%2E",
	} {
		r := a.do("GET", "/v1/media/"+bad, nil)
		if r.status != http.StatusNotFound || bytes.Contains(r.body, []byte("secret")) {
			t.Errorf("GET /v1/media/%s: %d %s", bad, r.status, r.body)
		}
	}
}

func TestElicitationThroughTheAPI(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"user":     map[string]any{"type": "string", "title": "User"},
		"password": map[string]any{"type": "string", "format": "password"},
	}, "required": []string{"user", "password"}}
	type outcome struct {
		r   callResult
		err string
	}
	done := make(chan outcome, 1)
	go func() {
		body, _ := json.Marshal(map[string]any{"tool": "mcp__t__ask", "arguments": map[string]any{"message": "Log in", "schema": schema}})
		req, _ := http.NewRequest("POST", a.ts.URL+"/v1/call", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := a.ts.Client().Do(req)
		if err != nil {
			done <- outcome{err: err.Error()}
			return
		}
		defer resp.Body.Close()
		var o outcome
		if err := json.NewDecoder(resp.Body).Decode(&o.r); err != nil || resp.StatusCode != http.StatusOK {
			o.err = resp.Status
		}
		done <- o
	}()

	type field struct {
		Name      string `json:"name"`
		Required  bool   `json:"required"`
		Sensitive bool   `json:"sensitive"`
	}
	var list struct {
		Elicitations []struct {
			ID      string  `json:"id"`
			Server  string  `json:"server"`
			Mode    string  `json:"mode"`
			Message string  `json:"message"`
			Fields  []field `json:"fields"`
		} `json:"elicitations"`
	}
	eventually(t, "a pending elicitation", func() bool {
		a.do("GET", "/v1/elicitations", nil).json(t, &list)
		return len(list.Elicitations) > 0
	})
	el := list.Elicitations[0]
	if el.Server != "t" || el.Mode != "form" || el.Message != "Log in" || len(el.Fields) != 2 {
		t.Fatalf("elicitation %+v", el)
	}
	sens := map[string]bool{}
	for _, f := range el.Fields {
		sens[f.Name] = f.Sensitive
	}
	if !sens["password"] || sens["user"] {
		t.Errorf("sensitive flags %v", sens)
	}

	// Refusals leave it pending.
	for _, tc := range []struct {
		id     string
		body   any
		status int
		code   string
	}{
		{el.ID, map[string]any{"action": "maybe"}, 400, sidecar.CodeInvalidRequest},
		{el.ID, map[string]any{"action": "accept", "content": map[string]any{"user": "ada"}}, 400, sidecar.CodeInvalidRequest},
		{el.ID, map[string]any{"action": "decline", "content": map[string]any{"user": "ada"}}, 400, sidecar.CodeInvalidRequest},
		{"no-such-id", map[string]any{"action": "cancel"}, 404, sidecar.CodeUnknownElicitation},
	} {
		r := a.do("POST", "/v1/elicitations/"+tc.id, tc.body)
		if r.status != tc.status || r.errorCode(t) != tc.code {
			t.Errorf("%v: %d %s", tc.body, r.status, r.body)
		}
		if strings.Contains(string(r.body), "ada") {
			t.Errorf("an error echoes a value: %s", r.body)
		}
	}

	r := a.do("POST", "/v1/elicitations/"+el.ID, map[string]any{"action": "accept",
		"content": map[string]any{"user": "ada", "password": "hunter22"}})
	if r.status != http.StatusNoContent {
		t.Fatalf("accept: %d %s", r.status, r.body)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return after the elicitation was answered")
	}
	if o.err != "" {
		t.Fatalf("call: %s", o.err)
	}
	var answer struct {
		Action  string            `json:"action"`
		Content map[string]string `json:"content"`
	}
	if err := json.Unmarshal(o.r.Structured, &answer); err != nil || answer.Action != "accept" || answer.Content["user"] != "ada" {
		t.Errorf("the server got %s (%v)", o.r.Structured, err)
	}
	a.do("GET", "/v1/elicitations", nil).json(t, &list)
	if len(list.Elicitations) != 0 {
		t.Errorf("still pending: %+v", list.Elicitations)
	}
}

func TestEvents(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))

	// Subscribe first: the stream sends only what is journaled after it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.ts.URL+"/v1/events/stream?method=event/test", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	stream, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK || stream.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %q", stream.StatusCode, stream.Header.Get("Content-Type"))
	}

	if r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__notify"}); r.status != http.StatusOK {
		t.Fatalf("notify: %d %s", r.status, r.body)
	}
	evs := readSSE(t, stream.Body, "event")
	if len(evs) != 1 || !strings.Contains(evs[0].data, `"method":"event/test"`) || !strings.Contains(evs[0].data, `"n":1`) {
		t.Fatalf("stream events %+v", evs)
	}
	cancel()

	type eventList struct {
		Events []struct {
			ID     uint64          `json:"id"`
			Server string          `json:"server"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Status string          `json:"status"`
		} `json:"events"`
	}
	var l eventList
	a.do("GET", "/v1/events?pending=1&server=t&method=event/test&limit=10", nil).json(t, &l)
	if len(l.Events) != 1 || l.Events[0].Server != "t" || l.Events[0].Status != mcpvisor.EventPending {
		t.Fatalf("pending events %+v", l.Events)
	}
	id := l.Events[0].ID
	if r := a.do("POST", "/v1/events/ack", map[string]any{"ids": []uint64{id}}); r.status != http.StatusOK {
		t.Fatalf("ack: %d %s", r.status, r.body)
	}
	a.do("GET", "/v1/events?pending=1&method=event/test", nil).json(t, &l)
	if len(l.Events) != 0 {
		t.Errorf("still pending after ack: %+v", l.Events)
	}
	a.do("GET", "/v1/events?method=event/test", nil).json(t, &l)
	if len(l.Events) != 1 || l.Events[0].Status != mcpvisor.EventProcessed {
		t.Errorf("after ack: %+v", l.Events)
	}
	a.do("GET", "/v1/events?after="+jsonNum(id), nil).json(t, &l)
	for _, e := range l.Events {
		if e.ID <= id {
			t.Errorf("after=%d listed %d", id, e.ID)
		}
	}

	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"GET", "/v1/events?pending=maybe", nil, 400, sidecar.CodeInvalidRequest},
		{"GET", "/v1/events?after=x", nil, 400, sidecar.CodeInvalidRequest},
		{"GET", "/v1/events?limit=-1", nil, 400, sidecar.CodeInvalidRequest},
		{"GET", "/v1/events/stream?after=x", nil, 400, sidecar.CodeInvalidRequest},
		{"POST", "/v1/events/ack", map[string]any{"ids": []uint64{}}, 400, sidecar.CodeInvalidRequest},
		{"POST", "/v1/events/ack", map[string]any{"ids": []uint64{999999}}, 404, sidecar.CodeUnknownEvent},
	} {
		r := a.do(tc.method, tc.path, tc.body)
		if r.status != tc.status || r.errorCode(t) != tc.code {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, r.status, r.body)
		}
	}
}

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestTasks(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	var res callResult
	r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__sleep_task", "arguments": map[string]any{"ms": 50}, "detached": true})
	if r.status != http.StatusOK {
		t.Fatalf("detached call: %d %s", r.status, r.body)
	}
	r.json(t, &res)
	if res.Task == nil || res.Task.ID == "" {
		t.Fatalf("no task in %s", r.body)
	}
	var list struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	a.do("GET", "/v1/tasks", nil).json(t, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].ID != res.Task.ID {
		t.Errorf("tasks %+v", list.Tasks)
	}
	var task struct {
		ID     string      `json:"id"`
		Tool   string      `json:"tool"`
		Status string      `json:"status"`
		Done   bool        `json:"done"`
		Result *callResult `json:"result"`
	}
	eventually(t, "the task to end", func() bool {
		a.do("GET", "/v1/tasks/"+res.Task.ID, nil).json(t, &task)
		return task.Done
	})
	if task.Tool != "mcp__t__sleep_task" || task.Status != mcpvisor.TaskCompleted || task.Result == nil || task.Result.Result != "slept 50 ms" {
		t.Errorf("task %+v (result %+v)", task, task.Result)
	}
	// The task is the TaskInfo's own JSON, its result with "wire".
	ti, err := a.h.Task(res.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(ti)
	var got, want map[string]json.RawMessage
	a.do("GET", "/v1/tasks/"+res.Task.ID, nil).json(t, &got)
	_ = json.Unmarshal(info, &want)
	delete(got, "result")
	delete(want, "result")
	if diff := cmp.Diff(want, got, cmp.Transformer("string", func(m json.RawMessage) string { return string(m) })); diff != "" {
		t.Errorf("GET /v1/tasks/ID besides its result (-TaskInfo +got):\n%s", diff)
	}
	a.do("GET", "/v1/tasks?pending=1", nil).json(t, &list)
	if len(list.Tasks) != 0 {
		t.Errorf("unfinished tasks %+v", list.Tasks)
	}
	if r := a.do("GET", "/v1/tasks/nope", nil); r.status != http.StatusNotFound || r.errorCode(t) != sidecar.CodeUnknownTask {
		t.Errorf("unknown task: %d %s", r.status, r.body)
	}
}
