package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
)

// A host's gateway over Streamable HTTP: initialize, then list the tools.
// With no group activated, only activate_tools is there.
func ExampleGateway_Handler() {
	dir, _ := os.MkdirTemp("", "gateway-example-")
	defer os.RemoveAll(dir)
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	g := gateway.New(h, gateway.Options{})
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	defer g.Close()

	post := func(session, body string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, body := post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)

	var list struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	_ = json.Unmarshal(body, &list)
	for _, t := range list.Result.Tools {
		fmt.Println(t.Name)
	}
	// Output:
	// activate_tools
}
