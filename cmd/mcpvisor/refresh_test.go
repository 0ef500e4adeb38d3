package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
)

// scriptCmd is the mcpvisor binary run as a script runs it: no $BROWSER,
// no secret key, stdin an empty pipe (never a terminal), so a command
// that needed a sign-in would fail rather than wait for a person.
func scriptCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(cliBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BROWSER=") && !strings.HasPrefix(kv, "MCPVISOR_SECRET_KEY") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdin = strings.NewReader("")
	return cmd
}

// callEcho runs `mcpvisor call mcp__web__echo {"n":N}` and fails the test
// unless it answers n.
func callEcho(t *testing.T, n int, common []string) {
	t.Helper()
	stdout, stderr, code := runCmd(scriptCmd(append([]string{"call", "mcp__web__echo", fmt.Sprintf(`{"n":%d}`, n)}, common...)...))
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf(`"n": %d`, n)) {
		t.Fatalf("call %d: exit %d, stdout %q, stderr %q", n, code, stdout, stderr)
	}
	if strings.Contains(stderr, "sign in") {
		t.Fatalf("call %d asked for a sign-in: %q", n, stderr)
	}
}

// signedIn signs the config's server web in with the test browser.
func signedIn(t *testing.T, common []string) {
	t.Helper()
	stdout, stderr, code := cliRun(t, conformanceBin+" -browse", append([]string{"auth", "login", "web", "--wait", "10s"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "signed in to web") {
		t.Fatalf("auth login: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// checkGrant fails the test if the authorization server saw a spent
// refresh token again (which revokes the grant) or a second sign-in.
func checkGrant(t *testing.T, as *oauthtest.AuthServer) {
	t.Helper()
	if n := as.Reuses(); n != 0 {
		t.Errorf("a spent refresh token was presented %d times: the provider revoked the grant", n)
	}
	if n := len(as.Requests("authorize")); n != 1 {
		t.Errorf("%d authorization requests, want the one sign-in", n)
	}
}

func refreshes(as *oauthtest.AuthServer) int {
	n := 0
	for _, r := range as.Requests("token") {
		if r.Form.Get("grant_type") == "refresh_token" {
			n++
		}
	}
	return n
}

// Two-second tokens with rotating refresh tokens and reuse detection, as
// providers issue them: twelve commands one after another, each running
// the server itself, then a sidecar on the same data directory with
// commands calling through it at once, then commands again after it
// stopped. Every call succeeds, nobody is asked to sign in again, and no
// spent refresh token ever reaches the provider.
func TestShortLivedTokensAcrossCommandsAndASidecar(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{ExpiresIn: 2})
	cfg := protectedConfig(t, as)
	data := t.TempDir()
	common := []string{"--config", cfg, "--data", data}
	signedIn(t, common)

	start := time.Now()
	for n := range 12 {
		callEcho(t, n, common)
	}
	elapsed := time.Since(start)
	// A two-second token is refreshed once less than a second remains: a
	// refresh at most every second, not one per request (as a fixed 60 s
	// margin did, at least one per command), and at least one every two.
	before := refreshes(as)
	if most := int(elapsed/time.Second) + 2; before > most {
		t.Errorf("%d refreshes in %v of two-second tokens, want at most %d", before, elapsed.Round(time.Millisecond), most)
	}
	if least := int(elapsed/(2*time.Second)) - 1; before < max(least, 1) {
		t.Errorf("%d refreshes in %v of two-second tokens: the commands did not keep the token alive", before, elapsed.Round(time.Millisecond))
	}

	sidecar := startStoppableSidecar(t, common...)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := range 4 {
				callEcho(t, 100+10*w+i, common)
			}
		})
	}
	wg.Wait()
	sidecar.stop(t)
	if t.Failed() {
		t.Logf("the sidecar's stderr:\n%s", sidecar.stderr)
	}

	for n := range 3 {
		callEcho(t, 200+n, common)
	}
	checkGrant(t, as)
	t.Logf("%d refreshes, %d of them in the %v of the commands before the sidecar", refreshes(as), before, elapsed.Round(time.Millisecond))
}

// stoppableSidecar is `mcpvisor serve` in a process of its own, which a
// test stops when it wants the data directory back.
type stoppableSidecar struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan error
}

func startStoppableSidecar(t *testing.T, args ...string) *stoppableSidecar {
	t.Helper()
	s := &stoppableSidecar{cmd: scriptCmd(append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...), stderr: &syncBuffer{}, exited: make(chan error, 1)}
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listens := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		seen := false
		for sc.Scan() {
			fmt.Fprintln(s.stderr, sc.Text())
			if !seen && listening.MatchString(sc.Text()) {
				seen = true
				close(listens)
			}
		}
		s.exited <- s.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		if err, ok := <-s.exited; ok {
			s.exited <- err
		}
	})
	select {
	case <-listens:
		return s
	case err := <-s.exited:
		s.exited <- err
		t.Fatalf("mcpvisor serve exited (%v): %s", err, s.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("mcpvisor serve not listening after 30 s: %s", s.stderr)
	}
	return nil
}

// stop sends SIGTERM and waits, bounded, for a clean exit.
func (s *stoppableSidecar) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		s.exited <- err
		if err != nil {
			t.Fatalf("mcpvisor serve exited with %v after SIGTERM: %s", err, s.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("mcpvisor serve still running 30 s after SIGTERM: %s", s.stderr)
	}
}

// A command told to stop (SIGTERM) while its refresh is held at the
// provider, after the provider rotated the refresh token: the command
// waits for the answer and stores the new refresh token before it exits,
// so the next command works instead of presenting the spent one.
func TestCommandStoppedMidRefreshKeepsTheGrant(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	cfg := protectedConfig(t, as)
	data := t.TempDir()
	common := []string{"--config", cfg, "--data", data}
	signedIn(t, common)

	reached, release := make(chan struct{}, 4), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // the server's Close waits for its handlers
	as.Configure(func(o *oauthtest.ServerOptions) {
		o.HoldToken = func(grant string) {
			if grant == "refresh_token" {
				reached <- struct{}{}
				<-release
			}
		}
	})
	// The access token dies at the provider: the command's first request
	// is refused and it refreshes.
	for _, tok := range as.Tokens("access") {
		as.Revoke(tok)
	}

	cmd := scriptCmd(append([]string{"call", "mcp__web__echo", `{"n":1}`, "--log-level", "info"}, common...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	waiting := make(chan struct{}) // the command waits for its refresh
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pipe)
		signalled := false
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if !signalled && (strings.Contains(sc.Text(), "refresh in flight") || strings.Contains(sc.Text(), "refresh goes on")) {
				signalled = true
				close(waiting)
			}
		}
	}()
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-scanned
		_ = cmd.Wait()
		t.Fatalf("the command never refreshed: %s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waiting:
	case <-scanned: // it exited without waiting for the refresh
	case <-time.After(30 * time.Second):
		t.Error("the command neither exited nor waited for its refresh after SIGTERM")
	}
	free()
	<-scanned
	_ = cmd.Wait()

	callEcho(t, 2, common)
	callEcho(t, 3, common)
	checkGrant(t, as)
	if t.Failed() {
		t.Logf("the stopped command's stderr:\n%s", stderr.String())
	}
}
