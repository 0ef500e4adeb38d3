package mcpvisor_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// postCounter is another local service: it records every request.
type postCounter struct {
	mu    sync.Mutex
	paths []string
}

func (c *postCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.paths = append(c.paths, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	http.Error(w, "not an authorization server", http.StatusBadRequest)
}

func (c *postCounter) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...)
}

// pointingServer is an MCP server on loopback that is its own
// authorization server, whose metadata names registration and token
// endpoints elsewhere: at registration and token.
func pointingServer(t *testing.T, registration, token string) string {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource":
			json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{srv.URL}})
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]any{
				"issuer":                           srv.URL,
				"authorization_endpoint":           srv.URL + "/authorize",
				"token_endpoint":                   token,
				"registration_endpoint":            registration,
				"code_challenge_methods_supported": []string{"S256"},
			})
		case "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// The OAuth SSRF, rerun: a server allowed private addresses (it is on
// loopback) lends that to its own origin only. Its metadata's registration
// and token endpoints on another loopback service are refused before any
// request reaches it, with an error naming the endpoint and the opt-in;
// with oauth.allowPrivate the request goes; a link-local endpoint is
// refused even then.
func TestOAuthAllowPrivateCoversOnlyTheServersOrigin(t *testing.T) {
	victim := &postCounter{}
	other := httptest.NewServer(victim)
	defer other.Close()

	begin := func(t *testing.T, sc mcpvisor.ServerConfig) error {
		t.Helper()
		onEvent, events := eventSink()
		h := openHost(t, mcpvisor.Options{OnEvent: onEvent}, sc)
		waitState(t, events, sc.Name, mcpvisor.StateNeedsAuth)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := h.BeginSignIn(ctx, sc.Name)
		if err == nil {
			t.Fatal("BeginSignIn succeeded against endpoints that are not an authorization server")
		}
		return err
	}

	t.Run("refused without the opt-in", func(t *testing.T) {
		reg := other.URL + "/register"
		err := begin(t, httpServer("local", pointingServer(t, reg, other.URL+"/token")))
		msg := err.Error()
		for _, want := range []string{reg, "oauth.allowPrivate", "loopback"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not name %q", msg, want)
			}
		}
		if got := victim.requests(); len(got) != 0 {
			t.Fatalf("the other local service received %v", got)
		}
	})
	t.Run("sent with the opt-in", func(t *testing.T) {
		sc := httpServer("optin", pointingServer(t, other.URL+"/register", other.URL+"/token"))
		sc.OAuth = &mcpvisor.OAuthConfig{AllowPrivate: true}
		err := begin(t, sc)
		if !strings.Contains(err.Error(), "refused the registration") {
			t.Errorf("error %q, want the registration refused by the endpoint", err)
		}
		if got := victim.requests(); len(got) != 1 || got[0] != "POST /register" {
			t.Fatalf("the opted-in registration reached the endpoint as %v, want one POST /register", got)
		}
	})
	t.Run("link-local refused with the opt-in", func(t *testing.T) {
		// Refused at the dial, before any connection: nothing at
		// 169.254.169.254 is needed.
		sc := httpServer("metadata", pointingServer(t, "http://169.254.169.254/register", "http://169.254.169.254/token"))
		sc.OAuth = &mcpvisor.OAuthConfig{AllowPrivate: true}
		msg := begin(t, sc).Error()
		for _, want := range []string{"http://169.254.169.254/register", "cloud metadata", "even with oauth.allowPrivate"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not name %q", msg, want)
			}
		}
	})
}
