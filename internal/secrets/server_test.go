package secrets

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/config"
)

func TestSealOAuth(t *testing.T) {
	o := &config.OAuth{ClientID: "abc", ClientSecret: "s3cret", PrivateKey: "-----BEGIN PRIVATE KEY-----\nMC4\n-----END PRIVATE KEY-----",
		IDPClientSecret: "idp-secret", IDToken: "eyJ.id.token", Assertion: "${WORKLOAD_JWT}", Scopes: "read", CallbackPort: 8080}
	orig := *o
	sc := config.Server{Name: "a", URL: "https://x.example/mcp", OAuth: o}
	sealed, secrets := Seal(sc)

	if diff := cmp.Diff(orig, *o); diff != "" {
		t.Errorf("Seal modified the caller's oauth object (-want +got):\n%s", diff)
	}
	row, err := json.Marshal(sealed)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{orig.ClientSecret, "MC4", orig.IDPClientSecret, orig.IDToken} {
		if strings.Contains(string(row), secret) {
			t.Errorf("the sealed row %s holds %q", row, secret)
		}
	}
	if len(secrets) != 4 {
		t.Errorf("sealed %d secrets, want 4: %v", len(secrets), secrets)
	}
	s := sealed.OAuth
	if s.ClientID != "abc" || s.Scopes != "read" || s.CallbackPort != 8080 || s.Assertion != "${WORKLOAD_JWT}" {
		t.Errorf("Seal changed what is not a literal secret: %+v", s)
	}

	lookup := func(name string) (string, bool) {
		if v, ok := secrets[name]; ok {
			return v, true
		}
		if name == "WORKLOAD_JWT" {
			return "jwt", true
		}
		return "", false
	}
	x, err := sealed.Expand(lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := orig
	want.Assertion = "jwt"
	if diff := cmp.Diff(want, *x.OAuth); diff != "" {
		t.Errorf("the sealed entry expanded (-want +got):\n%s", diff)
	}
}

func TestSealFields(t *testing.T) {
	sc := config.Server{Name: "a", URL: "https://x.example/mcp", APIKey: "k3y",
		Headers: map[string]string{"X-Token": "t0k", "X-Ref": "${REF}"}, Env: map[string]string{"E": "v4l"}}
	headers, env := sc.Headers, sc.Env
	sealed, secrets := Seal(sc)
	if headers["X-Token"] != "t0k" || env["E"] != "v4l" {
		t.Error("Seal modified the caller's maps")
	}
	if len(secrets) != 3 || sealed.Headers["X-Ref"] != "${REF}" {
		t.Errorf("Seal = %+v, %v; want 3 secrets and the reference kept", sealed, secrets)
	}
	for _, v := range []string{sealed.APIKey, sealed.Headers["X-Token"], sealed.Env["E"]} {
		if !strings.HasPrefix(v, "${"+Prefix) {
			t.Errorf("sealed value %q is not a reference to the store", v)
		}
	}
}

func TestOpenHostDeriveKey(t *testing.T) {
	key := bytes.Repeat([]byte{7}, KeySize)
	env := func(name string) (string, bool) { return "", false }

	plain, err := OpenHost(t.TempDir(), nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if k := plain.DeriveKey("p"); k != nil {
		t.Errorf("DeriveKey of a plaintext store = %x, want nil", k)
	}

	given := bytes.Clone(key)
	a, err := OpenHost(t.TempDir(), given, env)
	if err != nil {
		t.Fatal(err)
	}
	given[0] = 0 // the store keeps its own copy
	fromEnv, err := OpenHost(t.TempDir(), nil, func(name string) (string, bool) {
		if name == EnvKey {
			return strings.Repeat("07", KeySize), true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	ka, kb := a.DeriveKey("p"), fromEnv.DeriveKey("p")
	if len(ka) != 32 || !bytes.Equal(ka, kb) {
		t.Errorf("DeriveKey of the same key: %x and %x, want equal 32-byte keys", ka, kb)
	}
	if bytes.Equal(ka, a.DeriveKey("q")) {
		t.Error("two purposes derived the same key")
	}
}

func TestResolver(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateServer("a", map[string]string{Prefix + "APIKEY": "k3y"}, config.Server{Name: "a", APIKey: "${" + Prefix + "APIKEY}"}); err != nil {
		t.Fatal(err)
	}
	input := func(name string) (string, bool, bool) {
		if id, ok := strings.CutPrefix(name, "input:"); ok {
			return "answer-" + id, true, id != "none"
		}
		return "", false, false
	}
	env := func(name string) (string, bool) { return "env-" + name, true }
	r := s.Resolver("a", input, env)
	for _, tt := range []struct {
		name, want string
		ok         bool
	}{
		{Prefix + "APIKEY", "k3y", true},
		{Prefix + "OTHER", "", false}, // never from the environment
		{"input:x", "answer-x", true},
		{"input:none", "answer-none", false},
		{"HOME", "env-HOME", true},
	} {
		if v, ok := r(tt.name); v != tt.want || ok != tt.ok {
			t.Errorf("lookup %s = %q, %v, want %q, %v", tt.name, v, ok, tt.want, tt.ok)
		}
	}
	if v, ok := s.Resolver("b", input, env)(Prefix + "APIKEY"); ok {
		t.Errorf("server b resolved a's secret: %q", v)
	}
}

// A server URL's user information and query are sealed like an API key
// (issue 38: user:password@ and ?key= were kept in clear in the journal),
// and expand back to the URL as written; a URL without them is left as it
// is.
func TestSealURL(t *testing.T) {
	for _, tc := range []struct{ url, secret string }{
		{"https://alice:s3cret@x.example/mcp?key=abc&v=2#frag", "s3cret"},
		{"https://x.example/mcp?token=t0k", "t0k"},
		{"https://tok3n@x.example", "tok3n"},
	} {
		sealed, values := Seal(config.Server{Name: "a", URL: tc.url})
		if strings.Contains(sealed.URL, tc.secret) || !strings.Contains(sealed.URL, "${"+Prefix) {
			t.Errorf("%s sealed as %s", tc.url, sealed.URL)
		}
		x, err := sealed.Expand(func(name string) (string, bool) { v, ok := values[name]; return v, ok })
		if err != nil || x.URL != tc.url {
			t.Errorf("%s: expanded back to %q, %v", tc.url, x.URL, err)
		}
	}
	for _, plain := range []string{"https://x.example/mcp", "https://x.example/a@b/mcp", "${MCP_URL}?k=1"} {
		if sealed, values := Seal(config.Server{Name: "a", URL: plain}); sealed.URL != plain || len(values) != 0 {
			t.Errorf("%s sealed as %s (%v)", plain, sealed.URL, values)
		}
	}
}
