package outbound_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"

	"github.com/mcpvisor/mcpvisor/internal/outbound"
)

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "hello from a local MCP server")
	}))
	defer srv.Close()

	// A server not allowed private addresses cannot reach 127.0.0.1...
	public := outbound.NewClient(outbound.Options{})
	_, err := public.Get(srv.URL)
	var urlErr *url.Error
	if errors.As(err, &urlErr) && errors.Is(err, outbound.ErrPrivateAddress) {
		fmt.Println(urlErr.Err)
	}

	// ...one that is can.
	local := outbound.NewClient(outbound.Options{AllowPrivate: true})
	defer local.CloseIdleConnections()
	resp, err := local.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(string(body))
	// Output:
	// refusing to connect to a non-public address: 127.0.0.1 (loopback)
	// hello from a local MCP server
}

func ExampleCheckAddr() {
	for _, s := range []string{"8.8.8.8", "169.254.169.254", "::ffff:127.0.0.1", "100.64.0.1", "64:ff9b::a00:1"} {
		fmt.Println(outbound.CheckAddr(netip.MustParseAddr(s)))
	}
	// Output:
	// <nil>
	// refusing to connect to a non-public address: 169.254.169.254 (link-local)
	// refusing to connect to a non-public address: ::ffff:127.0.0.1 (loopback)
	// refusing to connect to a non-public address: 100.64.0.1 (shared address space (CGNAT))
	// refusing to connect to a non-public address: 64:ff9b::a00:1 (embeds 10.0.0.1, private)
}

func ExampleRedact() {
	apiKey := "sk-live-4f9a2c"
	fmt.Println(outbound.Redact(`POST https://mcp.example/mcp?key=sk-live-4f9a2c: 401, "Authorization: Bearer sk-live-4f9a2c"`, apiKey))
	// Output:
	// POST https://mcp.example/mcp?key=[redacted]: 401, "Authorization: Bearer [redacted]"
}
