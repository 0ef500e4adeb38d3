package main

import (
	"encoding/json"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/mcphttptest"
	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
)

// cliRun runs the mcpvisor binary with browser as $BROWSER ("" for none)
// and stdin not a terminal, as a script would.
func cliRun(t *testing.T, browser string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(cliBin, args...)
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BROWSER=") && !strings.HasPrefix(kv, "MCPVISOR_SECRET_KEY") {
			env = append(env, kv)
		}
	}
	if browser != "" {
		env = append(env, "BROWSER="+browser)
	}
	cmd.Env = env
	stdout, stderr, code = runCmd(cmd)
	if code == -1 {
		t.Fatalf("mcpvisor %v: %s", args, stderr)
	}
	return stdout, stderr, code
}

// A person's session with a server that needs OAuth: the first command
// says how to sign in, auth login signs in through the browser, later
// commands use the stored token, logout forgets it, and with $BROWSER set
// a command signs in by itself.
// protectedConfig is a config file naming one server, web: an MCP server
// behind a resource that as protects.
func protectedConfig(t *testing.T, as *oauthtest.AuthServer) string {
	t.Helper()
	backend := mcphttptest.Start(t, &mcphttptest.Server{})
	target, _ := url.Parse(backend.URL)
	res := oauthtest.NewResource(t, as)
	res.Next = http.StripPrefix("/mcp", httputil.NewSingleHostReverseProxy(target))
	return writeConfig(t, `{"mcpServers": {"web": {"type": "http", "url": "`+res.MCPURL()+`", "allowPrivate": true, "oauth": {"scopes": "read write", "allowPrivate": true}}}}`)
}

func TestAuthLoginFlow(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	cfg := protectedConfig(t, as)
	data := t.TempDir()
	common := []string{"--config", cfg, "--data", data}
	browser := conformanceBin + " -browse"

	_, stderr, code := cliRun(t, "", append([]string{"tools", "--wait", "10s"}, common...)...)
	if code == 0 || !strings.Contains(stderr, "needs_auth") || !strings.Contains(stderr, "mcpvisor auth login web") {
		t.Fatalf("tools before sign-in: exit %d, stderr %q; want needs_auth and the login hint", code, stderr)
	}

	stdout, stderr, code := cliRun(t, browser, append([]string{"auth", "login", "web", "--wait", "10s"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "signed in to web") || !strings.Contains(stdout, "scopes read write") {
		t.Fatalf("auth login: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "/authorize?") {
		t.Errorf("auth login did not print the authorization URL: %q", stderr)
	}

	stdout, stderr, code = cliRun(t, "", append([]string{"call", "mcp__web__echo", `{"a":1}`}, common...)...)
	if code != 0 || !strings.Contains(stdout, `"a"`) {
		t.Fatalf("call after login: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if n := len(as.Requests("authorize")); n != 1 {
		t.Errorf("%d authorization requests, want 1 (later commands reuse the token)", n)
	}

	stdout, _, code = cliRun(t, "", append([]string{"auth", "status", "--json"}, common...)...)
	var sts []mcpvisor.AuthStatus
	if err := json.Unmarshal([]byte(stdout), &sts); err != nil || code != 0 || len(sts) != 1 || !sts[0].SignedIn || sts[0].Issuer != as.Issuer() {
		t.Fatalf("auth status: exit %d, %q (%v)", code, stdout, err)
	}
	for _, tok := range as.Issued() {
		if strings.Contains(stdout, tok) {
			t.Error("auth status printed a token")
		}
	}

	if stdout, _, code = cliRun(t, "", append([]string{"auth", "logout", "web"}, common...)...); code != 0 || !strings.Contains(stdout, "signed out of web") {
		t.Fatalf("auth logout: exit %d, %q", code, stdout)
	}
	stdout, _, _ = cliRun(t, "", append([]string{"auth", "--json"}, common...)...)
	if err := json.Unmarshal([]byte(stdout), &sts); err != nil || len(sts) != 1 || sts[0].SignedIn {
		t.Fatalf("auth after logout: %q (%v)", stdout, err)
	}

	// With a browser at hand, a command that meets the 401 signs in itself.
	stdout, stderr, code = cliRun(t, browser, append([]string{"tools", "--wait", "10s"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "mcp__web__echo") {
		t.Fatalf("tools with $BROWSER: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if n := len(as.Requests("authorize")); n != 2 {
		t.Errorf("%d authorization requests, want 2", n)
	}
}

// With a sidecar holding the data directory, auth login signs the
// sidecar's server in through its API, and auth status asks it.
func TestAuthLoginThroughSidecar(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	cfg := protectedConfig(t, as)
	data := t.TempDir()
	startServe(t, "--config", cfg, "--data", data)
	common := []string{"--config", cfg, "--data", data}

	stdout, stderr, code := cliRun(t, conformanceBin+" -browse", append([]string{"auth", "login", "web"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "signed in to web") {
		t.Fatalf("auth login through the sidecar: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, _, code = cliRun(t, "", append([]string{"auth", "--json"}, common...)...)
	var sts []mcpvisor.AuthStatus
	if err := json.Unmarshal([]byte(stdout), &sts); err != nil || code != 0 || len(sts) != 1 || !sts[0].SignedIn {
		t.Fatalf("auth status through the sidecar: exit %d, %q (%v)", code, stdout, err)
	}
}
