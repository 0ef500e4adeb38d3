package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// post sends one message to the echo server and returns the response and
// its body.
func post(t *testing.T, url, session, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestHTTPSession(t *testing.T) {
	h := &httpEcho{}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = h.connState
	srv.Start()
	defer srv.Close()
	url := srv.URL + mcpPath

	resp, body := post(t, url, "", initialize)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("initialize: %d, session %q, %s: %s", resp.StatusCode, sid, resp.Header.Get("Content-Type"), body)
	}
	if resp, body := post(t, url, sid, initialized); resp.StatusCode != http.StatusAccepted || body != "" {
		t.Errorf("notification: %d %q, want 202 and no body", resp.StatusCode, body)
	}
	if resp, body := post(t, url, sid, `{"jsonrpc":"2.0","id":9,"result":{}}`); resp.StatusCode != http.StatusAccepted || body != "" {
		t.Errorf("a response from the client: %d %q, want 202 and no body", resp.StatusCode, body)
	}
	if resp, body := post(t, url, sid, listTools); resp.StatusCode != 200 || !strings.Contains(body, `"name":"echo"`) || strings.Contains(body, "flood") {
		t.Errorf("tools/list: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, url, sid, call("3", `{"n":1}`))
	var r reply
	if err := json.Unmarshal([]byte(body), &r); err != nil || resp.StatusCode != 200 || string(r.ID) != "3" {
		t.Fatalf("tools/call: %d %s (%v)", resp.StatusCode, body, err)
	}
	if got := callText(t, r); got != `{"n":1}` {
		t.Errorf("echo text %s", got)
	}
	if resp.ContentLength != int64(len(body)) {
		t.Errorf("Content-Length %d, body %d bytes", resp.ContentLength, len(body))
	}

	for _, s := range []string{"", "e99", "x1"} {
		if resp, _ := post(t, url, s, listTools); resp.StatusCode != http.StatusNotFound {
			t.Errorf("session %q: %d, want 404", s, resp.StatusCode)
		}
	}
	if resp, body := post(t, url, sid, "not json"); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "-32700") {
		t.Errorf("not JSON: %d %s, want 400 with a parse error", resp.StatusCode, body)
	}

	for method, want := range map[string]int{http.MethodGet: 405, http.MethodDelete: 200, http.MethodPut: 405} {
		req, _ := http.NewRequest(method, url, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", method, resp.StatusCode, want)
		}
	}

	resp, err := http.Get(srv.URL + statsPath)
	if err != nil {
		t.Fatal(err)
	}
	var st stats
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || st.Sessions != 1 || st.Posts != 9 || st.Gets != 1 || st.Deletes != 1 || st.Conns < 1 || st.Open < 1 {
		t.Errorf("stats %+v (%v)", st, err)
	}
}

// postWith sends one message with the given headers (besides Content-Type
// and Accept) and returns the response and its body.
func postWith(t *testing.T, url string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// modernHeaders are the headers of a modern request of method (and tool,
// for tools/call).
func modernHeaders(method, tool string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if tool != "" {
		h["Mcp-Name"] = tool
	}
	return h
}

// Over HTTP in the modern era there is no session: each POST carries the
// _meta and the headers of 2026-07-28, which must match its body; errors
// get the revision's HTTP statuses; flood is neither listed nor answered.
func TestHTTPModern(t *testing.T) {
	h := &httpEcho{modern: true}
	srv := httptest.NewServer(h)
	defer srv.Close()
	url := srv.URL + mcpPath

	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`
	if resp, body := postWith(t, url, modernHeaders("server/discover", ""), discover); resp.StatusCode != 200 ||
		resp.Header.Get("Mcp-Session-Id") != "" || !strings.Contains(body, `"supportedVersions":["2026-07-28"]`) {
		t.Fatalf("server/discover: %d, session %q: %s", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`
	if resp, body := postWith(t, url, modernHeaders("tools/list", ""), list); resp.StatusCode != 200 ||
		!strings.Contains(body, `"resultType":"complete"`) || !strings.Contains(body, `"name":"echo"`) || strings.Contains(body, "flood") {
		t.Errorf("tools/list: %d %s, want echo alone", resp.StatusCode, body)
	}
	resp, body := postWith(t, url, modernHeaders("tools/call", "echo"), modernCall("3", `{"n":1}`))
	var r reply
	if err := json.Unmarshal([]byte(body), &r); err != nil || resp.StatusCode != 200 || string(r.ID) != "3" || !strings.Contains(body, `"resultType":"complete"`) {
		t.Fatalf("tools/call: %d %s (%v)", resp.StatusCode, body, err)
	}
	if got := callText(t, r); got != `{"n":1}` {
		t.Errorf("echo text %s", got)
	}

	withHeader := func(method, tool, k, v string) map[string]string {
		h := modernHeaders(method, tool)
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	flood := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"flood","arguments":{"n":3},` + modernMeta + `}}`
	ping := `{"jsonrpc":"2.0","id":4,"method":"ping","params":{` + modernMeta + `}}`
	for _, tt := range []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
		code   string
	}{
		{"no MCP-Protocol-Version", withHeader("tools/call", "echo", "MCP-Protocol-Version", ""), modernCall("4", `{}`), 400, "-32020"},
		{"another MCP-Protocol-Version", withHeader("tools/call", "echo", "MCP-Protocol-Version", "2025-11-25"), modernCall("4", `{}`), 400, "-32020"},
		{"no Mcp-Method", withHeader("tools/call", "echo", "Mcp-Method", ""), modernCall("4", `{}`), 400, "-32020"},
		{"another Mcp-Method", withHeader("tools/call", "echo", "Mcp-Method", "tools/list"), modernCall("4", `{}`), 400, "-32020"},
		{"no Mcp-Name", modernHeaders("tools/call", ""), modernCall("4", `{}`), 400, "-32020"},
		{"another Mcp-Name", modernHeaders("tools/call", "flood"), modernCall("4", `{}`), 400, "-32020"},
		{"no _meta", modernHeaders("tools/call", "echo"), call("4", `{}`), 400, "-32602"},
		{"initialize", modernHeaders("initialize", ""), initialize, 400, "-32022"},
		{"ping", modernHeaders("ping", ""), ping, 404, "-32601"},
		{"flood", modernHeaders("tools/call", "flood"), flood, 400, "-32602"},
	} {
		resp, body := postWith(t, url, tt.hdr, tt.body)
		if resp.StatusCode != tt.status || !strings.Contains(body, `"code":`+tt.code) {
			t.Errorf("%s: %d %s, want %d with %s", tt.name, resp.StatusCode, body, tt.status, tt.code)
		}
	}
	if resp, body := postWith(t, url, nil, initialized); resp.StatusCode != http.StatusAccepted || body != "" {
		t.Errorf("notification: %d %q, want 202 and no body", resp.StatusCode, body)
	}
	if n := h.sessions.Load(); n != 0 {
		t.Errorf("%d sessions issued, want none", n)
	}
}
