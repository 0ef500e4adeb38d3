package main_test

// End-to-end tests of the other places a person answers the server's
// password questions, besides the embedding API's handler
// (harness_e2e_test.go): the sidecar's inbox, through its page in a real
// headless Chromium and through its HTTP API, and a gateway client that
// declared elicitation. The host has no Elicitation handler here: with
// Options.Inbox it declares elicitation to the server and holds each
// question until one of those answers it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/browsertest"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// sidecarToken is the bearer token of the tests' sidecars.
const sidecarToken = "ssh-e2e-token"

// callOutcome is how a call made in the background ended.
type callOutcome struct {
	res *mcpvisor.Result
	err error
}

// callAsync runs mcp__ssh__<tool> on its own goroutine and delivers its
// outcome; the result is recorded for the secrets check. When the test
// ends the call is cancelled and joined, before the host closes.
func (r *rig) callAsync(tool string, args any) <-chan callOutcome {
	r.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout+10*time.Second)
	var wg sync.WaitGroup
	r.t.Cleanup(func() { cancel(); wg.Wait() })
	done := make(chan callOutcome, 1)
	wg.Go(func() {
		res, err := r.host.Call(ctx, mcpvisor.ToolName(serverName, tool), raw)
		if res != nil {
			r.mu.Lock()
			r.results = append(r.results, tool+": "+res.Text, string(res.Raw))
			r.mu.Unlock()
		}
		done <- callOutcome{res, err}
	})
	return done
}

// await waits for a background call and returns its text; a Go error or a
// tool error fails the test.
func (r *rig) await(what string, done <-chan callOutcome) string {
	r.t.Helper()
	select {
	case o := <-done:
		if o.err != nil {
			r.t.Fatalf("%s: %v", what, o.err)
		}
		if o.res.IsError {
			r.t.Fatalf("%s: tool error: %s", what, o.res.Text)
		}
		return o.res.Text
	case <-time.After(callTimeout + 10*time.Second):
		r.t.Fatalf("%s did not return after the answer", what)
		return ""
	}
}

// waitPending waits, on the host's change signal, until its inbox holds n
// elicitations, and returns them.
func waitPending(t *testing.T, h *mcpvisor.Host, n int) []mcpvisor.ElicitationRequest {
	t.Helper()
	timeout := time.After(callTimeout)
	for {
		changed := h.ElicitationsChanged()
		if list := h.Elicitations(); len(list) == n {
			return list
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("the inbox holds %d elicitations, want %d\nserver log:\n%s", len(h.Elicitations()), n, logOf(t, h))
		}
	}
}

func logOf(t *testing.T, h *mcpvisor.Host) string {
	t.Helper()
	b, _ := os.ReadFile(h.LogFile(serverName))
	return string(b)
}

// sidecarAPI is a sidecar in front of a rig's host, on a loopback
// listener, and its HTTP client.
type sidecarAPI struct {
	r   *rig
	url string
}

// serveSidecar serves r's host through the sidecar until the test ends.
func serveSidecar(r *rig) *sidecarAPI {
	r.t.Helper()
	s := sidecar.New(r.host, sidecar.Options{Token: sidecarToken, DataDir: r.dataDir,
		Logger: slog.New(slog.NewTextHandler(r.hostLog, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ts := httptest.NewServer(s.Handler())
	r.t.Cleanup(ts.Close) // before the host closes
	return &sidecarAPI{r: r, url: ts.URL}
}

// do sends a request with the token and returns the status and body; body,
// when not nil, is sent as JSON. Every body is recorded for the secrets
// check.
func (a *sidecarAPI) do(method, path string, body any) (int, []byte) {
	t := a.r.t
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+sidecarToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	a.r.mu.Lock()
	a.r.results = append(a.r.results, method+" "+path+": "+string(b))
	a.r.mu.Unlock()
	return resp.StatusCode, b
}

// elicitationList is GET /v1/elicitations as the tests read it.
type elicitationList struct {
	Elicitations []struct {
		ID      string `json:"id"`
		Server  string `json:"server"`
		Mode    string `json:"mode"`
		Message string `json:"message"`
		Fields  []struct {
			Name      string          `json:"name"`
			Title     string          `json:"title"`
			Type      string          `json:"type"`
			Format    string          `json:"format"`
			Required  bool            `json:"required"`
			Sensitive bool            `json:"sensitive"`
			Default   json.RawMessage `json:"default"`
		} `json:"fields"`
	} `json:"elicitations"`
}

// pendingPassword waits for the server's question in the inbox and checks
// GET /v1/elicitations lists it as a form with one required, sensitive
// password field, and nothing that is a secret. It returns its id and the
// field's title.
func (a *sidecarAPI) pendingPassword() (id, title string) {
	t := a.r.t
	t.Helper()
	waitPending(t, a.r.host, 1)
	status, body := a.do(http.MethodGet, "/v1/elicitations", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /v1/elicitations: %d %s", status, body)
	}
	for _, s := range a.r.secrets() {
		if bytes.Contains(body, []byte(s)) {
			t.Fatalf("GET /v1/elicitations holds a secret: %s", body)
		}
	}
	var list elicitationList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("GET /v1/elicitations: %v: %s", err, body)
	}
	if len(list.Elicitations) != 1 {
		t.Fatalf("GET /v1/elicitations lists %d requests, want 1: %s", len(list.Elicitations), body)
	}
	el := list.Elicitations[0]
	if el.Server != serverName || el.Mode != "form" || !strings.Contains(el.Message, a.r.sshd.User()) {
		t.Errorf("elicitation %+v: want a form from %q naming %s", el, serverName, a.r.sshd.User())
	}
	if len(el.Fields) != 1 {
		t.Fatalf("elicitation fields %+v, want one", el.Fields)
	}
	f := el.Fields[0]
	if f.Name != "password" || f.Type != "string" || f.Format != "password" || !f.Required || !f.Sensitive || f.Default != nil {
		t.Errorf("field %+v: want a required, sensitive string named password, format password, without a default", f)
	}
	return el.ID, f.Title
}

// emptyInbox checks that the sidecar lists no pending elicitation.
func (a *sidecarAPI) emptyInbox() {
	t := a.r.t
	t.Helper()
	status, body := a.do(http.MethodGet, "/v1/elicitations", nil)
	var list elicitationList
	if err := json.Unmarshal(body, &list); status != http.StatusOK || err != nil || len(list.Elicitations) != 0 {
		t.Errorf("GET /v1/elicitations after the answer: %d %s (%v), want none pending", status, body, err)
	}
}

// A password alias's login question reaches the inbox page: the browser
// shows a masked field, the person types the password and accepts, and the
// waiting call logs in.
func TestInboxPageAnswersPasswordLogin(t *testing.T) {
	t.Parallel()
	path := browsertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	r := newRig(t, rigOptions{inbox: true})
	api := serveSidecar(r)
	bctx := browsertest.Start(t, ctx, path)
	r.addAlias("box", map[string]any{"auth": "password", "key_path": nil})

	done := r.callAsync("exec", map[string]any{"alias": "box", "command": "id -un"})
	_, title := api.pendingPassword()
	if !strings.Contains(title, r.sshd.User()) || strings.Contains(strings.ToLower(title), "sudo") {
		t.Errorf("field title %q: want the login password of %s", title, r.sshd.User())
	}

	field := chromedp.CSS(`form.elicitation input[name="password"]`)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(api.url+"/ui/#token="+sidecarToken),
		chromedp.WaitVisible(field),
	); err != nil {
		t.Fatalf("the password field never showed: %v", err)
	}
	if typ, err := chromedp.Run(bctx, chromedp.AttributeValue(field, "type")); err != nil || typ.Value != "password" {
		t.Fatalf("the password input's type is %q (%v), want password", typ.Value, err)
	}
	for sel, want := range map[string]string{
		`form.elicitation .server`:  serverName,
		`form.elicitation .message`: r.sshd.User(),
	} {
		if got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel))); err != nil || !strings.Contains(got, want) {
			t.Errorf("%s shows %q (%v), want %q", sel, got, err, want)
		}
	}
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(field, r.sshd.Password()),
		chromedp.Click(chromedp.CSS(`form.elicitation button.accept`)),
	); err != nil {
		t.Fatalf("typing the password and accepting: %v", err)
	}

	out := r.await("exec id -un", done)
	if got := strings.TrimSpace(stdout(t, out)); got != r.sshd.User() {
		t.Fatalf("id -un = %q, want %s", got, r.sshd.User())
	}
	if n := strings.Count(r.sshd.Log(), "Accepted password for "+r.sshd.User()); n != 1 {
		t.Errorf("%d password logins, want 1:\n%s", n, r.sshd.Log())
	}
	if err := chromedp.Do(bctx, chromedp.WaitNotPresent(chromedp.CSS(`form.elicitation`))); err != nil {
		t.Errorf("the answered request stays on the page: %v", err)
	}
	api.emptyInbox()
	// The password is cached in the server: the next call asks nothing.
	if got := strings.TrimSpace(stdout(t, r.exec("box", "id -un"))); got != r.sshd.User() {
		t.Fatalf("second id -un = %q, want %s", got, r.sshd.User())
	}
	if n := len(r.host.Elicitations()); n != 0 {
		t.Errorf("%d elicitations pending after a cached login", n)
	}
}

// A sudo prompt alias's question is answered through the sidecar's API,
// POST /v1/elicitations/{id}, with no browser; a wrong answer is refused by
// sudo and the next call asks again.
func TestInboxAPIAnswersSudoPrompt(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{inbox: true})
	r.sshd.SudoWithPassword(t)
	api := serveSidecar(r)
	r.addAlias("box", map[string]any{"sudo": "prompt"})

	answer := func(password string) <-chan callOutcome {
		t.Helper()
		done := r.callAsync("exec", sudoArgs("box", "id -u"))
		id, title := api.pendingPassword()
		if !strings.Contains(strings.ToLower(title), "sudo") {
			t.Errorf("field title %q does not say it is for sudo", title)
		}
		status, body := api.do(http.MethodPost, "/v1/elicitations/"+id,
			map[string]any{"action": "accept", "content": map[string]any{"password": password}})
		if status != http.StatusNoContent {
			t.Fatalf("POST /v1/elicitations/%s: %d %s", id, status, body)
		}
		return done
	}

	wrong := answer("not-" + r.sshd.Password())
	select {
	case o := <-wrong:
		if o.err != nil || !o.res.IsError || !strings.Contains(strings.ToLower(o.res.Text), "password") {
			t.Fatalf("sudo with a wrong password: %+v (%v), want a tool error about the password", o.res, o.err)
		}
	case <-time.After(callTimeout + 10*time.Second):
		t.Fatal("the call did not return after the wrong answer")
	}
	api.emptyInbox()

	out := r.await("sudo id -u", answer(r.sshd.Password()))
	if got := strings.TrimSpace(stdout(t, out)); got != "0" {
		t.Fatalf("sudo id -u = %q, want 0", got)
	}
	api.emptyInbox()
}

// mcpFrame is a JSON-RPC message as the gateway client reads it.
type mcpFrame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mcpClient is a minimal Streamable HTTP MCP client (2025-11-25) written
// with net/http alone: enough to initialize with the elicitation
// capability, call tools and answer the gateway's requests.
type mcpClient struct {
	r   *rig
	url string
	sid string
}

// serveGateway serves r's host through a gateway over Streamable HTTP
// until the test ends.
func serveGateway(r *rig) *mcpClient {
	r.t.Helper()
	g := gateway.New(r.host, gateway.Options{
		Logger: slog.New(slog.NewTextHandler(r.hostLog, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ts := httptest.NewServer(g.Handler())
	r.t.Cleanup(func() {
		// The gateway first: it ends the calls the server's Close waits for.
		if err := g.Close(); err != nil {
			r.t.Errorf("gateway Close: %v", err)
		}
		ts.Close()
	})
	return &mcpClient{r: r, url: ts.URL + "/mcp"}
}

// post sends one JSON-RPC message; the response body is closed when the
// test ends.
func (c *mcpClient) post(body string) *http.Response {
	t := c.r.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout+10*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", body, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func jsonrpcRequest(id int, method, params string) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":` + params + `}`
}

// initialize opens a session that declares form elicitation.
func (c *mcpClient) initialize() {
	t := c.r.t
	t.Helper()
	resp := c.post(jsonrpcRequest(1, "initialize",
		`{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"ssh-e2e","version":"1"}}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: status %d", resp.StatusCode)
	}
	c.sid = resp.Header.Get("Mcp-Session-Id")
	if c.sid == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	if f := c.response(resp, 1, nil); f.Error != nil {
		t.Fatalf("initialize: %+v", f.Error)
	}
	if resp := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d, want 202", resp.StatusCode)
	}
}

// response reads the response to id from resp, a JSON body or an SSE
// stream; every request on the stream before it goes to onRequest (a
// request with no handler fails the test).
func (c *mcpClient) response(resp *http.Response, id int, onRequest func(mcpFrame)) mcpFrame {
	t := c.r.t
	t.Helper()
	want := strconv.Itoa(id)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		var f mcpFrame
		if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
			t.Fatalf("response to %s (%s): %v", want, ct, err)
		}
		if string(f.ID) != want {
			t.Fatalf("got %+v, want the response to %s", f, want)
		}
		return f
	}
	frames := sseFrames(t, resp.Body)
	timeout := time.After(callTimeout + 10*time.Second)
	for {
		select {
		case f, ok := <-frames:
			switch {
			case !ok:
				t.Fatalf("the stream ended before the response to %s", want)
			case f.Method != "" && len(f.ID) > 0:
				if onRequest == nil {
					t.Fatalf("unexpected request from the gateway: %s %s", f.Method, f.Params)
				}
				onRequest(f)
			case f.Method == "" && string(f.ID) == want:
				return f
			}
		case <-timeout:
			t.Fatalf("no response to %s", want)
		}
	}
}

// sseFrames reads each SSE event's data as a frame into a channel, closed
// at the end of the stream. When the test ends the body is closed and the
// reader joined.
func sseFrames(t *testing.T, body io.ReadCloser) <-chan mcpFrame {
	ch := make(chan mcpFrame)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(stop); body.Close(); wg.Wait() })
	wg.Go(func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				var f mcpFrame
				if len(data) > 0 && json.Unmarshal([]byte(strings.Join(data, "\n")), &f) == nil {
					select {
					case ch <- f:
					case <-stop:
						return
					}
				}
				data = nil
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
	})
	return ch
}

// callTool calls a tool through the gateway and returns its result's text
// and isError; requests from the gateway during the call go to onRequest.
func (c *mcpClient) callTool(id int, name string, args any, onRequest func(mcpFrame)) (string, bool) {
	t := c.r.t
	t.Helper()
	params, err := json.Marshal(map[string]any{"name": name, "arguments": args})
	if err != nil {
		t.Fatal(err)
	}
	resp := c.post(jsonrpcRequest(id, "tools/call", string(params)))
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("tools/call %s: status %d: %s", name, resp.StatusCode, b)
	}
	f := c.response(resp, id, onRequest)
	if f.Error != nil {
		t.Fatalf("tools/call %s: %+v", name, f.Error)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(f.Result, &res); err != nil {
		t.Fatalf("tools/call %s: %v: %s", name, err, f.Result)
	}
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, c.Text)
	}
	text := strings.Join(parts, "\n")
	c.r.mu.Lock()
	c.r.results = append(c.r.results, name+": "+text, string(f.Result))
	c.r.mu.Unlock()
	return text, res.IsError
}

// respond posts the client's answer to a request of the gateway's.
func (c *mcpClient) respond(id json.RawMessage, result string) {
	t := c.r.t
	t.Helper()
	resp := c.post(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("response to the gateway's request %s: status %d, want 202", id, resp.StatusCode)
	}
}

// A gateway client that declared elicitation is asked the password of a
// password alias itself, on the call's stream, as a form with one masked
// field; its answer logs the call in. The host's inbox is never used.
func TestGatewayClientAnswersPasswordLogin(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{inbox: true})
	c := serveGateway(r)
	c.initialize()
	if text, isErr := c.callTool(2, "activate_tools", map[string]any{"groups": []string{serverName}}, nil); isErr {
		t.Fatalf("activate_tools: %s", text)
	}
	tool := func(name string) string { return mcpvisor.ToolName(serverName, name) }
	if text, isErr := c.callTool(3, tool("add_alias"), map[string]any{
		"alias": "box", "host": r.sshd.Host(), "port": r.sshd.Port(), "user": r.sshd.User(),
		"auth": "password", "sudo": "none",
	}, nil); isErr {
		t.Fatalf("add_alias: %s", text)
	}

	var asked int
	text, isErr := c.callTool(4, tool("exec"), map[string]any{"alias": "box", "command": "id -un"}, func(f mcpFrame) {
		asked++
		if f.Method != "elicitation/create" {
			t.Fatalf("the gateway sent %s %s, want elicitation/create", f.Method, f.Params)
		}
		if n := len(r.host.Elicitations()); n != 0 {
			t.Errorf("the inbox holds %d elicitations while the client is asked", n)
		}
		checkPasswordForm(t, f.Params, r.sshd.User())
		c.respond(f.ID, `{"action":"accept","content":{"password":`+strconv.Quote(r.sshd.Password())+`}}`)
	})
	if isErr {
		t.Fatalf("exec: tool error: %s", text)
	}
	if asked != 1 {
		t.Fatalf("the client was asked %d times, want once", asked)
	}
	if got := strings.TrimSpace(stdout(t, text)); got != r.sshd.User() {
		t.Fatalf("id -un = %q, want %s", got, r.sshd.User())
	}
	if n := strings.Count(r.sshd.Log(), "Accepted password for "+r.sshd.User()); n != 1 {
		t.Errorf("%d password logins, want 1:\n%s", n, r.sshd.Log())
	}
	// Cached in the server now: a second call asks nobody.
	if text, isErr := c.callTool(5, tool("exec"), map[string]any{"alias": "box", "command": "true"}, nil); isErr {
		t.Fatalf("second exec: %s", text)
	}
}

// checkPasswordForm checks elicitation/create's params: a form whose schema
// has exactly one property, a required string named password with format
// password (masked), and a message naming user.
func checkPasswordForm(t *testing.T, raw json.RawMessage, user string) {
	t.Helper()
	var p struct {
		Mode            string `json:"mode"`
		Message         string `json:"message"`
		RequestedSchema struct {
			Type       string `json:"type"`
			Properties map[string]struct {
				Type   string `json:"type"`
				Format string `json:"format"`
				Title  string `json:"title"`
			} `json:"properties"`
			Required []string `json:"required"`
		} `json:"requestedSchema"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("elicitation/create params %s: %v", raw, err)
	}
	s := p.RequestedSchema
	pw, ok := s.Properties["password"]
	if (p.Mode != "" && p.Mode != "form") || s.Type != "object" || len(s.Properties) != 1 || !ok ||
		pw.Type != "string" || pw.Format != "password" || len(s.Required) != 1 || s.Required[0] != "password" {
		t.Errorf("elicitation/create params %s: want a form with one required masked field, password", raw)
	}
	if !strings.Contains(p.Message, user) || !strings.Contains(pw.Title, user) {
		t.Errorf("elicitation/create params %s: want the message and the field's title to name %s", raw, user)
	}
}
