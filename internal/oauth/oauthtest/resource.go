package oauthtest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// prmPath is where the resource's Protected Resource Metadata is (RFC 9728
// §3.1, path-aware).
const prmPath = "/.well-known/oauth-protected-resource/mcp"

// Resource is a protected MCP-like endpoint at /mcp: 401 with a Bearer
// challenge unless a live token of its authorization server for it is
// presented, 403 insufficient_scope when a required scope is missing.
type Resource struct {
	*httptest.Server
	// Next, when set (before the first request), serves the requests to
	// /mcp that pass: an MCP server behind the resource's guard.
	Next http.Handler

	mu             sync.Mutex
	as             *AuthServer
	required       []string
	challengeScope []string
	prmScopes      []string
	auths          []string
}

// NewResource starts a resource protected by as, closed when t ends.
func NewResource(t testing.TB, as *AuthServer) *Resource {
	r := &Resource{as: as}
	r.Server = httptest.NewServer(r)
	t.Cleanup(r.Close)
	return r
}

// MCPURL is the protected endpoint: the resource tokens are for.
func (r *Resource) MCPURL() string { return r.URL + "/mcp" }

// MetadataURL is the resource's Protected Resource Metadata.
func (r *Resource) MetadataURL() string { return r.URL + prmPath }

// SetAuthServer makes as the resource's authorization server, in its
// metadata and for validating tokens: tokens of the previous one stop
// working (a migration).
func (r *Resource) SetAuthServer(as *AuthServer) {
	r.mu.Lock()
	r.as = as
	r.mu.Unlock()
}

// Require sets the scopes a token needs (403 insufficient_scope without).
func (r *Resource) Require(scopes ...string) {
	r.mu.Lock()
	r.required = scopes
	r.mu.Unlock()
}

// ChallengeScopes sets the scope parameter of the 401 challenge;
// MetadataScopes the metadata's scopes_supported.
func (r *Resource) ChallengeScopes(scopes ...string) {
	r.mu.Lock()
	r.challengeScope = scopes
	r.mu.Unlock()
}

func (r *Resource) MetadataScopes(scopes ...string) {
	r.mu.Lock()
	r.prmScopes = scopes
	r.mu.Unlock()
}

// Authorizations returns the Authorization headers /mcp received.
func (r *Resource) Authorizations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.auths)
}

func (r *Resource) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	as, required, chScope, prmScopes := r.as, r.required, r.challengeScope, r.prmScopes
	if req.URL.Path == "/mcp" {
		r.auths = append(r.auths, req.Header.Get("Authorization"))
	}
	r.mu.Unlock()
	switch req.URL.Path {
	case prmPath:
		m := map[string]any{"resource": r.MCPURL(), "authorization_servers": []string{as.Issuer()}}
		if len(prmScopes) > 0 {
			m["scopes_supported"] = prmScopes
		}
		writeJSON(w, http.StatusOK, m)
		return
	case "/mcp":
	default:
		http.NotFound(w, req)
		return
	}
	challenge := `Bearer resource_metadata="` + r.MetadataURL() + `"`
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	scopes, resource, live := as.Validate(token)
	if !ok || !live || resource != r.MCPURL() {
		if len(chScope) > 0 {
			challenge += `, scope="` + strings.Join(chScope, " ") + `"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	for _, sc := range required {
		if !slices.Contains(scopes, sc) {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+strings.Join(required, " ")+`", `+challenge[len("Bearer "):])
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
	}
	if r.Next != nil {
		r.Next.ServeHTTP(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
}
