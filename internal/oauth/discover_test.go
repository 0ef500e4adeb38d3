package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// docServer serves JSON documents by path (404 elsewhere) and records the
// paths asked for, in order. Documents may name the server's URL as {URL}.
type docServer struct {
	*httptest.Server
	docs map[string]string

	mu    sync.Mutex
	paths []string
}

func newDocServer(t *testing.T, docs map[string]string) *docServer {
	s := &docServer{docs: docs}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		doc, ok := s.docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(strings.ReplaceAll(doc, "{URL}", s.URL)))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *docServer) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

const (
	prmPath  = "/.well-known/oauth-protected-resource"
	asPath   = "/.well-known/oauth-authorization-server"
	oidcPath = "/.well-known/openid-configuration"
)

func asDoc(issuer string) string {
	b, _ := json.Marshal(map[string]any{
		"issuer":                           issuer,
		"authorization_endpoint":           issuer + "/authorize",
		"token_endpoint":                   issuer + "/token",
		"code_challenge_methods_supported": []string{"S256"},
	})
	return string(b)
}

func prmDoc(resource string, servers ...string) string {
	b, _ := json.Marshal(map[string]any{"resource": resource, "authorization_servers": servers})
	return string(b)
}

func TestDiscoverOrder(t *testing.T) {
	tests := []struct {
		name       string
		serverPath string // the MCP endpoint's path
		docs       map[string]string
		wantIssuer string
		wantPaths  []string
	}{
		{
			name:       "resource metadata at the path-aware URI first",
			serverPath: "/mcp",
			docs: map[string]string{
				prmPath + "/mcp": prmDoc("{URL}/mcp", "{URL}"),
				asPath:           asDoc("{URL}"),
			},
			wantIssuer: "{URL}",
			wantPaths:  []string{prmPath + "/mcp", asPath},
		},
		{
			name:       "resource metadata at the root when the path-aware URI has none",
			serverPath: "/mcp",
			docs: map[string]string{
				prmPath: prmDoc("{URL}", "{URL}"),
				asPath:  asDoc("{URL}"),
			},
			wantIssuer: "{URL}",
			wantPaths:  []string{prmPath + "/mcp", prmPath, asPath},
		},
		{
			name:       "issuer with a path: RFC 8414 path insertion",
			serverPath: "/mcp",
			docs: map[string]string{
				prmPath + "/mcp":     prmDoc("{URL}/mcp", "{URL}/tenant"),
				asPath + "/tenant":   asDoc("{URL}/tenant"),
				oidcPath + "/tenant": asDoc("{URL}/tenant"),
				"/tenant" + oidcPath: asDoc("{URL}/tenant"),
			},
			wantIssuer: "{URL}/tenant",
			wantPaths:  []string{prmPath + "/mcp", asPath + "/tenant"},
		},
		{
			name:       "issuer with a path: OpenID Connect path insertion next",
			serverPath: "/mcp",
			docs: map[string]string{
				prmPath + "/mcp":     prmDoc("{URL}/mcp", "{URL}/tenant"),
				oidcPath + "/tenant": asDoc("{URL}/tenant"),
				"/tenant" + oidcPath: asDoc("{URL}/tenant"),
			},
			wantIssuer: "{URL}/tenant",
			wantPaths:  []string{prmPath + "/mcp", asPath + "/tenant", oidcPath + "/tenant"},
		},
		{
			name:       "issuer with a path: OpenID Connect path appending last",
			serverPath: "/mcp",
			docs: map[string]string{
				prmPath + "/mcp":     prmDoc("{URL}/mcp", "{URL}/tenant"),
				"/tenant" + oidcPath: asDoc("{URL}/tenant"),
			},
			wantIssuer: "{URL}/tenant",
			wantPaths:  []string{prmPath + "/mcp", asPath + "/tenant", oidcPath + "/tenant", "/tenant" + oidcPath},
		},
		{
			name:       "issuer without a path: OpenID Connect after RFC 8414",
			serverPath: "/mcp",
			docs: map[string]string{
				prmPath + "/mcp": prmDoc("{URL}/mcp", "{URL}"),
				oidcPath:         asDoc("{URL}"),
			},
			wantIssuer: "{URL}",
			wantPaths:  []string{prmPath + "/mcp", asPath, oidcPath},
		},
		{
			name:       "the second authorization server when the first has no metadata",
			serverPath: "/mcp",
			docs: map[string]string{
				prmPath + "/mcp": prmDoc("{URL}/mcp", "{URL}/gone", "{URL}/b"),
				asPath + "/b":    asDoc("{URL}/b"),
			},
			wantIssuer: "{URL}/b",
			wantPaths:  []string{prmPath + "/mcp", asPath + "/gone", oidcPath + "/gone", "/gone" + oidcPath, asPath + "/b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newDocServer(t, tt.docs)
			d, err := discover(context.Background(), s.Client(), s.URL+tt.serverPath, Challenge{}, "")
			if err != nil {
				t.Fatalf("discover: %v", err)
			}
			if want := strings.ReplaceAll(tt.wantIssuer, "{URL}", s.URL); d.Server.Issuer != want {
				t.Errorf("issuer = %q, want %q", d.Server.Issuer, want)
			}
			if diff := cmp.Diff(tt.wantPaths, s.requested()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiscoverChallengeHint(t *testing.T) {
	s := newDocServer(t, map[string]string{
		"/elsewhere/prm": prmDoc("{URL}/mcp", "{URL}"),
		asPath:           asDoc("{URL}"),
	})
	ch := Challenge{Scheme: "bearer", Params: map[string]string{"resource_metadata": s.URL + "/elsewhere/prm"}}
	d, err := discover(context.Background(), s.Client(), s.URL+"/mcp", ch, "")
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	if d.Resource != s.URL+"/mcp" {
		t.Errorf("resource = %q, want %q", d.Resource, s.URL+"/mcp")
	}
	if diff := cmp.Diff([]string{"/elsewhere/prm", asPath}, s.requested()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestDiscoverRefuses(t *testing.T) {
	tests := []struct {
		name string
		docs map[string]string
		want error
	}{
		{"metadata naming another issuer", map[string]string{
			prmPath + "/mcp": prmDoc("{URL}/mcp", "{URL}"),
			asPath:           asDoc("https://other.example"),
		}, ErrIssuerMismatch},
		{"issuer differing only by a trailing slash", map[string]string{
			prmPath + "/mcp": prmDoc("{URL}/mcp", "{URL}"),
			asPath:           asDoc("{URL}/"),
		}, ErrIssuerMismatch},
		{"resource metadata for another resource", map[string]string{
			prmPath + "/mcp": prmDoc("https://other.example/mcp", "{URL}"),
			asPath:           asDoc("{URL}"),
		}, ErrDiscovery},
		{"resource metadata for a sibling path", map[string]string{
			prmPath + "/mcp": prmDoc("{URL}/other", "{URL}"),
			asPath:           asDoc("{URL}"),
		}, ErrDiscovery},
		{"resource metadata naming no authorization server", map[string]string{
			prmPath + "/mcp": prmDoc("{URL}/mcp"),
		}, ErrDiscovery},
		{"no metadata for the authorization server", map[string]string{
			prmPath + "/mcp": prmDoc("{URL}/mcp", "{URL}/as"),
		}, ErrDiscovery},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newDocServer(t, tt.docs)
			d, err := discover(context.Background(), s.Client(), s.URL+"/mcp", Challenge{}, "")
			if !errors.Is(err, tt.want) {
				t.Fatalf("discover = %+v, %v; want an error matching %v", d, err, tt.want)
			}
		})
	}
}

// A 2025-03-26 server has no resource metadata: its origin is the issuer,
// with metadata at the origin's RFC 8414 URI, else default endpoints.
func TestDiscoverLegacy(t *testing.T) {
	t.Run("default endpoints", func(t *testing.T) {
		s := newDocServer(t, nil)
		d, err := discover(context.Background(), s.Client(), s.URL+"/v1/mcp", Challenge{}, "")
		if err != nil {
			t.Fatalf("discover: %v", err)
		}
		want := &ServerMetadata{
			Issuer:                        s.URL,
			AuthorizationEndpoint:         s.URL + "/authorize",
			TokenEndpoint:                 s.URL + "/token",
			RegistrationEndpoint:          s.URL + "/register",
			CodeChallengeMethodsSupported: []string{"S256"},
		}
		if diff := cmp.Diff(want, d.Server); diff != "" {
			t.Errorf("server metadata (-want +got):\n%s", diff)
		}
		if d.PRM != nil || d.Resource != s.URL+"/v1/mcp" {
			t.Errorf("PRM, Resource = %+v, %q; want nil, %q", d.PRM, d.Resource, s.URL+"/v1/mcp")
		}
		if diff := cmp.Diff([]string{prmPath + "/v1/mcp", prmPath, asPath}, s.requested()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})
	t.Run("metadata at the origin", func(t *testing.T) {
		s := newDocServer(t, map[string]string{asPath: asDoc("{URL}")})
		d, err := discover(context.Background(), s.Client(), s.URL+"/v1/mcp", Challenge{}, "")
		if err != nil {
			t.Fatalf("discover: %v", err)
		}
		if d.Server.AuthorizationEndpoint != s.URL+"/authorize" || d.Server.Issuer != s.URL {
			t.Errorf("server metadata = %+v", d.Server)
		}
	})
}

// The metadata at a 2025-03-26 server's origin must name that origin as
// its issuer (RFC 8414 §3.3); go-sdk refuses the same documents.
func TestDiscoverLegacyIssuer(t *testing.T) {
	tests := []struct {
		name   string
		issuer string // {URL} is the server's origin
		want   error  // nil: accepted
	}{
		{"the origin", "{URL}", nil},
		{"the origin with a trailing slash", "{URL}/", nil},
		// conformance 0.1.16's auth/2025-03-26-oauth-metadata-backcompat
		// serves this at the root well-known URI.
		{"a path under the origin", "{URL}/oauth", ErrIssuerMismatch},
		{"the server's URL", "{URL}/v1/mcp", ErrIssuerMismatch},
		{"another origin", "https://other.example", ErrIssuerMismatch},
		{"none", "", ErrDiscovery},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newDocServer(t, map[string]string{asPath: asDoc(tt.issuer)})
			issuer := strings.ReplaceAll(tt.issuer, "{URL}", s.URL)
			d, err := discover(context.Background(), s.Client(), s.URL+"/v1/mcp", Challenge{}, "")
			if tt.want == nil {
				if err != nil {
					t.Fatalf("discover: %v", err)
				}
				if d.Server.Issuer != issuer || d.Server.TokenEndpoint != issuer+"/token" {
					t.Errorf("server metadata = %+v; want issuer %q and its endpoints", d.Server, issuer)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("discover = %+v, %v; want an error matching %v", d, err, tt.want)
			}
			if tt.want == ErrIssuerMismatch {
				for _, v := range []string{fmt.Sprintf("%q", issuer), fmt.Sprintf("%q", s.URL)} {
					if !strings.Contains(err.Error(), v) {
						t.Errorf("error %q does not name %s", err, v)
					}
				}
			}
			if diff := cmp.Diff([]string{prmPath + "/v1/mcp", prmPath, asPath}, s.requested()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
