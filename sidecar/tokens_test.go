package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// The gateway token reads, calls and keeps sessions; every route that
// changes servers, sign-ins or a person's decisions refuses it with 403
// "admin_required", and takes the admin token.
func TestGatewayTokenCannotChangeState(t *testing.T) {
	a := openAPIHost(t, mcpvisor.Options{ApprovalInbox: true}, sidecar.Options{}, mcptest("t"))
	gw, admin := "Bearer "+testGatewayToken, "Bearer "+testToken
	put := map[string]any{"type": "stdio", "command": mcptestBin, "args": []string{"-name", "evil"}}

	adminRoutes := []struct{ method, path string }{
		{"PUT", "/v1/servers/evil"},
		{"DELETE", "/v1/servers/t"},
		{"POST", "/v1/servers/t/enable"},
		{"POST", "/v1/servers/t/disable"},
		{"POST", "/v1/servers/t/restart"},
		{"GET", "/v1/servers/t/log"},
		{"POST", "/v1/servers/t/auth"},
		{"DELETE", "/v1/servers/t/auth"},
		{"POST", "/v1/approvals/some-id"},
		{"POST", "/v1/elicitations/some-id"},
		{"POST", "/v1/tools/reviews/decide"},
		{"POST", "/v1/events/ack"},
	}
	for _, rt := range adminRoutes {
		t.Run("gateway "+rt.method+" "+rt.path, func(t *testing.T) {
			r := a.doAuth(rt.method, rt.path, put, gw, nil)
			if r.status != http.StatusForbidden || r.errorCode(t) != sidecar.CodeAdminRequired {
				t.Errorf("%d %s, want 403 %s", r.status, r.body, sidecar.CodeAdminRequired)
			}
		})
	}
	if st, ok := serverStatus(a.h, "t"); !ok || !st.Enabled || st.State != mcpvisor.StateReady {
		t.Errorf("t after the gateway token's attempts: %+v", st)
	}
	if _, ok := serverStatus(a.h, "evil"); ok {
		t.Fatal("the gateway token registered a server")
	}

	for _, rt := range []struct{ method, path string }{
		{"GET", "/v1/servers"}, {"GET", "/v1/tools"}, {"GET", "/v1/catalog?session=s"}, {"GET", "/v1/events"},
		{"GET", "/v1/history"}, {"GET", "/v1/approvals"}, {"GET", "/v1/elicitations"}, {"GET", "/v1/auth"},
		{"GET", "/v1/tasks"}, {"GET", "/v1/tools/reviews"},
	} {
		for _, tok := range []string{gw, admin} {
			if r := a.doAuth(rt.method, rt.path, nil, tok, nil); r.status != http.StatusOK {
				t.Errorf("%s %s with %s: %d %s, want 200", rt.method, rt.path, tok[7:], r.status, r.body)
			}
		}
	}
	for _, tok := range []string{gw, admin} {
		r := a.doAuth("POST", "/v1/call", map[string]any{"tool": "mcp__t__echo", "arguments": map[string]any{"a": 1}}, tok, nil)
		var res callResult
		r.json(t, &res)
		if r.status != http.StatusOK || res.IsError {
			t.Errorf("POST /v1/call with %s: %d %s", tok[7:], r.status, r.body)
		}
		if r := a.doAuth("POST", "/v1/sessions/s/activate", map[string]any{"groups": []string{"t"}}, tok, nil); r.status != http.StatusOK {
			t.Errorf("activate with %s: %d %s", tok[7:], r.status, r.body)
		}
	}

	// The admin token passes every one of those routes' token check.
	for _, rt := range adminRoutes {
		r := a.doAuth(rt.method, rt.path, put, admin, nil)
		if r.status == http.StatusUnauthorized || r.status == http.StatusForbidden {
			t.Errorf("admin %s %s: %d %s", rt.method, rt.path, r.status, r.body)
		}
	}
	if st, ok := serverStatus(a.h, "evil"); !ok {
		t.Errorf("the admin token's PUT registered nothing: %+v", st)
	}
}

// mcpClient speaks Streamable HTTP to a sidecar's /mcp with one token.
type mcpClient struct {
	t       *testing.T
	url     string
	token   string
	mu      sync.Mutex
	session string
}

// post sends one JSON-RPC message and returns the answer's body.
func (c *mcpClient) post(ctx context.Context, body string) (int, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.mu.Lock()
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	c.mu.Unlock()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.mu.Lock()
		c.session = id
		c.mu.Unlock()
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// start initializes a session and activates the config group.
func (c *mcpClient) start(ctx context.Context) {
	c.t.Helper()
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"activate_tools","arguments":{"groups":["config"]}}}`,
	} {
		if status, out := c.post(ctx, m); status >= 300 || strings.Contains(out, `"isError":true`) {
			c.t.Fatalf("%s: %d %s", m, status, out)
		}
	}
}

// register calls register_mcp for name in the background; the channel
// gets the answer's body once the approval is decided.
func (c *mcpClient) register(ctx context.Context, wg *sync.WaitGroup, name string) <-chan string {
	args, _ := registerArgs(name)
	params, _ := json.Marshal(map[string]any{"name": "register_mcp", "arguments": args})
	done := make(chan string, 1)
	wg.Go(func() {
		_, out := c.post(ctx, fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":%s}`, params))
		done <- out
	})
	return done
}

// gatewayAPI is a sidecar serving the gateway at /mcp with sopts' tokens,
// in front of a host whose host tools wait in the approval inbox.
func gatewayAPI(t *testing.T, sopts sidecar.Options) *api {
	t.Helper()
	data := t.TempDir()
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{Config: &mcpvisor.Config{}, DataDir: data,
		Logger: slog.New(slog.DiscardHandler), Inbox: true, ApprovalInbox: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	g := gateway.New(h, gateway.Options{Logger: slog.New(slog.DiscardHandler), AllowConfigGroup: true})
	t.Cleanup(func() { g.Close() })
	sopts.MCP, sopts.DataDir, sopts.Logger = g.Handler(), data, slog.New(slog.DiscardHandler)
	ts := httptest.NewServer(sidecar.New(h, sopts).Handler())
	t.Cleanup(ts.Close)
	return &api{t: t, h: h, ts: ts, data: data}
}

// The attack of issue 38: a /mcp client registers a stdio command through
// PUT /v1/servers, or asks register_mcp and approves it itself through
// /v1/approvals. With the gateway token both are refused; the admin token
// used at /mcp cannot approve what it asked for either; a person with
// the admin token can.
func TestMCPClientCannotApproveItself(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := gatewayAPI(t, sidecar.Options{Token: testGatewayToken, AdminToken: testToken})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	evil := map[string]any{"type": "stdio", "command": mcptestBin, "args": []string{"-name", "evil"}}
	if r := a.doAuth("PUT", "/v1/servers/evil", evil, "Bearer "+testGatewayToken, nil); r.status != http.StatusForbidden || r.errorCode(t) != sidecar.CodeAdminRequired {
		t.Fatalf("PUT /v1/servers with the gateway token: %d %s", r.status, r.body)
	}

	for _, tc := range []struct {
		name, token, code string
	}{
		{"gateway token", testGatewayToken, sidecar.CodeAdminRequired},
		{"admin token", testToken, sidecar.CodeSelfApproval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &mcpClient{t: t, url: a.ts.URL, token: tc.token}
			c.start(ctx)
			name := strings.ReplaceAll(tc.name, " ", "-")
			done := c.register(ctx, &wg, name)
			p := waitApprovals(t, ctx, a.h, 1)[0]
			if p.RaisedBy == "" || strings.Contains(p.RaisedBy, tc.token) {
				t.Errorf("RaisedBy %q: want the token named, not given", p.RaisedBy)
			}
			r := a.doAuth("POST", "/v1/approvals/"+p.ID, map[string]any{"decision": "allow"}, "Bearer "+tc.token, nil)
			if r.status != http.StatusForbidden || r.errorCode(t) != tc.code {
				t.Fatalf("self-approval: %d %s, want 403 %s", r.status, r.body, tc.code)
			}
			if l := a.h.Approvals(); len(l) != 1 || l[0].ID != p.ID {
				t.Fatalf("pending after the refusal: %+v", l)
			}
			if _, ok := serverStatus(a.h, name); ok {
				t.Fatalf("%s was registered", name)
			}
			if tc.token == testToken {
				// The admin token raised it: only the embedder decides.
				if err := a.h.ResolveApproval(p.ID, false, "not yours"); err != nil {
					t.Fatal(err)
				}
			} else {
				r := a.doAuth("POST", "/v1/approvals/"+p.ID, map[string]any{"decision": "deny", "reason": "not yours"}, "Bearer "+testToken, nil)
				if r.status != http.StatusNoContent {
					t.Fatalf("the admin token's denial: %d %s", r.status, r.body)
				}
			}
			select {
			case out := <-done:
				if !strings.Contains(out, "not yours") {
					t.Errorf("register_mcp answered %s, want the denial", out)
				}
			case <-ctx.Done():
				t.Fatal("register_mcp never answered")
			}
		})
	}
}

// A sidecar with one token (Options.AdminToken ""), as before there were
// two, still takes it everywhere, but an approval raised with it over
// /mcp cannot be decided with it.
func TestSingleTokenKeepsRaisedByRule(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := gatewayAPI(t, sidecar.Options{Token: testToken})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	c := &mcpClient{t: t, url: a.ts.URL, token: testToken}
	c.start(ctx)
	done := c.register(ctx, &wg, "single")
	p := waitApprovals(t, ctx, a.h, 1)[0]
	r := a.doAuth("POST", "/v1/approvals/"+p.ID, map[string]any{"decision": "allow"}, "Bearer "+testToken, nil)
	if r.status != http.StatusForbidden || r.errorCode(t) != sidecar.CodeSelfApproval {
		t.Fatalf("self-approval with the one token: %d %s", r.status, r.body)
	}
	if err := a.h.ResolveApproval(p.ID, false, "no"); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, ok := serverStatus(a.h, "single"); ok {
		t.Fatal("single was registered")
	}
	put := map[string]any{"type": "stdio", "command": mcptestBin, "args": []string{"-name", "put"}}
	if r := a.doAuth("PUT", "/v1/servers/put", put, "Bearer "+testToken, nil); r.status >= 300 {
		t.Errorf("PUT /v1/servers with the one token: %d %s", r.status, r.body)
	}
}
