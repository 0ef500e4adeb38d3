package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/mcphttptest"
	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// headlessCLI is the mcpvisor binary run as on a machine with no browser
// (no $BROWSER, no display), its stderr read line by line as it comes and
// its stdin a pipe the test types into, as the person at the terminal.
type headlessCLI struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stdout bytes.Buffer
	stderr syncBuffer
	exited chan error
}

func startHeadless(t *testing.T, args ...string) *headlessCLI {
	t.Helper()
	c := &headlessCLI{cmd: exec.Command(cliBin, args...), lines: make(chan string, 256), exited: make(chan error, 1)}
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "BROWSER", "DISPLAY", "WAYLAND_DISPLAY", "MCPVISOR_SECRET_KEY":
		default:
			c.cmd.Env = append(c.cmd.Env, kv)
		}
	}
	c.cmd.Stdout = &c.stdout
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	pipe, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			c.stderr.Write([]byte(sc.Text() + "\n"))
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
		close(c.lines)
		c.exited <- c.cmd.Wait() // only after the last read of the pipe
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

// await returns the first submatch of the first stderr line re matches.
func (c *headlessCLI) await(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("mcpvisor exited before printing %s: %s", re, c.stderr.String())
			}
			if m := re.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-timeout:
			t.Fatalf("mcpvisor did not print %s within 60 s: %s", re, c.stderr.String())
		}
	}
}

// wait returns the exit code once the command has exited.
func (c *headlessCLI) wait(t *testing.T) int {
	t.Helper()
	c.stdin.Close()
	for range c.lines {
	}
	select {
	case err := <-c.exited:
		c.exited <- err // for the cleanup
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		t.Fatalf("mcpvisor did not exit: %s", c.stderr.String())
		return -1
	}
}

var (
	userCodeLine = regexp.MustCompile(`^\s+([A-Z0-9_-]{8})$`)
	authorizeURL = regexp.MustCompile(`^\s+(http://\S+/authorize\?\S+)$`)
)

// person follows the authorization URL as the person's browser on another
// machine does, up to the redirect to the host's loopback address, which
// it does not load: it returns the address the browser ends on.
func person(t *testing.T, authorization string) string {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authorization)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || loc == "" {
		t.Fatalf("authorization answered %d, Location %q", resp.StatusCode, loc)
	}
	return loc
}

// protectedServers is a config of one server per authorization server,
// each behind a resource it protects, by name.
func protectedServers(t *testing.T, as map[string]*oauthtest.AuthServer) string {
	t.Helper()
	var entries []string
	for name, s := range as {
		backend := mcphttptest.Start(t, &mcphttptest.Server{})
		target, _ := url.Parse(backend.URL)
		res := oauthtest.NewResource(t, s)
		res.Next = http.StripPrefix("/mcp", httputil.NewSingleHostReverseProxy(target))
		entries = append(entries, `"`+name+`": {"type": "http", "url": "`+res.MCPURL()+`", "allowPrivate": true, "oauth": {"scopes": "read write", "allowPrivate": true}}`)
	}
	return writeConfig(t, `{"mcpServers": {`+strings.Join(entries, ", ")+`}}`)
}

// On a machine with no browser, auth login signs in with a code where the
// authorization server offers it: it prints the verification URI and the
// user code, and once the person approves (on another device), the token
// serves later commands. No authorization request, no redirect.
func TestAuthLoginDeviceHeadless(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{Device: true, DeviceInterval: 1})
	cfg := protectedConfig(t, as)
	common := []string{"--config", cfg, "--data", t.TempDir()}

	c := startHeadless(t, append([]string{"auth", "login", "web", "--wait", "10s"}, common...)...)
	code := c.await(t, userCodeLine)
	if !as.DecideDevice(code, oauthtest.DeviceApprove) {
		t.Fatalf("the authorization server issued no user code %q", code)
	}
	if exit := c.wait(t); exit != 0 || !strings.Contains(c.stdout.String(), "signed in to web") {
		t.Fatalf("auth login: exit %d, stdout %q, stderr %q", exit, c.stdout.String(), c.stderr.String())
	}
	if !strings.Contains(c.stderr.String(), as.Issuer()+"/device") {
		t.Errorf("the verification URI is not printed: %q", c.stderr.String())
	}
	stdout, stderr, exit := cliRun(t, "", append([]string{"call", "mcp__web__echo", `{"a":1}`}, common...)...)
	if exit != 0 || !strings.Contains(stdout, `"a"`) {
		t.Fatalf("call after the sign-in with a code: exit %d, stdout %q, stderr %q", exit, stdout, stderr)
	}
	if n := len(as.Requests("authorize")); n != 0 {
		t.Errorf("%d authorization requests; want none", n)
	}
	if n := len(as.Requests("device_authorization")); n != 1 {
		t.Errorf("%d device authorization requests; want 1", n)
	}
}

// A person who refuses the sign-in with a code gets a failed auth login
// that says so.
func TestAuthLoginDeviceDenied(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{Device: true, DeviceInterval: 1})
	cfg := protectedConfig(t, as)
	c := startHeadless(t, "auth", "login", "web", "--device", "--wait", "10s", "--config", cfg, "--data", t.TempDir())
	as.DecideDevice(c.await(t, userCodeLine), oauthtest.DeviceDeny)
	if exit := c.wait(t); exit == 0 || !strings.Contains(c.stderr.String(), "refused") {
		t.Fatalf("auth login denied: exit %d, stderr %q", exit, c.stderr.String())
	}
}

// Where the authorization server offers no sign-in with a code, auth login
// --no-browser prints the authorization URL and reads back the address the
// person's browser ended on (the loopback redirect it could not load); a
// pasted address whose state is not the sign-in's is refused.
func TestAuthLoginPasteBack(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	cfg := protectedConfig(t, as)
	data := t.TempDir()
	common := []string{"--wait", "10s", "--config", cfg, "--data", data}

	t.Run("forged state", func(t *testing.T) {
		c := startHeadless(t, append([]string{"auth", "login", "web", "--no-browser"}, common...)...)
		loc := person(t, c.await(t, authorizeURL))
		u, _ := url.Parse(loc)
		q := u.Query()
		q.Set("state", "forged")
		u.RawQuery = q.Encode()
		io.WriteString(c.stdin, u.String()+"\n")
		if exit := c.wait(t); exit == 0 || !strings.Contains(c.stderr.String(), "state unknown") {
			t.Fatalf("a forged state: exit %d, stderr %q", exit, c.stderr.String())
		}
	})

	c := startHeadless(t, append([]string{"auth", "login", "web", "--no-browser"}, common...)...)
	loc := person(t, c.await(t, authorizeURL))
	if !strings.HasPrefix(loc, "http://localhost:") || !strings.Contains(loc, "/callback?") {
		t.Fatalf("the redirect goes to %q; want the loopback redirect URI", loc)
	}
	io.WriteString(c.stdin, loc+"\n")
	if exit := c.wait(t); exit != 0 || !strings.Contains(c.stdout.String(), "signed in to web") {
		t.Fatalf("auth login --no-browser: exit %d, stdout %q, stderr %q", exit, c.stdout.String(), c.stderr.String())
	}
	stdout, stderr, exit := cliRun(t, "", "call", "mcp__web__echo", `{"a":1}`, "--config", cfg, "--data", data)
	if exit != 0 || !strings.Contains(stdout, `"a"`) {
		t.Fatalf("call after paste-back: exit %d, stdout %q, stderr %q", exit, stdout, stderr)
	}
}

// Through a sidecar (its own process) holding the data directory, auth
// login signs in with a code where the server offers it, and by pasting
// the redirect back where it does not.
func TestAuthLoginAwayThroughSidecar(t *testing.T) {
	dev := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{Device: true, DeviceInterval: 1})
	plain := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	cfg := protectedServers(t, map[string]*oauthtest.AuthServer{"dev": dev, "web": plain})
	data := t.TempDir()
	startServeProcess(t, "--config", cfg, "--data", data)
	common := []string{"--config", cfg, "--data", data}

	c := startHeadless(t, append([]string{"auth", "login", "dev"}, common...)...)
	dev.DecideDevice(c.await(t, userCodeLine), oauthtest.DeviceApprove)
	if exit := c.wait(t); exit != 0 || !strings.Contains(c.stdout.String(), "signed in to dev") {
		t.Fatalf("auth login dev through the sidecar: exit %d, stdout %q, stderr %q", exit, c.stdout.String(), c.stderr.String())
	}

	c = startHeadless(t, append([]string{"auth", "login", "web"}, common...)...)
	io.WriteString(c.stdin, person(t, c.await(t, authorizeURL))+"\n")
	if exit := c.wait(t); exit != 0 || !strings.Contains(c.stdout.String(), "signed in to web") {
		t.Fatalf("auth login web through the sidecar: exit %d, stdout %q, stderr %q", exit, c.stdout.String(), c.stderr.String())
	}

	stdout, _, exit := cliRun(t, "", append([]string{"auth", "--json"}, common...)...)
	var sts []mcpvisor.AuthStatus
	if err := json.Unmarshal([]byte(stdout), &sts); err != nil || exit != 0 || len(sts) != 2 || !sts[0].SignedIn || !sts[1].SignedIn {
		t.Fatalf("auth status through the sidecar: exit %d, %q (%v)", exit, stdout, err)
	}
}

// openStart opens a sign-in's one-time start URL as a browser does and
// returns where it sends the browser: the authorization URL.
func openStart(t *testing.T, start string) string {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(start)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || loc == "" {
		t.Fatalf("start URL answered %d, Location %q", resp.StatusCode, loc)
	}
	return loc
}

// With --public-url, a sign-in's redirect URI is the sidecar's own
// /oauth/callback: the browser lands there (no loopback listener, no
// paste), the state is one-time, and a forged one is refused.
func TestSidecarPublicCallback(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	cfg := protectedConfig(t, as)
	data := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	public := "http://" + addr
	s := startServeProcess(t, "--config", cfg, "--data", data, "--listen", addr, "--public-url", public)
	admin, err := os.ReadFile(filepath.Join(data, adminTokenName))
	if err != nil {
		t.Fatal(err)
	}

	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/servers/web/auth?method=paste", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(admin)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var view sidecar.SignInView
	err = json.NewDecoder(resp.Body).Decode(&view)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST auth: %d %v", resp.StatusCode, err)
	}
	if view.RedirectURI != public+"/oauth/callback" {
		t.Fatalf("redirect URI %q; want the sidecar's %s/oauth/callback", view.RedirectURI, public)
	}
	if regs := as.Requests("register"); len(regs) != 1 || regs[0].Form.Get("redirect_uris") != view.RedirectURI {
		t.Errorf("registrations %+v; want the public callback registered", regs)
	}

	// The person's browser: the authorization server sends it to the
	// sidecar, which completes the sign-in.
	// The URL to open is a one-time start URL beside the callback: the
	// authorization URL (and its state) is never on a command line.
	if !strings.HasPrefix(view.URL, public+"/mcpvisor-sign-in/") {
		t.Fatalf("the URL to open is %q; want a start URL on %s", view.URL, public)
	}
	loc := person(t, openStart(t, view.URL))
	if !strings.HasPrefix(loc, public+"/oauth/callback?") {
		t.Fatalf("redirected to %q", loc)
	}
	u, _ := url.Parse(loc)
	q := u.Query()
	q.Set("state", "forged")
	forged := *u
	forged.RawQuery = q.Encode()
	if code, body := get(t, forged.String(), ""); code != http.StatusBadRequest {
		t.Errorf("a forged state: %d %s; want 400", code, body)
	}
	if code, body := get(t, loc, ""); code != http.StatusOK || !strings.Contains(string(body), "Signed in to web") {
		t.Fatalf("the callback: %d %s", code, body)
	}
	if code, body := get(t, loc, ""); code != http.StatusBadRequest {
		t.Errorf("the same redirect again: %d %s; want 400 (the state is spent)", code, body)
	}
	stdout, _, exit := cliRun(t, "", "auth", "--json", "--config", cfg, "--data", data)
	var sts []mcpvisor.AuthStatus
	if err := json.Unmarshal([]byte(stdout), &sts); err != nil || exit != 0 || len(sts) != 1 || !sts[0].SignedIn {
		t.Fatalf("auth status after the public callback: exit %d, %q (%v)", exit, stdout, err)
	}

	// A start URL opened twice went somewhere else too: the second opening
	// is refused and that sign-in cancelled, before anyone signs in.
	req, _ = http.NewRequest(http.MethodPost, s.url+"/v1/servers/web/auth", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(admin)))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&view)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(view.URL, public+"/mcpvisor-sign-in/") {
		t.Fatalf("a second sign-in: %d %v, URL %q", resp.StatusCode, err, view.URL)
	}
	second := openStart(t, view.URL)
	if code, body := get(t, view.URL, ""); code != http.StatusGone {
		t.Errorf("the start URL opened again: %d %s; want 410", code, body)
	}
	if code, _ := get(t, person(t, second), ""); code != http.StatusBadRequest {
		t.Errorf("the redirect of a cancelled sign-in: %d; want 400", code)
	}
	if code, _ := get(t, public+"/mcpvisor-sign-in/made-up", ""); code != http.StatusNotFound {
		t.Errorf("a made-up start id: %d; want 404", code)
	}
}
