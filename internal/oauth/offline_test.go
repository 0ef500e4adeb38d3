package oauth_test

import (
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
)

// offline_access is asked with prompt=consent (OpenID Connect Core §11:
// without it an OpenID Provider drops the scope and issues no refresh
// token); a request without offline_access leaves prompt alone.
func TestOfflineAccessAsksConsent(t *testing.T) {
	tests := []struct {
		name       string
		as         oauthtest.ServerOptions
		wantPrompt string
	}{
		{"provider offers offline_access", oauthtest.ServerOptions{}, "consent"},
		{"provider without offline_access", oauthtest.ServerOptions{Scopes: []string{"read", "write"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.as)
			h.authorizer(oauth.Config{Scopes: []string{"read"}}, oauth.Options{})
			h.signIn()
			authz := h.as.Requests("authorize")
			if len(authz) != 1 {
				t.Fatalf("%d authorization requests, want 1", len(authz))
			}
			q := authz[0].Form
			offline := strings.Contains(" "+q.Get("scope")+" ", " offline_access ")
			if offline != (tt.wantPrompt == "consent") {
				t.Errorf("scope %q: offline_access asked %v", q.Get("scope"), offline)
			}
			if got := q.Get("prompt"); got != tt.wantPrompt {
				t.Errorf("prompt = %q, want %q (scope %q)", got, tt.wantPrompt, q.Get("scope"))
			}
		})
	}
}
