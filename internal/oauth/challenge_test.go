package oauth_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
)

func TestParseChallenges(t *testing.T) {
	type ch = oauth.Challenge
	type p = map[string]string
	tests := []struct {
		name   string
		header []string
		want   []ch
	}{
		{"bearer with metadata and scope",
			[]string{`Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource", scope="read write"`},
			[]ch{{Scheme: "bearer", Params: p{"resource_metadata": "https://mcp.example/.well-known/oauth-protected-resource", "scope": "read write"}}}},
		{"escaped quotes and commas in a quoted string",
			[]string{`Bearer error="invalid_token", error_description="the \"token\", it expired, a=b", scope=read`},
			[]ch{{Scheme: "bearer", Params: p{"error": "invalid_token", "error_description": `the "token", it expired, a=b`, "scope": "read"}}}},
		{"several challenges in one header",
			[]string{`Basic realm="x, y", Bearer scope="a", DPoP algs="ES256 PS256", error=use_dpop_nonce`},
			[]ch{
				{Scheme: "basic", Params: p{"realm": "x, y"}},
				{Scheme: "bearer", Params: p{"scope": "a"}},
				{Scheme: "dpop", Params: p{"algs": "ES256 PS256", "error": "use_dpop_nonce"}},
			}},
		{"token68 Basic before Bearer",
			[]string{`Basic dXNlcjpwYXNzd29yZA==, Bearer scope="s"`},
			[]ch{{Scheme: "basic", Params: p{}}, {Scheme: "bearer", Params: p{"scope": "s"}}}},
		{"token68 with one padding character",
			[]string{`Basic YWI=, Bearer scope="s"`},
			[]ch{{Scheme: "basic", Params: p{}}, {Scheme: "bearer", Params: p{"scope": "s"}}}},
		{"scheme and parameter names are case-insensitive",
			[]string{`BEARER Resource_Metadata="https://a.example/m", SCOPE="Read"`},
			[]ch{{Scheme: "bearer", Params: p{"resource_metadata": "https://a.example/m", "scope": "Read"}}}},
		{"scheme without parameters, then another",
			[]string{`Negotiate, Bearer error="insufficient_scope"`},
			[]ch{{Scheme: "negotiate", Params: p{}}, {Scheme: "bearer", Params: p{"error": "insufficient_scope"}}}},
		{"spaces around equals, tabs, empty quoted value",
			[]string{"Bearer realm = \"\",\tscope =\t\"a b\""},
			[]ch{{Scheme: "bearer", Params: p{"realm": "", "scope": "a b"}}}},
		{"one challenge per header line",
			[]string{`DPoP algs="ES256"`, `Bearer scope="x"`},
			[]ch{{Scheme: "dpop", Params: p{"algs": "ES256"}}, {Scheme: "bearer", Params: p{"scope": "x"}}}},
		{"empty", []string{""}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.header {
				h.Add("WWW-Authenticate", v)
			}
			got := oauth.ParseChallenges(h)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseChallenges(%q) (-want +got):\n%s", tt.header, diff)
			}
		})
	}
}

func TestChallengeAccessors(t *testing.T) {
	h := http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", scope="read  write", resource_metadata="https://m.example/prm"`}}
	c := oauth.ParseChallenges(h)[0]
	if diff := cmp.Diff([]string{"read", "write"}, c.Scopes()); diff != "" {
		t.Errorf("Scopes (-want +got):\n%s", diff)
	}
	if c.Error() != "insufficient_scope" || c.ResourceMetadata() != "https://m.example/prm" {
		t.Errorf("Error, ResourceMetadata = %q, %q", c.Error(), c.ResourceMetadata())
	}
}

// FuzzParseChallenges: any header value parses without panicking, and
// every scheme and parameter name it yields is a token in lower case.
func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="https://a/m", scope="x y"`,
		`Basic YWI=, Bearer error="insufficient_scope", scope="a"`,
		`DPoP error="use_dpop_nonce", algs="ES256"`,
		`Bearer realm="a\"b,c", , ,Negotiate`,
		`=, "unterminated`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := http.Header{}
		h.Add("WWW-Authenticate", s)
		for _, c := range oauth.ParseChallenges(h) {
			if c.Scheme == "" || strings.ToLower(c.Scheme) != c.Scheme {
				t.Fatalf("scheme %q from %q", c.Scheme, s)
			}
			for k := range c.Params {
				if k == "" || strings.ToLower(k) != k {
					t.Fatalf("parameter %q from %q", k, s)
				}
			}
		}
	})
}
