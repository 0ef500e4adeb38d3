package main

import (
	"encoding/json"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	// The one-time start URL on the redirect listener, never the
	// authorization URL with its state.
	if !strings.Contains(stderr, "/mcpvisor-sign-in/") || strings.Contains(stderr, "state=") {
		t.Errorf("auth login did not print the one-time sign-in URL alone: %q", stderr)
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

	browser, argv := recordingBrowser(t)
	stdout, stderr, code := cliRun(t, browser, append([]string{"auth", "login", "web"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "signed in to web") {
		t.Fatalf("auth login through the sidecar: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	checkBrowserArgv(t, argv)
	stdout, _, code = cliRun(t, "", append([]string{"auth", "--json"}, common...)...)
	var sts []mcpvisor.AuthStatus
	if err := json.Unmarshal([]byte(stdout), &sts); err != nil || code != 0 || len(sts) != 1 || !sts[0].SignedIn {
		t.Fatalf("auth status through the sidecar: exit %d, %q (%v)", code, stdout, err)
	}
}

// With a sidecar (its own process) holding the data directory and an
// encrypted secret store, the auth commands go through its API with
// neither --config nor the store's key: login signs the sidecar's server
// in through its one-time URL and returns once it is ready, and logout
// parks it in needs_auth at once, with no call to find out.
func TestAuthThroughSidecarProcess(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	cfg := protectedConfig(t, as)
	data := t.TempDir()
	key := strings.Repeat("5a", 32)
	startSidecarEnv(t, []string{"MCPVISOR_SECRET_KEY=" + key}, "--config", cfg, "--data", data)
	hint := "sign in with: mcpvisor auth login web --data " + data
	if _, stderr, code := cliRun(t, "", "status", "--data", data); code != 1 || !strings.Contains(stderr, hint+"\n") {
		t.Fatalf("status before sign-in: exit %d, stderr %q; want the hint %q", code, stderr, hint)
	}

	browser, argv := recordingBrowser(t)
	stdout, stderr, code := cliRun(t, browser, "auth", "login", "web", "--data", data)
	if code != 0 || !strings.Contains(stdout, "signed in to web") {
		t.Fatalf("auth login through the sidecar: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	checkBrowserArgv(t, argv)
	if stdout, stderr, code := cliRun(t, "", "status", "--data", data, "--wait", "0s"); code != 0 || !regexp.MustCompile(`(?m)^web\s+ready`).MatchString(stdout) {
		t.Fatalf("status after login: exit %d, stdout %q, stderr %q; want web ready when login returned", code, stdout, stderr)
	}
	if stdout, stderr, code := cliRun(t, "", "call", "mcp__web__echo", `{"a":1}`, "--data", data); code != 0 || !strings.Contains(stdout, `"a": 1`) {
		t.Fatalf("call after login: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, _, code = cliRun(t, "", "auth", "--json", "--data", data)
	var sts []mcpvisor.AuthStatus
	if err := json.Unmarshal([]byte(stdout), &sts); err != nil || code != 0 || len(sts) != 1 || !sts[0].SignedIn {
		t.Fatalf("auth through the sidecar: exit %d, %q (%v)", code, stdout, err)
	}
	if b, err := os.ReadFile(filepath.Join(data, "secrets.json")); err != nil || strings.Contains(string(b), "access") {
		t.Errorf("the sidecar's secret store: %v; want it written, encrypted", err)
	}

	if stdout, stderr, code := cliRun(t, "", "auth", "logout", "web", "--data", data); code != 0 || !strings.Contains(stdout, "signed out of web") {
		t.Fatalf("auth logout through the sidecar: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, stderr, code = cliRun(t, "", "status", "--data", data, "--wait", "0s")
	if code != 1 || !regexp.MustCompile(`(?m)^web\s+needs_auth`).MatchString(stdout) || !strings.Contains(stderr, hint) {
		t.Fatalf("status after logout: exit %d, stdout %q, stderr %q; want web needs_auth and the hint", code, stdout, stderr)
	}
	if _, stderr, code := cliRun(t, "", "call", "mcp__web__echo", `{}`, "--data", data); code != 1 || !strings.Contains(stderr, hint) {
		t.Errorf("call after logout: exit %d, stderr %q; want a failure with the hint", code, stderr)
	}
}

// recordingBrowser is a $BROWSER that writes its command line to a file
// (what any local user reads in /proc/PID/cmdline) and then browses as
// conformance -browse does.
func recordingBrowser(t *testing.T) (browser, argvFile string) {
	t.Helper()
	dir := t.TempDir()
	argvFile = filepath.Join(dir, "argv")
	browser = filepath.Join(dir, "browser")
	script := "#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" >> " + argvFile + "\nexec " + conformanceBin + " -browse \"$@\"\n"
	if err := os.WriteFile(browser, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return browser, argvFile
}

// checkBrowserArgv: the browser was started on the one-time start URL,
// with no state or PKCE challenge on its command line, and that URL does
// not sign anyone in a second time.
func checkBrowserArgv(t *testing.T, argvFile string) {
	t.Helper()
	b, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatalf("the browser never ran: %v", err)
	}
	argv := string(b)
	for _, secret := range []string{"state=", "code_challenge", "client_id", "/authorize"} {
		if strings.Contains(argv, secret) {
			t.Errorf("the browser's command line holds %q: %q", secret, argv)
		}
	}
	lines := strings.Split(strings.TrimSpace(argv), "\n")
	start := lines[len(lines)-1]
	if !strings.Contains(start, "/mcpvisor-sign-in/") {
		t.Fatalf("the browser's command line %q has no one-time sign-in URL", argv)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := c.Get(start); err == nil {
		resp.Body.Close()
		if resp.StatusCode/100 == 3 {
			t.Errorf("the one-time URL %s redirected again: HTTP %d to %s", start, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

// The browser-argv attack, rerun: auth login starts $BROWSER with a URL
// that holds nothing a local process could race the redirect with.
func TestAuthLoginBrowserArgvHoldsNoState(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	cfg := protectedConfig(t, as)
	browser, argv := recordingBrowser(t)
	stdout, stderr, code := cliRun(t, browser, "auth", "login", "web", "--wait", "10s", "--config", cfg, "--data", t.TempDir())
	if code != 0 || !strings.Contains(stdout, "signed in to web") {
		t.Fatalf("auth login: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	checkBrowserArgv(t, argv)
	if n := len(as.Requests("token")); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
}

// What a person must know of a token that works (no refresh token: a
// sign-in again at expiry) is printed under the sign-in's summary.
func TestAuthSummaryWarns(t *testing.T) {
	st := mcpvisor.AuthStatus{Issuer: "https://id.example", Scopes: []string{"a", "b"}}
	if got := authSummary(st); got != " (at https://id.example, scopes a b)" {
		t.Errorf("summary = %q", got)
	}
	st.Warning = "the provider issued no refresh token: you will be asked to sign in again when the access token expires (in 59s)"
	if got, want := authSummary(st), " (at https://id.example, scopes a b)\n"+st.Warning; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}
