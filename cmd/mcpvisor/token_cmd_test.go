package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What a person needs to connect a client is said and printed: serve's
// banner names the pages and /mcp, / leads to the pages, a 401 says where
// the token is, and token prints the tokens and the signed-in page.
func TestTokenAndBanner(t *testing.T) {
	data := t.TempDir()
	cfg := writeConfig(t, `{"mcpServers": {"notes": {"command": "NOTES"}}}`)
	s := startSidecar(t, "--config", cfg, "--data", data)
	m := listening.FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("no listening line: %s", s.stderr)
	}
	base := m[1]
	for _, want := range []string{"the inbox page: " + base + "/ui/", "MCP clients: " + base + "/mcp with Authorization: Bearer"} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("the banner does not say %q: %s", want, s.stderr)
		}
	}
	gatewayToken := readFile(t, filepath.Join(data, tokenName))
	adminToken := readFile(t, filepath.Join(data, adminTokenName))
	if strings.Contains(s.stderr.String(), gatewayToken) || strings.Contains(s.stderr.String(), adminToken) {
		t.Error("the banner shows a token")
	}

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /: %d to %q, want 302 to /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
	if code, body := get(t, base+"/mcp", ""); code != http.StatusUnauthorized || !strings.Contains(string(body), "mcpvisor token") {
		t.Errorf("/mcp without a token: %d %s", code, body)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, gatewayToken},
		{[]string{"--admin"}, adminToken},
		{[]string{"--url"}, base + "/ui/#token=" + adminToken},
	} {
		out, errOut, code := cliExec("", append([]string{"token", "--data", data}, tc.args...)...)
		if code != 0 || strings.TrimSpace(out) != tc.want {
			t.Errorf("token %v: exit %d, %q (stderr %q), want %q", tc.args, code, out, errOut, tc.want)
		}
	}
	// The page it signs in to answers with that token.
	if code, _ := get(t, base+"/v1/approvals", adminToken); code != http.StatusOK {
		t.Errorf("the admin token on the API: %d", code)
	}

	// With no sidecar and no token: says where it looked.
	empty := t.TempDir()
	if _, errOut, code := cliExec("", "token", "--data", empty); code == 0 || !strings.Contains(errOut, "mcpvisor serve --data "+empty) {
		t.Errorf("token with none: exit %d: %s", code, errOut)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
