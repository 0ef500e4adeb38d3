package sidecar_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/sidecar"
)

// TestOriginAndHost: a /v1 request naming a Host the loopback listener
// does not answer to is refused (DNS rebinding), and so is one that
// changes state from a browser page of another origin; requests without
// Origin, from loopback origins and from the sidecar's own pass (issue
// 22, finding 5: /v1 checked neither).
func TestOriginAndHost(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	own := a.ts.URL // http://127.0.0.1:PORT, the inbox page's origin
	port := own[strings.LastIndex(own, ":")+1:]
	activate := map[string]any{"groups": []string{"t"}}
	for _, tc := range []struct {
		name, method, path string
		body               any
		origin, host       string
		want               int
	}{
		{"no Origin", "POST", "/v1/sessions/s/activate", activate, "", "", http.StatusOK},
		{"own origin", "POST", "/v1/sessions/s/activate", activate, own, "", http.StatusOK},
		{"loopback origin", "POST", "/v1/sessions/s/activate", activate, "http://localhost:3000", "", http.StatusOK},
		{"loopback IPv6 origin", "POST", "/v1/sessions/s/activate", activate, "http://[::1]:8080", "", http.StatusOK},
		{"another site", "POST", "/v1/sessions/s/activate", activate, "https://evil.example", "", http.StatusForbidden},
		{"opaque origin", "POST", "/v1/sessions/s/activate", activate, "null", "", http.StatusForbidden},
		{"another site, a loopback name in its path", "POST", "/v1/call", map[string]any{"tool": "mcp__t__echo"}, "https://evil.example/127.0.0.1", "", http.StatusForbidden},
		{"delete from another site", "DELETE", "/v1/servers/t", nil, "https://evil.example", "", http.StatusForbidden},
		{"a read from another site", "GET", "/v1/servers", nil, "https://evil.example", "", http.StatusOK},
		{"localhost Host", "GET", "/v1/servers", nil, "", "localhost:" + port, http.StatusOK},
		{"rebound Host", "GET", "/v1/servers", nil, "", "evil.example:" + port, http.StatusForbidden},
		{"rebound Host and its own Origin", "POST", "/v1/sessions/s/activate", activate, "http://evil.example:" + port, "evil.example:" + port, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := http.Header{}
			if tc.origin != "" {
				hdr.Set("Origin", tc.origin)
			}
			if tc.host != "" {
				hdr.Set("Host", tc.host)
			}
			r := a.doHost(tc.method, tc.path, tc.body, hdr)
			if r.status != tc.want {
				t.Fatalf("status %d, want %d: %s", r.status, tc.want, r.body)
			}
			if tc.want == http.StatusForbidden {
				if code := r.errorCode(t); code != sidecar.CodeForbidden {
					t.Errorf("code %q, want %q", code, sidecar.CodeForbidden)
				}
			}
		})
	}
	if _, _, ok := a.serverState("t"); !ok {
		t.Error("server t was deleted from another site")
	}
	// Without the token, the answer is 401 whatever the Host: nothing is
	// learnt without it.
	if r := a.doAuth("GET", "/v1/servers", nil, "", http.Header{"Host": {"evil.example"}}); r.status != http.StatusUnauthorized {
		t.Errorf("no token, rebound Host: %d", r.status)
	}
}

// With AllowedOrigins and AllowedHosts, those pass: the listed origins
// instead of loopback ones, the sidecar's own still.
func TestAllowedOriginsAndHosts(t *testing.T) {
	a := openAPI(t, sidecar.Options{AllowedOrigins: []string{"https://app.example"}, AllowedHosts: []string{"mcp.internal"}})
	for _, tc := range []struct {
		origin, host string
		want         int
	}{
		{"https://app.example", "", http.StatusOK},
		{"https://app.example.evil", "", http.StatusForbidden},
		{"http://localhost:3000", "", http.StatusForbidden},
		{a.ts.URL, "", http.StatusOK},
		{"", "mcp.internal", http.StatusOK},
		{"http://mcp.internal", "mcp.internal", http.StatusOK}, // its own origin, by that name
		{"", "evil.example", http.StatusForbidden},
	} {
		hdr := http.Header{}
		if tc.origin != "" {
			hdr.Set("Origin", tc.origin)
		}
		if tc.host != "" {
			hdr.Set("Host", tc.host)
		}
		if r := a.doHost("POST", "/v1/sessions/s/end", nil, hdr); r.status != tc.want && !(tc.want == http.StatusOK && r.status == http.StatusNoContent) {
			t.Errorf("Origin %q, Host %q: %d, want %d: %s", tc.origin, tc.host, r.status, tc.want, r.body)
		}
	}
}

// TestStrictBodies: a body with a key given twice, at any depth, or with
// data after its JSON value is refused with a 400 that says so (issue 22,
// finding 5: encoding/json let the last key win, so {"tool":"a",
// "tool":"b"} called b).
func TestStrictBodies(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	for _, tc := range []struct {
		name, method, path, body, mention string
	}{
		{"call: tool twice", "POST", "/v1/call", `{"tool":"mcp__t__nope","tool":"mcp__t__echo"}`, `key "tool" is given more than once`},
		{"call: an argument twice", "POST", "/v1/call", `{"tool":"mcp__t__echo","arguments":{"text":"a","text":"b"}}`, `key "text" is given more than once in the object at arguments`},
		{"call: trailing data", "POST", "/v1/call", `{"tool":"mcp__t__echo"} {"tool":"mcp__t__echo"}`, "trailing data"},
		{"activate: trailing garbage", "POST", "/v1/sessions/s/activate", `{"groups":["t"]}]`, "trailing data"},
		{"ack: ids twice", "POST", "/v1/events/ack", `{"ids":[1],"ids":[2]}`, `key "ids" is given more than once`},
		{"approval: decision twice", "POST", "/v1/approvals/x", `{"decision":"deny","decision":"allow"}`, `key "decision"`},
		{"elicitation: content key twice", "POST", "/v1/elicitations/x", `{"action":"accept","content":{"a":1,"a":2}}`, "in the object at content"},
		{"server: command twice", "PUT", "/v1/servers/x", `{"command":"a","command":"b"}`, `key "command" is given more than once`},
		{"server: env key twice", "PUT", "/v1/servers/x", `{"command":"a","env":{"K":"1","K":"2"}}`, `key "K"`},
		{"server: trailing data", "PUT", "/v1/servers/x", `{"command":"a"}{}`, "trailing data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(tc.method, tc.path, tc.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			if code := r.errorCode(t); code != sidecar.CodeInvalidRequest {
				t.Errorf("code %q, want %q", code, sidecar.CodeInvalidRequest)
			}
			var e sidecar.ErrorBody
			r.json(t, &e)
			if !strings.Contains(e.Error.Message, tc.mention) {
				t.Errorf("the message does not say %q: %s", tc.mention, e.Error.Message)
			}
		})
	}
	if _, _, ok := a.serverState("x"); ok {
		t.Error("a server was registered from a body with a duplicate key")
	}
}
