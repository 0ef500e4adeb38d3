package config

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// lookupOf is a variable lookup over a fixed map, for tests that must not
// depend on the environment they run in.
func lookupOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two", "EMPTY": "", "URL": "https://x.example", "input:answered": "42"}
	tests := []struct {
		in      string
		want    string
		unset   []string
		wantErr string
	}{
		{in: "plain", want: "plain"},
		{in: "", want: ""},
		{in: "${A}", want: "1"},
		{in: "${env:B}", want: "two"},
		{in: "${MISSING}", want: "", unset: []string{"MISSING"}},
		{in: "${MISSING:-def}", want: "def"},
		{in: "${EMPTY:-def}", want: "def"},
		{in: "${EMPTY}", want: ""},
		{in: "${MISSING:-}", want: ""},
		{in: "${A:-def}", want: "1"},
		{in: "${env:MISSING:-def}", want: "def"},
		{in: "pre-${A}-mid-${B}-post", want: "pre-1-mid-two-post"},
		{in: "${URL}/mcp?k=${A}", want: "https://x.example/mcp?k=1"},
		{in: "${A}${B}${A}", want: "1two1"},
		{in: "${MISSING}-${ALSO}-${MISSING}", want: "--", unset: []string{"MISSING", "ALSO"}},
		{in: "${MISSING:-a b:c}", want: "a b:c"},
		{in: "${MISSING:-${A}}", want: "1"},
		{in: "${MISSING:-x${B}y}", want: "xtwoy"},
		{in: "${MISSING:-${ALSO}}", want: "", unset: []string{"ALSO"}},
		{in: "${A:-${ALSO}}", want: "1"},
		{in: "$$", want: "$$"},
		{in: "$${A}", want: "$1"},
		{in: "$A and $ and $5", want: "$A and $ and $5"},
		{in: "trailing $", want: "trailing $"},
		{in: "{A} and }", want: "{A} and }"},
		{in: "${A", wantErr: `unterminated variable reference "${A"`},
		{in: "${", wantErr: `unterminated variable reference "${"`},
		{in: "x ${A:-default", wantErr: `unterminated variable reference "${A"`},
		{in: "${A:-${B}", wantErr: `unterminated variable reference "${A"`},
		{in: "${A:-${B", wantErr: `unterminated variable reference "${B"`},
		{in: "${}", wantErr: `invalid variable reference "${}" (want ${NAME} or ${NAME:-default})`},
		{in: "${1A}", wantErr: `invalid variable reference "${1A}" (want ${NAME} or ${NAME:-default})`},
		{in: "${A-b}", wantErr: `invalid variable reference "${A-b}" (want ${NAME} or ${NAME:-default})`},
		{in: "${A:=b}", wantErr: `invalid variable reference "${A:=b}" (want ${NAME} or ${NAME:-default})`},
		{in: "${A.B", wantErr: `unterminated variable reference "${A"`},
		{in: "${" + strings.Repeat("x", 30) + " " + strings.Repeat("y", 40) + "}", wantErr: `invalid variable reference "${` + strings.Repeat("x", 30) + " " + strings.Repeat("y", 28) + `..." (want ${NAME} or ${NAME:-default})`},
		{in: "${input:key}", want: "", unset: []string{"input:key"}},
		{in: "${input:api-key.v2}-${input:api-key.v2}", want: "-", unset: []string{"input:api-key.v2"}},
		{in: "${input:answered}", want: "42"},
		{in: "${MISSING:-${input:key}}", want: "", unset: []string{"input:key"}},
		{in: "${input:}", wantErr: `invalid input reference "${input:}" (want ${input:ID})`},
		{in: "${input:a b}", wantErr: `invalid input reference "${input:a b}" (want ${input:ID})`},
		{in: "${input:key", wantErr: `unterminated input reference "${input:key"`},
		{in: "${command:extension.pick}", wantErr: `"${command:extension.pick}" is a VS Code command variable, which mcpvisor cannot run`},
		{in: "${config:editor.tabSize}", wantErr: `"${config:editor.tabSize}" is a VS Code setting, which mcpvisor cannot read`},
		{in: "${file:/run/token}", wantErr: `"${file:/run/token}" is Windsurf's file interpolation, which mcpvisor does not support: put the value in an environment variable and write ${NAME}`},
		{in: "${{ env.TOKEN }}", wantErr: `"${{ env.TOKEN }" is Continue's template syntax, of which mcpvisor reads ${{ secrets.NAME }} and ${{ inputs.NAME }}, in Continue's YAML only`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, unset, err := expandRefs(tt.in, lookupOf(vars), "")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("expandRefs(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("expandRefs(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("expandRefs(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if diff := cmp.Diff(tt.unset, unset); diff != "" {
				t.Errorf("expandRefs(%q) unset (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestSyntaxPosition(t *testing.T) {
	data := []byte("ab\ncde\n\nf")
	tests := []struct {
		offset    int64
		line, col int
	}{
		{1, 1, 1}, {2, 1, 2}, {3, 1, 3}, {4, 2, 1}, {6, 2, 3}, {8, 3, 1}, {9, 4, 1}, {10, 4, 2}, {0, 1, 1}, {99, 4, 2},
	}
	for _, tt := range tests {
		if line, col := syntaxPosition(data, tt.offset); line != tt.line || col != tt.col {
			t.Errorf("syntaxPosition(%d) = %d:%d, want %d:%d", tt.offset, line, col, tt.line, tt.col)
		}
	}
}

func TestStrip(t *testing.T) {
	tests := []struct{ in, want string }{
		{in: `{"a": 1}`, want: `{"a": 1}`},
		{in: "\xef\xbb\xbf{}", want: "   {}"},
		{in: "{\"a\": 1, // c\n}", want: "{\"a\": 1      \n}"},
		{in: `{"a": [1, 2,], }`, want: `{"a": [1, 2 ]  }`},
		{in: `{"a": "x // y, /* z */",}`, want: `{"a": "x // y, /* z */" }`},
		{in: "{\"a\": \"q\\\"//\" /* b\nc */}", want: "{\"a\": \"q\\\"//\"     \n    }"},
		{in: `[,]`, want: `[,]`},                         // not a trailing comma: the parser reports it
		{in: `{"a": 1 /* open`, want: `{"a": 1 /* open`}, // unterminated: left for the parser
		{in: "// only a comment", want: "                 "},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := string(strip([]byte(tt.in))); got != tt.want {
				t.Errorf("strip(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzStrip checks that strip keeps every position: the output has the
// input's length and its newlines where the input has them, and it does
// not modify its argument.
func FuzzStrip(f *testing.F) {
	for _, s := range []string{"{\"a\": [1,],} // c\n", "/* x\ny */{}", "\"\\\"//\"", "\xef\xbb\xbf{,}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		out := strip(data)
		if !bytes.Equal(in, data) {
			t.Fatal("strip modified its argument")
		}
		if len(out) != len(in) {
			t.Fatalf("len = %d, want %d", len(out), len(in))
		}
		for i := range in {
			if (in[i] == '\n') != (out[i] == '\n') {
				t.Fatalf("byte %d: %q became %q", i, in[i], out[i])
			}
		}
	})
}

func TestParseReserved(t *testing.T) {
	data := []byte(`{"mcpServers": {"config": {"command": "x"}}}`)
	_, err := parseFile("", data, Options{})
	want := `config: server "config": the name "config" is reserved for the host's own tool group`
	if err == nil || err.Error() != want || !errors.Is(err, ErrInvalid) {
		t.Errorf("Parse of a server named %q: %v, want %q wrapping ErrInvalid", ReservedName, err, want)
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		in      string
		want    Server
		wantErr string
	}{
		{in: `{"command": "x", "api_key": "k", "disabled": true, "timeout": 1500}`,
			want: Server{Type: "stdio", Command: "x", APIKey: "k", Timeout: Duration(1500 * time.Millisecond)}},
		{in: `{"httpUrl": "https://h/mcp"}`, want: Server{Type: "http", URL: "https://h/mcp", Enabled: true}},
		{in: `{"type": "streamable-http", "url": "https://h/mcp"}`, want: Server{Type: "http", URL: "https://h/mcp", Enabled: true}},
		{in: `{"url": "https://h/sse?x=1"}`, want: Server{Type: "sse", URL: "https://h/sse?x=1", Enabled: true}},
		{in: `{"type": "ws", "command": "x"}`, want: Server{Type: "ws", Command: "x", Enabled: true}},
		{in: `{"url": "https://h/mcp", "oauth": {"scopes": ["a", "b"], "callbackPort": 9}, "headersHelper": "h"}`,
			want: Server{Type: "http", URL: "https://h/mcp", Enabled: true, OAuth: &OAuth{Scopes: "a b", CallbackPort: 9}, HeadersHelper: "h"}},
		{in: `{"oauth": {"dpop": 1}}`, wantErr: `config: field "oauth.dpop": want true or false, got a number`},
		{in: `{"args": "x"}`, wantErr: `config: field "args": want an array of strings, got a string`},
		{in: `{"enabled": true, "disabled": true}`, wantErr: `config: field "disabled": true contradicts "enabled": true`},
		{in: `[]`, wantErr: `config: entry is an array, want an object`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := decodeEntry([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrInvalid) {
					t.Fatalf("Decode error = %v, want %q wrapping ErrInvalid", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseOAuth(t *testing.T) {
	// Claude Code's .mcp.json, as written, and Gemini CLI's array of scopes.
	data := []byte(`{"mcpServers": {
		"sentry": {"type": "sse", "url": "https://mcp.sentry.dev/sse",
			"oauth": {"clientId": "abc", "callbackPort": 8080, "scopes": "read write"}},
		"api": {"type": "http", "url": "https://x.example/mcp", "headersHelper": "/opt/bin/headers.sh --for $USER"},
		"gemini": {"httpUrl": "https://x.example/mcp", "oauth": {"clientId": "g", "scopes": ["a", "b:c"], "clientSecret": "${G_SECRET}", "dpop": false}},
		"machine": {"type": "http", "url": "https://x.example/mcp", "oauth": {
			"grantType": "jwt_bearer", "idpTokenEndpoint": "http://127.0.0.1:8081/token", "idToken": "${ID_TOKEN}",
			"tokenEndpointAuthMethod": "private_key_jwt", "privateKey": "${KEY}", "signingAlg": "ES256", "keyId": "k1", "dpop": true,
			"clientMetadataUrl": "https://client.example/mcp.json", "authServerMetadataUrl": "https://as.example/.well-known/oauth-authorization-server",
			"allowPrivate": true}}}}`)
	f, err := parseFile("", data, Options{Lookup: lookupOf(map[string]string{"G_SECRET": "s", "ID_TOKEN": "t", "KEY": "k"})})
	if err != nil {
		t.Fatal(err)
	}
	want := []Server{
		{Name: "sentry", Type: "sse", URL: "https://mcp.sentry.dev/sse", Enabled: true,
			OAuth: &OAuth{ClientID: "abc", CallbackPort: 8080, Scopes: "read write"}},
		{Name: "api", Type: "http", URL: "https://x.example/mcp", Enabled: true, HeadersHelper: "/opt/bin/headers.sh --for $USER"},
		{Name: "gemini", Type: "http", URL: "https://x.example/mcp", Enabled: true,
			OAuth: &OAuth{ClientID: "g", Scopes: "a b:c", ClientSecret: "${G_SECRET}", DPoP: new(false)}},
		{Name: "machine", Type: "http", URL: "https://x.example/mcp", Enabled: true, OAuth: &OAuth{
			GrantType: "jwt_bearer", IDPTokenEndpoint: "http://127.0.0.1:8081/token", IDToken: "${ID_TOKEN}",
			TokenEndpointAuthMethod: "private_key_jwt", PrivateKey: "${KEY}", SigningAlg: "ES256", KeyID: "k1", DPoP: new(true),
			ClientMetadataURL: "https://client.example/mcp.json", AuthServerMetadataURL: "https://as.example/.well-known/oauth-authorization-server",
			AllowPrivate: true}},
	}
	if diff := cmp.Diff(want, f.Servers); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if len(f.Warnings) > 0 {
		t.Errorf("warnings: %q", f.Warnings)
	}
}

func TestParseOAuthErrors(t *testing.T) {
	tests := []struct {
		name  string
		oauth string
		vars  map[string]string
		want  []string
	}{
		{"not an object", `"abc"`, nil, []string{`field "oauth": want an object, got a string`}},
		{"callbackPort string", `{"callbackPort": "8080"}`, nil, []string{`field "oauth.callbackPort": want an integer, got a string`}},
		{"callbackPort zero", `{"callbackPort": 0}`, nil, []string{`field "oauth.callbackPort": want a port number from 1 to 65535, got 0`}},
		{"callbackPort too large", `{"callbackPort": 65536}`, nil, []string{`field "oauth.callbackPort": want a port number from 1 to 65535, got 65536`}},
		{"clientId number", `{"clientId": 123}`, nil, []string{`field "oauth.clientId": want a string, got a number`}},
		{"dpop string", `{"dpop": "yes"}`, nil, []string{`field "oauth.dpop": want true or false, got a string`}},
		{"scopes object", `{"scopes": {}}`, nil, []string{`field "oauth.scopes": want a space-separated string or an array of strings, got an object`}},
		{"scopes element number", `{"scopes": ["a", 1]}`, nil, []string{`field "oauth.scopes[1]": want a string, got a number`}},
		{"scopes element with a space", `{"scopes": ["a b"]}`, nil, []string{`field "oauth.scopes[0]": want one scope, without spaces, got "a b"`}},
		{"member twice", `{"clientId": "a", "clientId": "b"}`, nil, []string{`field "oauth.clientId": given more than once`}},
		{"grantType unknown", `{"grantType": "password"}`, nil,
			[]string{`field "oauth.grantType": want authorization_code, client_credentials or urn:ietf:params:oauth:grant-type:jwt-bearer (or jwt_bearer), got "password"`}},
		{"grantType from a variable", `{"grantType": "${GRANT}"}`, map[string]string{"GRANT": "implicit"},
			[]string{`field "oauth.grantType": want authorization_code, client_credentials or urn:ietf:params:oauth:grant-type:jwt-bearer (or jwt_bearer), got "implicit"`}},
		{"client_credentials without clientId", `{"grantType": "client_credentials", "clientSecret": "s"}`, nil,
			[]string{`field "oauth.clientId": required for the client_credentials grant`}},
		{"client_credentials, clientId of the wrong type", `{"grantType": "client_credentials", "clientId": 1}`, nil,
			[]string{`field "oauth.clientId": want a string, got a number`}},
		{"jwt-bearer without an assertion", `{"grantType": "urn:ietf:params:oauth:grant-type:jwt-bearer", "idpTokenEndpoint": "https://idp.example/token"}`, nil,
			[]string{`field "oauth.grantType": the jwt-bearer grant needs "assertion", or "idpTokenEndpoint" and "idToken"`}},
		{"jwt_bearer without an assertion", `{"grantType": "jwt_bearer", "idToken": "t"}`, nil,
			[]string{`field "oauth.grantType": the jwt-bearer grant needs "assertion", or "idpTokenEndpoint" and "idToken"`}},
		{"private_key_jwt without a key", `{"tokenEndpointAuthMethod": "private_key_jwt", "clientId": "c"}`, nil,
			[]string{`field "oauth.privateKey": required when "tokenEndpointAuthMethod" is private_key_jwt`}},
		{"auth method unknown", `{"tokenEndpointAuthMethod": "tls_client_auth"}`, nil,
			[]string{`field "oauth.tokenEndpointAuthMethod": want client_secret_basic, client_secret_post, none or private_key_jwt, got "tls_client_auth"`}},
		{"signingAlg unknown", `{"signingAlg": "HS256"}`, nil,
			[]string{`field "oauth.signingAlg": want one of ES256, ES384, ES512, RS256, RS384, RS512, PS256, PS384, PS512 or EdDSA, got "HS256"`}},
		{"authServerMetadataUrl http", `{"authServerMetadataUrl": "http://as.example/.well-known/oauth-authorization-server"}`, nil,
			[]string{`field "oauth.authServerMetadataUrl": want an https url (http only on a loopback host such as localhost)`}},
		{"authServerMetadataUrl relative", `{"authServerMetadataUrl": "/metadata"}`, nil,
			[]string{`field "oauth.authServerMetadataUrl": want an absolute https url, like "https://host/path"`}},
		{"authServerMetadataUrl from a variable", `{"authServerMetadataUrl": "${AS}"}`, map[string]string{"AS": "ftp://as.example/m"},
			[]string{`field "oauth.authServerMetadataUrl": want an https url, got scheme "ftp"`}},
		{"idpTokenEndpoint without host", `{"idpTokenEndpoint": "https:///token"}`, nil,
			[]string{`field "oauth.idpTokenEndpoint": url has no host`}},
		{"clientMetadataUrl without a path", `{"clientMetadataUrl": "https://client.example/"}`, nil,
			[]string{`field "oauth.clientMetadataUrl": want a url with a path, the client's metadata document, like "https://host/client.json"`}},
		{"clientMetadataUrl http", `{"clientMetadataUrl": "http://localhost/client.json"}`, nil,
			[]string{`field "oauth.clientMetadataUrl": want an https url, got scheme "http"`}},
		{"clientMetadataUrl with a fragment", `{"clientMetadataUrl": "https://client.example/c.json#x"}`, nil,
			[]string{`field "oauth.clientMetadataUrl": must not have a fragment`}},
		// An unset variable is a warning: the host fails this server alone.
		{"unset variable", `{"clientSecret": "${SECRET}"}`, nil, nil},
		{"bad reference", `{"privateKey": "${KEY"}`, nil,
			[]string{`field "oauth.privateKey": unterminated variable reference "${KEY"`}},
		{"NUL byte", `{"assertion": "\u0000"}`, nil, []string{`field "oauth.assertion": contains a NUL byte`}},
		{"every problem at once", `{"callbackPort": -1, "grantType": "client_credentials", "clientMetadataUrl": "https://c.example"}`, nil,
			[]string{
				`field "oauth.callbackPort": want a port number from 1 to 65535, got -1`,
				`field "oauth.clientId": required for the client_credentials grant`,
				`field "oauth.clientMetadataUrl": want a url with a path, the client's metadata document, like "https://host/client.json"`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := `{"mcpServers": {"remote": {"url": "https://x.example/mcp", "oauth": ` + tt.oauth + `}}}`
			_, err := parseFile("", []byte(data), Options{Lookup: lookupOf(tt.vars)})
			var want []string
			for _, w := range tt.want {
				want = append(want, `config: server "remote": `+w)
			}
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Parse error lines (-want +got):\n%s", diff)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
			}
		})
	}
}

func TestParseHeadersHelper(t *testing.T) {
	tests := []struct {
		name, helper string
		want         []string
	}{
		{"plain", `"get-headers"`, nil},
		{"not a string", `["get-headers"]`, []string{`config: server "remote": field "headersHelper": want a string, got an array`}},
		{"blank", `" "`, []string{`config: server "remote": field "headersHelper": empty command`}},
		// An unset variable is a warning: the host fails this server alone.
		{"unset variable", `"get-headers --token-file ${TOKEN_FILE}"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := `{"mcpServers": {"remote": {"url": "https://x.example/mcp", "headersHelper": ` + tt.helper + `}}}`
			_, err := parseFile("", []byte(data), Options{})
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse error lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePrefix(t *testing.T) {
	off, on := false, true
	tests := []struct {
		name, value string
		want        *bool
		wantErr     []string
	}{
		{"absent", "", nil, nil},
		{"null is absent", `null`, nil, nil},
		{"false", `false`, &off, nil},
		{"true", `true`, &on, nil},
		{"a string", `"false"`, nil, []string{`config: server "s": field "prefix": want true or false, got a string`}},
		{"a number", `0`, nil, []string{`config: server "s": field "prefix": want true or false, got a number`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entry := `{"command": "x"}`
			if tt.value != "" {
				entry = `{"command": "x", "prefix": ` + tt.value + `}`
			}
			f, err := parseFile("", []byte(`{"mcpServers": {"s": `+entry+`}}`), Options{})
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("errors.Is(err, ErrInvalid) = false for %v", err)
				}
			}
			if diff := cmp.Diff(tt.wantErr, got); diff != "" {
				t.Fatalf("Parse error lines (-want +got):\n%s", diff)
			}
			if err == nil {
				if diff := cmp.Diff(tt.want, f.Servers[0].Prefix); diff != "" {
					t.Errorf("Prefix (-want +got):\n%s", diff)
				}
				if len(f.Warnings) > 0 {
					t.Errorf("warnings %q, want none: prefix is a known field", f.Warnings)
				}
			}
		})
	}
}

func TestParseProtocolVersion(t *testing.T) {
	const accepted = "2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05"
	tests := []struct {
		name, entry string
		wantErr     []string
	}{
		{"absent", `{"command": "x"}`, nil},
		{"legacy", `{"command": "x", "protocolVersion": "2025-11-25"}`, nil},
		{"oldest legacy", `{"command": "x", "protocolVersion": "2024-11-05"}`, nil},
		{"modern", `{"command": "x", "protocolVersion": "2026-07-28"}`, nil},
		{"modern over http", `{"url": "https://x.example/mcp", "protocolVersion": "2026-07-28"}`, nil},
		{"legacy over sse", `{"type": "sse", "url": "https://x.example/sse", "protocolVersion": "2024-11-05"}`, nil},
		{"unknown", `{"command": "x", "protocolVersion": "2025-01-01"}`,
			[]string{`config: server "s": field "protocolVersion": unknown protocol version "2025-01-01" (want one of ` + accepted + `, or leave it out to detect the era)`}},
		{"empty string", `{"command": "x", "protocolVersion": ""}`, nil},
		{"not a string", `{"command": "x", "protocolVersion": 20251125}`,
			[]string{`config: server "s": field "protocolVersion": want a string, got a number`}},
		{"modern over sse", `{"type": "sse", "url": "https://x.example/sse", "protocolVersion": "2026-07-28"}`,
			[]string{`config: server "s": field "protocolVersion": 2026-07-28 is not spoken over the legacy sse transport (want one of 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFile("", []byte(`{"mcpServers": {"s": `+tt.entry+`}}`), Options{})
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.wantErr, got); diff != "" {
				t.Errorf("Parse error lines (-want +got):\n%s", diff)
			}
		})
	}
}
