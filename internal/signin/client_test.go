package signin

import (
	"net/url"
	"testing"
)

// originKey decides which requests a server's allowPrivate covers: its
// own origin in any spelling, and nothing that differs in scheme, host or
// port.
func TestOriginKey(t *testing.T) {
	same := [][2]string{
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"},
		{"HTTP://LocalHost/mcp", "http://localhost:80/token"},
		{"https://mcp.example/mcp", "https://mcp.example:443/register"},
		{"http://[::1]:9000/mcp", "http://[0:0:0:0:0:0:0:1]:9000/x"},
	}
	differ := [][2]string{
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8081/register"},
		{"http://127.0.0.1:8080/mcp", "http://localhost:8080/register"},
		{"http://mcp.example/mcp", "https://mcp.example/register"},
		{"http://127.0.0.1/mcp", "http://127.0.0.2/register"},
	}
	key := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return originKey(u)
	}
	for _, p := range same {
		if a, b := key(p[0]), key(p[1]); a != b {
			t.Errorf("%s and %s: %q != %q, want one origin", p[0], p[1], a, b)
		}
	}
	for _, p := range differ {
		if a, b := key(p[0]), key(p[1]); a == b {
			t.Errorf("%s and %s: both %q, want two origins", p[0], p[1], a)
		}
	}
}
