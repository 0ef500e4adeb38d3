package oauth

import (
	"errors"
	"strings"
	"testing"
)

// A metadata resource of another origin than the configured URL is said
// as such, with the URL to configure; another path keeps the plain words.
func TestResourceMismatchMessage(t *testing.T) {
	tests := []struct {
		resource, serverURL string
		want                []string
	}{
		{"http://localhost:8080/mcp", "http://127.0.0.1:8080/mcp",
			[]string{"it names http://localhost:8080, the config http://127.0.0.1:8080", "set the server's url to http://localhost:8080/mcp"}},
		{"https://mcp.example:8443/mcp", "https://mcp.example/mcp",
			[]string{"it names https://mcp.example:8443, the config https://mcp.example", "set the server's url to https://mcp.example:8443/mcp"}},
		{"https://mcp.example/other", "https://mcp.example/mcp",
			[]string{`the protected resource metadata is for "https://mcp.example/other", not for`}},
	}
	for _, tt := range tests {
		err := resourceMismatch(tt.resource, tt.serverURL)
		if !errors.Is(err, errResourceMismatch) {
			t.Errorf("resourceMismatch(%s, %s) = %v, not errResourceMismatch", tt.resource, tt.serverURL, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("resourceMismatch(%s, %s) = %q, want it to say %q", tt.resource, tt.serverURL, err, w)
			}
		}
	}
}
