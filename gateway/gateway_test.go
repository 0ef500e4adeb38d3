package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/testbin"
)

var bin struct{ mcptest, jobs string }

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{
		"github.com/mcpvisor/mcpvisor/examples/servers/mcptest": &bin.mcptest,
		"github.com/mcpvisor/mcpvisor/examples/servers/jobs":    &bin.jobs,
	})
}

// waitFor bounds every wait of these tests; nothing waits on a sleep.
const waitFor = 30 * time.Second

// fixture is a host with the mcptest servers "a" and "b" and a gateway over
// it; host events reach the gateway (Observe) and the test (events).
type fixture struct {
	h      *mcpvisor.Host
	g      *gateway.Gateway
	events chan mcpvisor.Event
}

func newFixture(t testing.TB, opts gateway.Options, hostOpts ...func(*mcpvisor.Options)) *fixture {
	t.Helper()
	servers := []mcpvisor.ServerConfig{}
	for _, name := range []string{"a", "b"} {
		servers = append(servers, mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: bin.mcptest, Args: []string{"-name", name}, Enabled: true})
	}
	return fixtureOf(t, opts, servers, hostOpts...)
}

// fixtureOf is a fixture with the given servers, all ready.
func fixtureOf(t testing.TB, opts gateway.Options, servers []mcpvisor.ServerConfig, hostOpts ...func(*mcpvisor.Options)) *fixture {
	t.Helper()
	f := &fixture{events: make(chan mcpvisor.Event, 4096)}
	o := mcpvisor.Options{
		Config:  &mcpvisor.Config{Servers: servers},
		DataDir: t.TempDir(),
		Logger:  slog.New(slog.DiscardHandler),
		OnEvent: func(ev mcpvisor.Event) {
			select {
			case f.events <- ev:
			default:
			}
		},
		StopGrace: 500 * time.Millisecond, TermGrace: 500 * time.Millisecond,
		// The fixture's two mcptest servers list over DefaultSearchToolsOver
		// tools between them; the tests here count on activate_tools alone.
		SearchToolsOver: 1000,
	}
	for _, apply := range hostOpts {
		apply(&o)
	}
	h, err := mcpvisor.Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("host Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := h.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	f.h, f.g = h, gateway.New(h, opts)
	t.Cleanup(func() {
		if err := f.g.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
	})
	return f
}

// waitNotification waits for a server's notification (method) among the
// host's events.
func (f *fixture) waitNotification(t *testing.T, server, method string) {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		select {
		case ev := <-f.events:
			if ev.Kind == mcpvisor.EventNotification && ev.Server == server && ev.Method == method {
				return
			}
		case <-timeout:
			t.Fatalf("no %s notification from %q", method, server)
		}
	}
}

// frame is a JSON-RPC message as the tests read it.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type toolsResult struct {
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations *struct {
			ReadOnlyHint *bool `json:"readOnlyHint"`
		} `json:"annotations"`
	} `json:"tools"`
}

type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r callResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return v
}

func toolNames(t *testing.T, f frame) []string {
	t.Helper()
	if f.Error != nil {
		t.Fatalf("tools/list error: %+v", f.Error)
	}
	var names []string
	for _, tl := range decode[toolsResult](t, f.Result).Tools {
		names = append(names, tl.Name)
	}
	return names
}

// httpClient is a Streamable HTTP MCP client written against the spec with
// net/http alone (the official SDK is not a dependency of this module).
type httpClient struct {
	t      *testing.T
	url    string
	sid    string
	origin string
}

func (c *httpClient) do(method, body string, header map[string]string) *http.Response {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	c.t.Cleanup(cancel)
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	if c.origin != "" {
		req.Header.Set("Origin", c.origin)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// rpc posts a request and reads its JSON response.
func (c *httpClient) rpc(id int, method, params string) frame {
	c.t.Helper()
	resp := c.do(http.MethodPost, request(id, method, params), nil)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	ct := resp.Header.Get("Content-Type")
	if method == "tools/call" && ct == "text/event-stream" {
		// A call's resumable stream: its response is the last event.
		var last frame
		for f := range sseEvents(resp.Body) {
			last = f
		}
		if last.Method != "" || len(last.ID) == 0 {
			c.t.Fatalf("%s: the stream ended without a response", method)
		}
		return last
	}
	if ct != "application/json" {
		c.t.Fatalf("%s: Content-Type %q", method, ct)
	}
	return c.readFrame(resp.Body)
}

func (c *httpClient) readFrame(r io.Reader) frame {
	c.t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		c.t.Fatal(err)
	}
	return decode[frame](c.t, b)
}

func (c *httpClient) notify(method, params string) {
	c.t.Helper()
	resp := c.do(http.MethodPost, notification(method, params), nil)
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("%s: status %d, want 202", method, resp.StatusCode)
	}
}

func request(id int, method, params string) string {
	if params == "" {
		params = "{}"
	}
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"` + method + `","params":` + params + `}`
}

func notification(method, params string) string {
	if params == "" {
		return `{"jsonrpc":"2.0","method":"` + method + `"}`
	}
	return `{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `}`
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

const initParams = `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}`

// sseEvents reads the data of each SSE event into a channel, closed at the
// end of the stream.
func sseEvents(body io.Reader) <-chan frame {
	ch := make(chan frame, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if len(data) > 0 {
					var f frame
					if json.Unmarshal([]byte(strings.Join(data, "\n")), &f) == nil {
						ch <- f
					}
				}
				data = nil
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan frame, what string) frame {
	t.Helper()
	select {
	case f, ok := <-ch:
		if !ok {
			t.Fatalf("stream ended before %s", what)
		}
		return f
	case <-time.After(waitFor):
		t.Fatalf("no %s", what)
	}
	return frame{}
}

func newHTTP(t *testing.T, f *fixture) *httpClient {
	t.Helper()
	srv := httptest.NewServer(f.g.Handler())
	t.Cleanup(func() {
		// The gateway first: it ends the calls the server's Close waits for.
		if err := f.g.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
		srv.Close()
	})
	return &httpClient{t: t, url: srv.URL + "/mcp"}
}

func (c *httpClient) initialize() frame {
	c.t.Helper()
	resp := c.do(http.MethodPost, request(1, "initialize", initParams), nil)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("initialize: status %d", resp.StatusCode)
	}
	c.sid = resp.Header.Get("Mcp-Session-Id")
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(c.sid) {
		c.t.Fatalf("Mcp-Session-Id %q: want 16 random bytes in hex", c.sid)
	}
	init := c.readFrame(resp.Body)
	c.notify("notifications/initialized", "")
	return init
}

func TestHTTPSession(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c := newHTTP(t, f)

	init := c.initialize()
	ir := decode[struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools *struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		} `json:"capabilities"`
		ServerInfo struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	}](t, init.Result)
	if ir.ProtocolVersion != "2025-11-25" || ir.Capabilities.Tools == nil || !ir.Capabilities.Tools.ListChanged || ir.ServerInfo.Name != "mcpvisor" {
		t.Fatalf("initialize result %s", init.Result)
	}

	// The standalone stream, open before grants change.
	get := c.do(http.MethodGet, "", map[string]string{"Accept": "text/event-stream"})
	if get.StatusCode != http.StatusOK || get.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: status %d, Content-Type %q", get.StatusCode, get.Header.Get("Content-Type"))
	}
	stream := sseEvents(get.Body)

	if got := c.rpc(2, "ping", ""); got.Error != nil || string(got.Result) != "{}" {
		t.Fatalf("ping: %+v %s", got.Error, got.Result)
	}
	if names := toolNames(t, c.rpc(3, "tools/list", "")); len(names) != 1 || names[0] != "activate_tools" {
		t.Fatalf("tools before activation: %v, want only activate_tools", names)
	}

	act := c.rpc(4, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)
	if r := decode[callResult](t, act.Result); r.IsError || !strings.Contains(r.text(), "mcp__a__echo") {
		t.Fatalf("activate_tools: %s", act.Result)
	}
	if n := next(t, stream, "list_changed on the GET stream"); n.Method != "notifications/tools/list_changed" || n.ID != nil {
		t.Fatalf("GET stream carried %+v", n)
	}

	list := c.rpc(5, "tools/list", "")
	names := toolNames(t, list)
	if len(names) < 2 || names[0] != "activate_tools" || !contains(names, "mcp__a__echo") || contains(names, "mcp__b__echo") {
		t.Fatalf("tools after activating a: %v", names)
	}
	for _, tl := range decode[toolsResult](t, list.Result).Tools {
		if tl.Name == "mcp__a__echo" && (len(tl.InputSchema) == 0 || tl.Annotations == nil || tl.Annotations.ReadOnlyHint == nil || !*tl.Annotations.ReadOnlyHint) {
			t.Errorf("mcp__a__echo lost its schema or annotations: %+v", tl)
		}
	}

	echo := c.rpc(6, "tools/call", `{"name":"mcp__a__echo","arguments":{"text":"hello gateway"}}`)
	if r := decode[callResult](t, echo.Result); r.IsError || !strings.Contains(r.text(), "hello gateway") {
		t.Fatalf("echo: %s", echo.Result)
	}

	// A granted server's unknown tool is a protocol error; an ungranted
	// server's tool is a tool error that says what to activate.
	if u := c.rpc(7, "tools/call", `{"name":"mcp__a__nope","arguments":{}}`); u.Error == nil || u.Error.Code != -32602 {
		t.Fatalf("unknown tool: %+v %s", u.Error, u.Result)
	}
	ng := c.rpc(8, "tools/call", `{"name":"mcp__b__echo","arguments":{}}`)
	if r := decode[callResult](t, ng.Result); !r.IsError || !strings.Contains(r.text(), "activate") {
		t.Fatalf("ungranted tool: %+v %s", ng.Error, ng.Result)
	}
	if u := c.rpc(10, "tools/call", `{"name":"mcp__nosuch__echo","arguments":{}}`); u.Error == nil || u.Error.Code != -32602 {
		t.Fatalf("tool of no server: %+v %s", u.Error, u.Result)
	}
	cfg := c.rpc(11, "tools/call", `{"name":"activate_tools","arguments":{"groups":["config"]}}`)
	if r := decode[callResult](t, cfg.Result); !r.IsError {
		t.Fatalf("activate_tools granted the config group: %s", cfg.Result)
	}
	if m := c.rpc(9, "no/such/method", ""); m.Error == nil || m.Error.Code != -32601 {
		t.Fatalf("unknown method: %+v", m.Error)
	}

	// DELETE ends the session: its GET stream ends, its id is forgotten.
	if resp := c.do(http.MethodDelete, "", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: status %d", resp.StatusCode)
	}
	for range stream {
	}
	if resp := c.do(http.MethodPost, request(10, "ping", ""), nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after DELETE: status %d, want 404", resp.StatusCode)
	}
	if g := f.h.Session(c.sid, "").Groups(); len(g) != 0 {
		t.Errorf("grants after DELETE: %v", g)
	}
}

func TestHTTPProgressOverSSE(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c := newHTTP(t, f)
	c.initialize()
	c.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)

	resp := c.do(http.MethodPost, request(3, "tools/call", `{"name":"mcp__a__progress","arguments":{"steps":3,"delay_ms":1},"_meta":{"progressToken":"client-tok"}}`), nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q, want an SSE stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var progress []float64
	var final frame
	for ev := range sseEvents(resp.Body) {
		switch {
		case ev.Method == "notifications/progress":
			p := decode[struct {
				Token    json.RawMessage `json:"progressToken"`
				Progress float64         `json:"progress"`
			}](t, ev.Params)
			if string(p.Token) != `"client-tok"` {
				t.Errorf("progress token %s, want the client's", p.Token)
			}
			progress = append(progress, p.Progress)
		case ev.Method == "" && ev.ID != nil:
			final = ev
		default:
			t.Errorf("unexpected event %+v", ev)
		}
	}
	if string(final.ID) != "3" {
		t.Fatalf("no response on the stream (got %+v)", final)
	}
	if r := decode[callResult](t, final.Result); r.IsError || !strings.Contains(r.text(), "3 steps") {
		t.Fatalf("progress result: %s", final.Result)
	}
	if len(progress) != 3 || progress[0] != 1 || progress[2] != 3 {
		t.Fatalf("progress %v, want 1, 2, 3", progress)
	}

	// Without a token the answer is plain JSON.
	plain := c.rpc(4, "tools/call", `{"name":"mcp__a__progress","arguments":{"steps":1,"delay_ms":1}}`)
	if r := decode[callResult](t, plain.Result); r.IsError {
		t.Fatalf("progress without token: %s", plain.Result)
	}
}

// A call the client cancels gets no response (the spec's cancellation):
// its POST is answered with an SSE stream that ends empty. Only a client
// that cannot take SSE, against the transport's rule, gets an error, as a
// JSON answer must hold a response.
func TestHTTPCancel(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c := newHTTP(t, f)
	c.initialize()
	c.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)

	for i, tc := range []struct {
		name, accept, wantType string
		wantError              bool
	}{
		{name: "sse", accept: "application/json, text/event-stream", wantType: "text/event-stream"},
		{name: "json only", accept: "application/json", wantType: "application/json", wantError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := 10 + i
			done := make(chan *http.Response, 1)
			go func() {
				// c.do calls t.Fatal only on transport failures; a plain
				// request keeps that off this goroutine.
				req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(request(id, "tools/call", `{"name":"mcp__a__slow","arguments":{"ms":60000,"started":true}}`)))
				req.Header.Set("Accept", tc.accept)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Mcp-Session-Id", c.sid)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- nil
					return
				}
				done <- resp
			}()
			f.waitNotification(t, "a", "event/started")
			start := time.Now()
			c.notify("notifications/cancelled", `{"requestId":`+itoa(id)+`,"reason":"test"}`)
			var resp *http.Response
			select {
			case resp = <-done:
				if resp == nil {
					t.Fatal("the slow call's POST failed")
				}
				defer resp.Body.Close()
			case <-time.After(waitFor):
				t.Fatal("the cancelled call did not end")
			}
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.wantType {
				t.Fatalf("status %d, Content-Type %q, want 200 and %s", resp.StatusCode, resp.Header.Get("Content-Type"), tc.wantType)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantError {
				if got := decode[frame](t, body); got.Error == nil || got.Result != nil || string(got.ID) != itoa(id) {
					t.Fatalf("cancelled call answered %s, want an error", body)
				}
			} else if !regexp.MustCompile(`^id: \d+-0\nretry: \d+\ndata: \n\n$`).Match(body) {
				t.Fatalf("cancelled call answered %q, want a stream of the priming event alone", body)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Fatalf("cancel took %v", d)
			}
		})
	}
	waitHistory(t, f.h, "mcp__a__slow", "cancelled")
	// The session still works.
	if p := c.rpc(4, "ping", ""); p.Error != nil {
		t.Fatal(p.Error)
	}
}

// A call cancelled after its answer turned into an SSE stream: the stream
// ends after what it carried, without a response.
func TestHTTPCancelStreaming(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c := newHTTP(t, f)
	c.initialize()
	c.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)

	resp := c.do(http.MethodPost, request(3, "tools/call", `{"name":"mcp__a__progress","arguments":{"steps":2,"delay_ms":600000},"_meta":{"progressToken":"p"}}`), nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q, want an SSE stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := sseEvents(resp.Body)
	if p := next(t, events, "the first progress"); p.Method != "notifications/progress" {
		t.Fatalf("got %+v, want progress", p)
	}
	c.notify("notifications/cancelled", `{"requestId":3}`)
	// The request's own deadline is waitFor: the stream must end well
	// before, not because the client gave up.
	timeout := time.After(waitFor / 2)
	for ended := false; !ended; {
		select {
		case ev, ok := <-events:
			if ok {
				t.Errorf("the cancelled call's stream went on with %+v", ev)
			}
			ended = !ok
		case <-timeout:
			t.Fatal("the cancelled call's stream did not end")
		}
	}
	waitHistory(t, f.h, "mcp__a__progress", "cancelled")
}

func TestHTTPTransportErrors(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c := newHTTP(t, f)

	t.Run("missing session", func(t *testing.T) {
		c := &httpClient{t: t, url: c.url}
		if resp := c.do(http.MethodPost, request(1, "tools/list", ""), nil); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("unknown session", func(t *testing.T) {
		c := &httpClient{t: t, url: c.url, sid: strings.Repeat("ab", 16)}
		for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			body := ""
			if m == http.MethodPost {
				body = request(1, "tools/list", "")
			}
			if resp := c.do(m, body, nil); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("%s: status %d, want 404", m, resp.StatusCode)
			}
		}
	})
	t.Run("bad origin", func(t *testing.T) {
		c := &httpClient{t: t, url: c.url, origin: "https://evil.example"}
		resp := c.do(http.MethodPost, request(1, "initialize", initParams), nil)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("status %d, session %q, want 403 and no session", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
		}
	})
	t.Run("loopback origin", func(t *testing.T) {
		c := &httpClient{t: t, url: c.url, origin: "http://localhost:5173"}
		c.initialize()
	})
	t.Run("bad json", func(t *testing.T) {
		c := &httpClient{t: t, url: c.url}
		if resp := c.do(http.MethodPost, `{"jsonrpc":`, nil); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("unsupported method", func(t *testing.T) {
		c := &httpClient{t: t, url: c.url}
		if resp := c.do(http.MethodPut, "{}", nil); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("status %d, want 405", resp.StatusCode)
		}
	})
}

func TestHTTPAllowedOrigins(t *testing.T) {
	f := newFixture(t, gateway.Options{AllowedOrigins: []string{"https://app.example"}})
	c := newHTTP(t, f)
	for origin, want := range map[string]int{
		"https://app.example":   http.StatusOK,
		"http://localhost:3000": http.StatusForbidden, // the list replaces the loopback default
		"https://app.example.x": http.StatusForbidden,
	} {
		c := &httpClient{t: t, url: c.url, origin: origin}
		if resp := c.do(http.MethodPost, request(1, "initialize", initParams), nil); resp.StatusCode != want {
			t.Errorf("Origin %s: status %d, want %d", origin, resp.StatusCode, want)
		}
	}
}

// A host event that changes a session's tools (its server disabled)
// reaches the session as list_changed.
func TestHTTPListChangedOnCatalogChange(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c := newHTTP(t, f)
	c.initialize()
	c.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)
	c.rpc(3, "tools/list", "")
	get := c.do(http.MethodGet, "", map[string]string{"Accept": "text/event-stream"})
	stream := sseEvents(get.Body)
	next(t, stream, "list_changed after activation") // pending from activate_tools

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := f.h.SetEnabled(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	if n := next(t, stream, "list_changed after disabling a"); n.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v", n)
	}
	if names := toolNames(t, c.rpc(4, "tools/list", "")); contains(names, "mcp__a__echo") {
		t.Fatalf("tools of a disabled server listed: %v", names)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// stdioClient drives ServeStdio through pipes.
type stdioClient struct {
	t      *testing.T
	w      *io.PipeWriter
	frames chan frame
}

func startStdio(t *testing.T, f *fixture) (*stdioClient, <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := f.g.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		served <- err
	}()
	c := &stdioClient{t: t, w: inW, frames: make(chan frame, 64)}
	go func() {
		defer close(c.frames)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var fr frame
			if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
				t.Errorf("stdio frame %q: %v", sc.Bytes(), err)
				continue
			}
			c.frames <- fr
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		for range c.frames {
		}
	})
	return c, served
}

func (c *stdioClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// await reads frames until the response with id, handing the others to
// other (may be nil).
func (c *stdioClient) await(id int, other func(frame)) frame {
	c.t.Helper()
	for {
		f := next(c.t, c.frames, "response "+itoa(id))
		if f.Method == "" && string(f.ID) == itoa(id) {
			return f
		}
		if other == nil {
			c.t.Fatalf("unexpected frame %+v while waiting for %d", f, id)
		}
		other(f)
	}
}

func TestStdio(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c, served := startStdio(t, f)

	c.send(request(1, "initialize", initParams))
	if init := c.await(1, nil); init.Error != nil || !bytes.Contains(init.Result, []byte(`"listChanged":true`)) {
		t.Fatalf("initialize: %+v %s", init.Error, init.Result)
	}
	c.send(notification("notifications/initialized", ""))
	c.send(request(2, "tools/list", ""))
	if names := toolNames(t, c.await(2, nil)); len(names) != 1 || names[0] != "activate_tools" {
		t.Fatalf("tools: %v", names)
	}

	c.send(request(3, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`))
	changed := false
	onOther := func(fr frame) {
		if fr.Method != "notifications/tools/list_changed" {
			t.Fatalf("unexpected frame %+v", fr)
		}
		changed = true
	}
	c.await(3, onOther)
	if !changed {
		if n := next(t, c.frames, "list_changed"); n.Method != "notifications/tools/list_changed" {
			t.Fatalf("got %+v, want list_changed", n)
		}
	}
	c.send(request(4, "tools/list", ""))
	if names := toolNames(t, c.await(4, nil)); !contains(names, "mcp__a__echo") {
		t.Fatalf("tools after activation: %v", names)
	}

	c.send(request(5, "tools/call", `{"name":"mcp__a__echo","arguments":{"text":"over stdio"}}`))
	if r := decode[callResult](t, c.await(5, nil).Result); r.IsError || !strings.Contains(r.text(), "over stdio") {
		t.Fatalf("echo: %+v", r)
	}

	// Progress with a numeric token comes back with that token.
	c.send(request(6, "tools/call", `{"name":"mcp__a__progress","arguments":{"steps":2,"delay_ms":1},"_meta":{"progressToken":42}}`))
	var tokens []string
	res := c.await(6, func(fr frame) {
		if fr.Method != "notifications/progress" {
			t.Fatalf("unexpected frame %+v", fr)
		}
		tokens = append(tokens, string(decode[struct {
			Token json.RawMessage `json:"progressToken"`
		}](t, fr.Params).Token))
	})
	if r := decode[callResult](t, res.Result); r.IsError || len(tokens) != 2 || tokens[0] != "42" || tokens[1] != "42" {
		t.Fatalf("progress: tokens %v, result %s", tokens, res.Result)
	}

	// A cancelled call gets no response; the session answers what follows.
	c.send(request(7, "tools/call", `{"name":"mcp__a__slow","arguments":{"ms":60000,"started":true}}`))
	f.waitNotification(t, "a", "event/started")
	c.send(notification("notifications/cancelled", `{"requestId":7}`))
	c.send(request(8, "ping", ""))
	if p := c.await(8, nil); p.Error != nil {
		t.Fatal(p.Error)
	}
	waitHistory(t, f.h, "mcp__a__slow", "cancelled")

	c.send(`not json`)
	if bad := next(t, c.frames, "parse error"); bad.Error == nil || bad.Error.Code != -32700 {
		t.Fatalf("bad frame answered %+v", bad)
	}

	c.w.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("ServeStdio did not return at EOF")
	}
}

func TestStdioContextEnds(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.g.ServeStdio(ctx, inR, io.Discard) }()
	cancel()
	select {
	case err := <-served:
		if err != context.Canceled {
			t.Fatalf("ServeStdio: %v, want context.Canceled", err)
		}
	case <-time.After(waitFor):
		t.Fatal("ServeStdio did not return when its context ended")
	}
}

// waitHistory waits until the journal holds a call of tool with outcome.
// The history is written behind the call, so this polls, bounded.
// TestStdioCancelRightAfterRequest: a cancel read just after its request
// reaches it, although the request is served on a goroutine of its own.
func TestStdioCancelRightAfterRequest(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c, _ := startStdio(t, f)
	c.send(request(1, "initialize", initParams))
	c.await(1, nil)
	c.send(request(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`))
	c.await(2, func(frame) {})
	// One write: the cancel is read while the call is being started.
	c.send(request(3, "tools/call", `{"name":"mcp__a__slow","arguments":{"ms":60000}}`) + "\n" +
		notification("notifications/cancelled", `{"requestId":3}`))
	waitHistory(t, f.h, "mcp__a__slow", "cancelled")
	c.send(request(4, "ping", ""))
	c.await(4, func(fr frame) {
		if string(fr.ID) == "3" {
			t.Errorf("the cancelled call was answered: %+v", fr)
		}
	})
}

func waitHistory(t *testing.T, h *mcpvisor.Host, tool, outcome string) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(waitFor)
	for {
		recs, err := h.Journal().History(mcpvisor.HistoryFilter{Tool: tool})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Outcome == outcome {
				return
			}
		}
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("no %s call of %s in the history: %+v", outcome, tool, recs)
		}
	}
}

// Results pass through as the server sent them: structuredContent, media
// blocks, the server's JSON-RPC errors; the host's own failures are tool
// errors; an upstream catalog change reaches the session.
func TestHTTPPassThrough(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c := newHTTP(t, f)
	c.initialize()
	c.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)
	c.rpc(3, "tools/list", "")
	get := c.do(http.MethodGet, "", map[string]string{"Accept": "text/event-stream"})
	stream := sseEvents(get.Body)
	next(t, stream, "list_changed after activation")

	st := c.rpc(4, "tools/call", `{"name":"mcp__a__structured","arguments":{}}`)
	if sc := decode[struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
	}](t, st.Result).StructuredContent; string(sc) != `{"x":1}` {
		t.Errorf("structuredContent %s in %s", sc, st.Result)
	}

	img := c.rpc(5, "tools/call", `{"name":"mcp__a__image","arguments":{}}`)
	blocks := decode[struct {
		Content []struct {
			Type     string `json:"type"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
		} `json:"content"`
	}](t, img.Result).Content
	if len(blocks) == 0 || blocks[0].Type != "image" || blocks[0].MimeType != "image/png" || blocks[0].Data == "" {
		t.Errorf("image result %s, want the server's image block", img.Result)
	}

	if u := c.rpc(6, "tools/call", `{"name":"mcp__a__need_url","arguments":{}}`); u.Error == nil || u.Error.Code != -32042 {
		t.Errorf("need_url: %+v %s, want the server's -32042", u.Error, u.Result)
	}

	lc := c.rpc(7, "tools/call", `{"name":"mcp__a__list_changed","arguments":{}}`)
	if lc.Error != nil {
		t.Fatal(lc.Error)
	}
	if n := next(t, stream, "list_changed after the upstream catalog changed"); n.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v", n)
	}
	if names := toolNames(t, c.rpc(8, "tools/list", "")); !contains(names, "mcp__a__extra") {
		t.Fatalf("tools after the upstream change: %v", names)
	}

	crash := c.rpc(9, "tools/call", `{"name":"mcp__a__crash","arguments":{}}`)
	if r := decode[callResult](t, crash.Result); crash.Error != nil || !r.IsError || r.text() == "" {
		t.Fatalf("a call whose server died: %+v %s, want a tool error", crash.Error, crash.Result)
	}
}

func TestCloseEndsStdio(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	inR, inW := io.Pipe()
	defer inW.Close()
	served := make(chan error, 1)
	c := &stdioClient{t: t, w: inW, frames: make(chan frame, 64)}
	outR, outW := io.Pipe()
	go func() {
		err := f.g.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		served <- err
	}()
	go func() {
		defer close(c.frames)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var fr frame
			_ = json.Unmarshal(sc.Bytes(), &fr)
			c.frames <- fr
		}
	}()
	// An answered request: the session is registered.
	c.send(request(1, "ping", ""))
	c.await(1, nil)
	if err := f.g.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		if err != gateway.ErrClosed {
			t.Fatalf("ServeStdio: %v, want ErrClosed", err)
		}
	case <-time.After(waitFor):
		t.Fatal("ServeStdio did not return at Close")
	}
	for range c.frames {
	}
	if err := f.g.ServeStdio(context.Background(), strings.NewReader(""), io.Discard); err != gateway.ErrClosed {
		t.Fatalf("ServeStdio after Close: %v", err)
	}
}

// sseEvent is one raw SSE event: its id and data.
type sseEvent struct{ id, data string }

// rawSSE reads the events of an SSE body, ids included.
func rawSSE(body io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var ev sseEvent
		seen := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if seen {
					ch <- ev
				}
				ev, seen = sseEvent{}, false
			case strings.HasPrefix(line, "id: "):
				ev.id, seen = strings.TrimPrefix(line, "id: "), true
			case strings.HasPrefix(line, "data:"):
				ev.data, seen = strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "), true
			}
		}
	}()
	return ch
}

// A call's stream survives its connection: the client that lost it gets
// the events it missed, then the rest, from GET with Last-Event-ID, and
// the call goes on meanwhile.
func TestHTTPResume(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c := newHTTP(t, f)
	c.initialize()
	c.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)

	resp := c.do(http.MethodPost, request(3, "tools/call", `{"name":"mcp__a__progress","arguments":{"steps":4,"delay_ms":200},"_meta":{"progressToken":"p"}}`), nil)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want a stream", ct)
	}
	events := rawSSE(resp.Body)
	priming := <-events
	if priming.data != "" || !strings.HasSuffix(priming.id, "-0") {
		t.Fatalf("first event %+v, want the priming event", priming)
	}
	first := <-events
	if !strings.Contains(first.data, `"progress":1`) {
		t.Fatalf("second event %+v, want the first progress", first)
	}
	resp.Body.Close() // the connection breaks mid-call

	get := c.do(http.MethodGet, "", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": first.id})
	if get.StatusCode != http.StatusOK {
		t.Fatalf("resume: status %d", get.StatusCode)
	}
	stream := strings.TrimSuffix(first.id, "-1")
	var got []string
	for ev := range rawSSE(get.Body) {
		if !strings.HasPrefix(ev.id, stream+"-") {
			t.Fatalf("resumed event %+v of another stream", ev)
		}
		got = append(got, ev.data)
	}
	if len(got) != 4 || !strings.Contains(got[2], `"progress":4`) || !strings.Contains(got[3], `"done after 4 steps"`) {
		t.Fatalf("resumed stream carried %q, want progress 2 to 4, then the response", got)
	}

	// An id that is no stream of the session is refused.
	if r := c.do(http.MethodGet, "", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "99-1"}); r.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown Last-Event-ID: status %d, want 404", r.StatusCode)
	}
}

// A request to a loopback listener that names another host is a
// DNS-rebinding attempt, in both eras; AllowedHosts adds names.
func TestHTTPHostRebinding(t *testing.T) {
	f := newFixture(t, gateway.Options{AllowedHosts: []string{"mcp.internal"}})
	c := newHTTP(t, f)
	modern := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for host, want := range map[string]int{
		"":                  http.StatusOK, // the listener's own address
		"localhost:8080":    http.StatusOK,
		"[::1]:1":           http.StatusOK,
		"mcp.internal:9000": http.StatusOK,
		"evil.example":      http.StatusForbidden,
		"evil.example:80":   http.StatusForbidden,
		"10.0.0.1":          http.StatusForbidden,
	} {
		for era, body := range map[string]string{"legacy": request(1, "initialize", initParams), "modern": modern} {
			req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if era == "modern" {
				req.Header.Set("MCP-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "server/discover")
			}
			if host != "" {
				req.Host = host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s, Host %q: status %d, want %d", era, host, resp.StatusCode, want)
			}
		}
	}
}

// A large catalog comes in pages whose concatenation is the whole list, in
// one order; a cursor the gateway did not make is invalid params.
func TestHTTPToolsPages(t *testing.T) {
	f := newFixture(t, gateway.Options{PageSize: 4}, func(o *mcpvisor.Options) { o.AlwaysOn = []string{"a", "b"} })
	c := newHTTP(t, f)
	c.initialize()
	var all []string
	cursor := ""
	for page := 0; ; page++ {
		params := ""
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		r := c.rpc(10+page, "tools/list", params)
		var res struct {
			Tools      []struct{ Name string } `json:"tools"`
			NextCursor string                  `json:"nextCursor"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) > 4 || (res.NextCursor != "" && len(res.Tools) != 4) {
			t.Fatalf("page %d: %d tools, nextCursor %q", page, len(res.Tools), res.NextCursor)
		}
		for _, tool := range res.Tools {
			all = append(all, tool.Name)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	var want []string
	for _, tool := range f.h.Session("x", "").Tools() {
		want = append(want, tool.Name)
	}
	if strings.Join(all, ",") != strings.Join(want, ",") || len(all) < 9 {
		t.Fatalf("pages gave %v, want %v", all, want)
	}
	if r := c.rpc(99, "tools/list", `{"cursor":"not-ours"}`); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("foreign cursor: %+v", r.Error)
	}
}
