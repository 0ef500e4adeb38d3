package actors

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/oauth"
)

// specErrLines splits a joined error into its one-line parts.
func specErrLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// specLookup is a variable lookup over a fixed map, for tests that must
// not depend on the environment they run in.
func specLookup(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestSpecStdio(t *testing.T) {
	environ := []string{"PATH=/usr/bin", "HOME=/home/u", "AWS_SECRET_ACCESS_KEY=secret", "LANG=C.UTF-8", "GITHUB_TOKEN=ghp"}
	vars := map[string]string{"PATH": "/usr/bin", "HOME": "/home/u", "NOTES_TOKEN": "tok", "EMPTY": ""}
	sc := config.Server{
		Name:    "notes",
		Command: "${HOME}/bin/notes-mcp",
		Args:    []string{"--token=${NOTES_TOKEN}", "${EMPTY:-fallback}", "$$ ${MISSING:-}"},
		Env: map[string]string{
			"PATH":        "/opt/notes/bin:${PATH}",
			"NOTES_TOKEN": "${NOTES_TOKEN}",
			"NOTES_MODE":  "${NOTES_MODE:-read-only}",
		},
		Cwd:            "${HOME}/notes",
		Enabled:        true,
		Description:    "Notes",
		FriendlyName:   "My notes",
		Timeout:        config.Duration(30 * time.Second),
		StartupTimeout: config.Duration(5 * time.Second),
		IncludeTools:   []string{"read", "search"},
		ExcludeTools:   []string{"delete"},
		MaxTools:       4,
		MaxDescription: -1,
	}
	want := ServerSpec{
		Name:      "notes",
		Transport: TransportStdio,
		Command:   "/home/u/bin/notes-mcp",
		Args:      []string{"--token=tok", "fallback", "$$ "},
		// Allow-listed parent variables, overridden in place, new keys added;
		// AWS_SECRET_ACCESS_KEY and GITHUB_TOKEN stay behind.
		Env:            []string{"HOME=/home/u", "LANG=C.UTF-8", "NOTES_MODE=read-only", "NOTES_TOKEN=tok", "PATH=/opt/notes/bin:/usr/bin"},
		Dir:            "/home/u/notes",
		Enabled:        true,
		Description:    "Notes",
		FriendlyName:   "My notes",
		CallTimeout:    30 * time.Second,
		StartupTimeout: 5 * time.Second,
		IncludeTools:   []string{"read", "search"},
		ExcludeTools:   []string{"delete"},
		MaxTools:       4,
		MaxDescription: -1,
	}
	got, err := SpecOf(sc, specLookup(vars), environ)
	if err != nil {
		t.Fatalf("Spec: %v", err)
	}
	slices.Sort(got.Env) // the order is supervision.MergeEnv's business
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Spec (-want +got):\n%s", diff)
	}

	got.Args[0], got.IncludeTools[0] = "changed", "changed"
	if sc.Args[0] == "changed" || sc.IncludeTools[0] == "changed" {
		t.Error("the spec shares slices with the config")
	}

	t.Run("inheritEnv", func(t *testing.T) {
		sc := config.Server{Name: "a", Command: "x", InheritEnv: true, Env: map[string]string{"PATH": "/opt/bin", "EXTRA": "1"}}
		// The key to the host's secret store is never inherited.
		got, err := SpecOf(sc, nil, append(slices.Clone(environ), "MCPVISOR_SECRET_KEY=k", "MCPVISOR_SECRET_KEY_FILE=/k"))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got.Env)
		want := []string{"AWS_SECRET_ACCESS_KEY=secret", "EXTRA=1", "GITHUB_TOKEN=ghp", "HOME=/home/u", "LANG=C.UTF-8", "PATH=/opt/bin"}
		if diff := cmp.Diff(want, got.Env); diff != "" {
			t.Errorf("Env (-want +got):\n%s", diff)
		}
		if environ[0] != "PATH=/usr/bin" {
			t.Errorf("Spec modified environ: %q", environ)
		}
	})
	t.Run("no overrides", func(t *testing.T) {
		got, err := SpecOf(config.Server{Name: "a", Command: "x"}, nil, environ)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got.Env)
		if diff := cmp.Diff([]string{"HOME=/home/u", "LANG=C.UTF-8", "PATH=/usr/bin"}, got.Env); diff != "" {
			t.Errorf("Env (-want +got):\n%s", diff)
		}
	})
}

func TestSpecRemote(t *testing.T) {
	sc := config.Server{
		Name:         "tickets",
		Type:         "streamable-http",
		URL:          "${TICKETS_URL:-http://127.0.0.1:9100}/mcp",
		Headers:      map[string]string{"Authorization": "Bearer ${TICKETS_TOKEN}", "X-Client": "mcpvisor"},
		AllowPrivate: true,
		Enabled:      true,
	}
	got, err := SpecOf(sc, specLookup(map[string]string{"TICKETS_TOKEN": "t0k"}), []string{"PATH=/usr/bin"})
	if err != nil {
		t.Fatalf("Spec: %v", err)
	}
	want := ServerSpec{
		Name:         "tickets",
		Transport:    TransportHTTP,
		URL:          "http://127.0.0.1:9100/mcp",
		Headers:      map[string]string{"Authorization": "Bearer t0k", "X-Client": "mcpvisor"},
		AllowPrivate: true,
		Enabled:      true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Spec (-want +got):\n%s", diff)
	}

	sse := config.Server{Name: "events", URL: "https://x.example/sse"}
	if got, err := SpecOf(sse, nil, nil); err != nil || got.Transport != TransportSSE {
		t.Errorf("spec(%+v) = %v, %v; want an sse spec", sse, got.Transport, err)
	}
}

func TestSpecOAuth(t *testing.T) {
	vars := map[string]string{"CLIENT_SECRET": "s3cret", "KEY": "-----BEGIN PRIVATE KEY-----", "AS": "https://as.example", "TOKEN_FILE": "/run/t"}
	tests := []struct {
		name          string
		sc            config.Server
		want          *oauth.Config
		headersHelper []string
	}{
		{"claude code", config.Server{Name: "a", Type: "http", URL: "https://x.example/mcp",
			OAuth: &config.OAuth{ClientID: "abc", CallbackPort: 8080, Scopes: "read  write"}, HeadersHelper: "get-headers --file ${TOKEN_FILE} $HOME"},
			&oauth.Config{ClientID: "abc", RedirectURI: "http://localhost:8080/callback", Scopes: []string{"read", "write"}},
			[]string{"/bin/sh", "-c", "get-headers --file /run/t $HOME"}},
		{"every field", config.Server{Name: "a", URL: "https://x.example/sse", OAuth: &config.OAuth{
			ClientID: "c", ClientSecret: "${CLIENT_SECRET}", AuthServerMetadataURL: "${AS}/.well-known/oauth-authorization-server",
			ClientMetadataURL: "https://c.example/c.json", GrantType: "client_credentials", TokenEndpointAuthMethod: "private_key_jwt",
			PrivateKey: "${KEY}", SigningAlg: "EdDSA", KeyID: "k1", DPoP: new(true), ClientName: "mcpvisor ${USER:-test}",
			IDPTokenEndpoint: "https://idp.example/token", IDPClientID: "ic", IDPClientSecret: "${CLIENT_SECRET}", IDToken: "idt", Assertion: "jwt", AllowPrivate: true}},
			&oauth.Config{GrantType: oauth.GrantClientCredentials, ClientID: "c", ClientSecret: "s3cret", TokenEndpointAuthMethod: oauth.AuthPrivateJWT,
				PrivateKey: "-----BEGIN PRIVATE KEY-----", SigningAlg: "EdDSA", KeyID: "k1",
				AuthServerMetadataURL: "https://as.example/.well-known/oauth-authorization-server", ClientMetadataURL: "https://c.example/c.json",
				ClientName: "mcpvisor test", DPoP: oauth.DPoPOn, IDPTokenEndpoint: "https://idp.example/token", IDPClientID: "ic", IDPClientSecret: "s3cret",
				IDToken: "idt", Assertion: "jwt", AllowPrivate: true},
			nil},
		{"jwt_bearer alias", config.Server{Name: "a", URL: "https://x.example/mcp", OAuth: &config.OAuth{GrantType: "jwt_bearer", Assertion: "jwt"}},
			&oauth.Config{GrantType: oauth.GrantJWTBearer, Assertion: "jwt"}, nil},
		{"dpop false", config.Server{Name: "a", URL: "https://x.example/mcp", OAuth: &config.OAuth{DPoP: new(false)}},
			&oauth.Config{DPoP: oauth.DPoPOff}, nil},
		{"empty oauth object", config.Server{Name: "a", URL: "https://x.example/mcp", OAuth: &config.OAuth{}}, &oauth.Config{DPoP: oauth.DPoPAuto}, nil},
		{"no oauth object", config.Server{Name: "a", URL: "https://x.example/mcp"}, nil, nil},
		{"stdio", config.Server{Name: "a", Command: "x", OAuth: &config.OAuth{ClientID: "c"}, HeadersHelper: "h"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SpecOf(tt.sc, specLookup(vars), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.OAuth); diff != "" {
				t.Errorf("spec OAuth (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.headersHelper, got.HeadersHelper); diff != "" {
				t.Errorf("spec HeadersHelper (-want +got):\n%s", diff)
			}
			if got.Auth != nil {
				t.Error("spec set Auth; the host sets it")
			}
		})
	}
}

func TestSpecErrors(t *testing.T) {
	tests := []struct {
		name string
		sc   config.Server
		vars map[string]string
		want []string
	}{
		{"unset variables", config.Server{Name: "a", Command: "${BIN}", Args: []string{"${A}-${A}-${B}"}, Env: map[string]string{"K": "${K}"}}, nil,
			[]string{
				`config: server "a": field "command": variable BIN is not set and has no default`,
				`config: server "a": field "args[0]": variable A is not set and has no default`,
				`config: server "a": field "args[0]": variable B is not set and has no default`,
				`config: server "a": field "env.K": variable K is not set and has no default`,
			}},
		{"disabled servers too", config.Server{Name: "a", Command: "x", Cwd: "${DIR}"}, nil,
			[]string{`config: server "a": field "cwd": variable DIR is not set and has no default`}},
		{"unset header", config.Server{Name: "a", URL: "https://x.example/mcp", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}, nil,
			[]string{`config: server "a": field "headers.Authorization": variable TOKEN is not set and has no default`}},
		{"url from a variable", config.Server{Name: "a", Type: "http", URL: "${MCP_URL}"}, map[string]string{"MCP_URL": "ftp://x.example"},
			[]string{`config: server "a": field "url": want an http or https url, got scheme "ftp"`}},
		{"unset url", config.Server{Name: "a", Type: "http", URL: "${MCP_URL}"}, nil,
			[]string{`config: server "a": field "url": variable MCP_URL is not set and has no default`}},
		{"header injection through a variable", config.Server{Name: "a", URL: "https://x.example/mcp", Headers: map[string]string{"X-A": "${V}"}},
			map[string]string{"V": "1\r\nX-Admin: yes"},
			[]string{`config: server "a": field "headers.X-A": contains a line break after expansion`}},
		{"NUL through a variable", config.Server{Name: "a", Command: "x", Args: []string{"${V}"}}, map[string]string{"V": "a\x00b"},
			[]string{`config: server "a": field "args[0]": contains a NUL byte after expansion`}},
		{"unset oauth variables", config.Server{Name: "a", URL: "https://x.example/mcp", HeadersHelper: "h ${H}",
			OAuth: &config.OAuth{ClientID: "c", ClientSecret: "${SECRET}", AuthServerMetadataURL: "${AS_URL}"}}, nil,
			[]string{
				`config: server "a": field "oauth.clientSecret": variable SECRET is not set and has no default`,
				`config: server "a": field "oauth.authServerMetadataUrl": variable AS_URL is not set and has no default`,
				`config: server "a": field "headersHelper": variable H is not set and has no default`,
			}},
		{"oauth url from a variable", config.Server{Name: "a", URL: "https://x.example/mcp", OAuth: &config.OAuth{AuthServerMetadataURL: "${AS_URL}"}},
			map[string]string{"AS_URL": "http://as.example/m"},
			[]string{`config: server "a": field "oauth.authServerMetadataUrl": want an https url (http only on a loopback host such as localhost)`}},
		{"invalid config", config.Server{Name: "a", Type: "http"}, nil,
			[]string{`config: server "a": field "url": required for an http server`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SpecOf(tt.sc, specLookup(tt.vars), nil)
			if diff := cmp.Diff(tt.want, specErrLines(err)); diff != "" {
				t.Errorf("Spec error lines (-want +got):\n%s", diff)
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Errorf("errors.Is(%v, config.ErrInvalid) = false", err)
			}
		})
	}
}
