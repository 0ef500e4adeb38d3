package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
)

// FuzzPOST throws arbitrary bodies at a live session of a gateway over a
// host without servers: the handler must not panic, and must answer with a
// status the transport defines.
func FuzzPOST(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"cursor":"c"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"activate_tools","arguments":{"groups":["config"]}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"activate_tools","arguments":{"groups":7}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp__x__y","_meta":{"progressToken":{}}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}`,
		`{"jsonrpc":"2.0","id":6,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":""}}`,
	} {
		f.Add(seed)
	}
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: f.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Close() })
	g := gateway.New(h, gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	f.Cleanup(func() { g.Close() })
	handler := g.Handler()

	init := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(request(1, "initialize", initParams)))
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, init)
	session := rec.Header().Get("Mcp-Session-Id")
	if session == "" {
		f.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}

	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest:
		default:
			t.Fatalf("status %d for %q", rec.Code, body)
		}
	})
}
