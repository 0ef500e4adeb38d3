package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
)

// openPTY opens a pseudo-terminal pair from /dev/ptmx: what a terminal
// emulator or sshd gives a shell. Both ends close with the test.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("the pty's number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty's terminal: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// Only a terminal is a terminal: /dev/null, the stdin of cron, CI and
// systemd runs, is a character device but no one is there to sign in.
func TestTerminalSession(t *testing.T) {
	_, tty := openPTY(t)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if fi, err := null.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is not a character device here (%v): the case this test is about does not arise", os.DevNull, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, tc := range []struct {
		name          string
		stdin, stderr *os.File
		want          bool
	}{
		{"a terminal", tty, tty, true},
		{"stdin /dev/null", null, tty, false},
		{"stdin a pipe", r, tty, false},
		{"stderr a file", tty, file, false},
		{"stderr a pipe", tty, w, false},
		{"stderr /dev/null", tty, null, false},
	} {
		if got := terminalSession(tc.stdin, tc.stderr); got != tc.want {
			t.Errorf("%s: terminalSession = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A command run with stdin from /dev/null and no $BROWSER, as cron, CI or
// systemd run it, that meets a server needing a sign-in fails at once
// (no sign-in URL, no wait for a redirect) and names the command that
// signs in, with the files it was given.
func TestNonInteractiveNeedsAuthFailsFast(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	cfg := protectedConfig(t, as)
	data := t.TempDir()
	want := "mcpvisor auth login web --config " + cfg + " --data " + data
	for _, args := range [][]string{
		{"call", "mcp__web__echo", `{}`},
		{"tools"}, // --wait is 30s: it must not be spent on a sign-in no one does
		{"status"},
	} {
		// Killed after a minute: a command that waits for a sign-in
		// waits ten.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, cliBin, append(args, "--config", cfg, "--data", data)...)
		cmd.Env = withoutEnv("BROWSER", "MCPVISOR_SECRET_KEY") // and stdin is /dev/null
		start := time.Now()
		_, stderr, code := runCmd(cmd)
		took := time.Since(start)
		cancel()
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 naming %q", args[0], code, stderr, want)
		}
		if strings.Contains(stderr, "Open this URL") || strings.Contains(stderr, "/mcpvisor-sign-in/") {
			t.Errorf("%s offered a sign-in with no one to do it: %q", args[0], stderr)
		}
		if took > 15*time.Second {
			t.Errorf("%s took %v to fail", args[0], took.Round(time.Second))
		}
	}
	if n := len(as.Requests("authorize")); n != 0 {
		t.Errorf("%d authorization requests, want none", n)
	}
}

// withoutEnv is the environment without the variables names.
func withoutEnv(names ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			env = append(env, kv)
		}
	}
	return env
}

// In a terminal, with no $BROWSER and no xdg-open, call prints the
// sign-in URL and waits for it; the person follows it, and the call goes
// through.
func TestCallInTerminalSignsIn(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	cfg := protectedConfig(t, as)
	master, tty := openPTY(t)
	cmd := exec.Command(cliBin, "call", "mcp__web__echo", `{"a":1}`, "--config", cfg, "--data", t.TempDir())
	cmd.Env = []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir()} // no $BROWSER, no xdg-open
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the child's now: the master reads EOF (EIO) once it exits
	signInURL := regexp.MustCompile(`http://\S+/mcpvisor-sign-in/[^\s]+`)
	urls := make(chan string, 1)
	out := &syncBuffer{}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(master)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			out.Write([]byte(line + "\n"))
			if u := signInURL.FindString(line); u != "" {
				select {
				case urls <- u:
				default:
				}
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case u := <-urls:
		resp, err := http.Get(u) // the person's browser, to the redirect back
		if err != nil {
			t.Fatalf("following the sign-in URL: %v", err)
		}
		resp.Body.Close()
	case err := <-exited:
		<-read
		t.Fatalf("call in a terminal exited (%v) without offering a sign-in: %q", err, out)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("no sign-in URL in the terminal: %q", out)
	}
	select {
	case err := <-exited:
		<-read
		if err != nil || !strings.Contains(out.String(), `"a": 1`) {
			t.Fatalf("call after signing in: %v; terminal %q", err, out)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("call did not finish after the sign-in: %q", out)
	}
}
