package sshdtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds of the harness; a slow machine fails the test rather than hanging it.
const (
	readyTimeout = 20 * time.Second       // sshd up and answering
	stopTimeout  = 10 * time.Second       // sshd gone after SIGTERM, before SIGKILL
	drainTimeout = 10 * time.Second       // every sshd process closed its stderr
	pollInterval = 20 * time.Millisecond  // between dials of the listening socket
	dialTimeout  = 500 * time.Millisecond // one dial and banner read
	bindAttempts = 5                      // free ports tried when another process takes one first
)

// Options configure Start. The zero value is the defaults.
type Options struct {
	// Config holds extra sshd_config lines. They come before the package's
	// own, so they win: sshd keeps the first value of a keyword.
	Config []string
}

// SSHD is a running OpenSSH server and its login account. Its methods are
// safe for concurrent use.
type SSHD struct {
	t     testing.TB
	opts  Options
	sshd  string // absolute path of the sshd binary
	dir   string // config, host key, client keys
	port  int
	acct  account
	log   *logBuffer
	logW  *os.File      // write end of sshd's stderr pipe, shared by every start
	logR  *os.File      // read end, drained into log
	loged chan struct{} // closed when the drain has ended

	mu      sync.Mutex
	hostKey string // path of the current host private key
	gen     int    // host keys generated so far
	proc    *exec.Cmd
	exited  chan struct{} // closed when proc has been waited for
}

// Start starts sshd on a free port of 127.0.0.1 with a throwaway account and
// returns once the port answers with an SSH banner. Everything is undone in
// t.Cleanup: sshd stopped, the account and its home removed. It skips the
// test (fails it when CI is set) when not root or when a tool is missing.
func Start(t testing.TB, opts Options) *SSHD {
	t.Helper()
	requireRoot(t, "create a login account (useradd) and run sshd")
	sshdPath := tool(t, "sshd", "/usr/sbin/sshd", "the openssh-server package")
	keygen := tool(t, "ssh-keygen", "/usr/bin/ssh-keygen", "the openssh-client package")
	d := &SSHD{t: t, opts: opts, sshd: sshdPath, dir: t.TempDir(), log: newLogBuffer(), loged: make(chan struct{})}

	// sshd refuses to start without its privilege-separation directory,
	// which Debian creates only when the service is started by init. It
	// is shared by every sshd of the machine, so it is left in place.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}

	d.acct = newAccount(t, keygen, d.dir)
	if err := d.newHostKey(keygen); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	d.logR, d.logW = r, w
	go d.log.drain(r, d.loged)
	t.Cleanup(d.cleanup)

	for attempt := 1; ; attempt++ {
		d.port = freePort(t)
		err := d.start()
		if err == nil {
			return d
		}
		if !errors.Is(err, errPortTaken) || attempt == bindAttempts {
			t.Fatalf("sshdtest: %v", err)
		}
	}
}

// Host is the address sshd listens on, 127.0.0.1.
func (d *SSHD) Host() string { return "127.0.0.1" }

// Port is the port sshd listens on; it stays the same across RotateHostKey.
func (d *SSHD) Port() int { return d.port }

// Addr is Host:Port, for net.Dial.
func (d *SSHD) Addr() string { return net.JoinHostPort(d.Host(), strconv.Itoa(d.port)) }

// User is the throwaway login account, mcpssh followed by random hex.
func (d *SSHD) User() string { return d.acct.name }

// Password is the account's login password (and its sudo password).
func (d *SSHD) Password() string { return d.acct.password }

// KeyPath is an unencrypted ed25519 private key that may log in.
func (d *SSHD) KeyPath() string { return d.acct.key }

// EncryptedKeyPath is an ed25519 private key, encrypted with Passphrase,
// that may log in.
func (d *SSHD) EncryptedKeyPath() string { return d.acct.encKey }

// Passphrase decrypts EncryptedKeyPath.
func (d *SSHD) Passphrase() string { return d.acct.passphrase }

// HomeDir is the account's home directory on the (local) server.
func (d *SSHD) HomeDir() string { return d.acct.home }

// Log returns what sshd has logged so far.
func (d *SSHD) Log() string { return d.log.String() }

// Accepted counts the successful logins sshd has logged ("Accepted
// password for …", "Accepted publickey for …"): one per SSH connection.
func (d *SSHD) Accepted() int { return countAccepted(d.log.String()) }

// acceptedLogin matches sshd's line for a login, not VERBOSE's "Accepted
// key ED25519 … found at" that precedes it.
var acceptedLogin = regexp.MustCompile(`(?m)Accepted \S+ for \S+ from `)

func countAccepted(log string) int { return len(acceptedLogin.FindAllStringIndex(log, -1)) }

// Disconnected counts the logged-in connections that have ended: sshd logs
// "Transferred: sent …" when one closes, whichever side closed it.
func (d *SSHD) Disconnected() int { return countDisconnected(d.log.String()) }

func countDisconnected(log string) int { return strings.Count(log, "Transferred: sent ") }

// WaitDisconnected blocks until at least n logged-in connections have
// ended, or fails the test after timeout.
func (d *SSHD) WaitDisconnected(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	d.WaitLog(t, timeout, fmt.Sprintf("%d ended connections", n), func(log string) bool { return countDisconnected(log) >= n })
}

// WaitLog blocks until cond holds for sshd's log, or fails the test after
// timeout. It wakes on each new output; it does not poll.
func (d *SSHD) WaitLog(t testing.TB, timeout time.Duration, what string, cond func(log string) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := d.log.wait(ctx, cond); err != nil {
		t.Fatalf("sshdtest: waiting %v for %s: %v\nsshd log:\n%s", timeout, what, err, d.Log())
	}
}

// WaitAccepted blocks until sshd has logged at least n logins, or fails the
// test after timeout.
func (d *SSHD) WaitAccepted(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	d.WaitLog(t, timeout, fmt.Sprintf("%d accepted logins", n), func(log string) bool { return countAccepted(log) >= n })
}

// HostKeyLine is the known_hosts line of the current host key:
// "[127.0.0.1]:port ssh-ed25519 AAAA…".
func (d *SSHD) HostKeyLine() string {
	d.mu.Lock()
	pub := d.hostKey + ".pub"
	d.mu.Unlock()
	b, err := os.ReadFile(pub)
	if err != nil {
		d.t.Fatalf("sshdtest: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		d.t.Fatalf("sshdtest: malformed host public key %s: %q", pub, b)
	}
	return fmt.Sprintf("[%s]:%d %s %s", d.Host(), d.port, f[0], f[1])
}

// KnownHostsFile writes a known_hosts file holding HostKeyLine into a
// temporary directory of t and returns its path.
func (d *SSHD) KnownHostsFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(path, []byte(d.HostKeyLine()+"\n"), 0o600); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	return path
}

// RotateHostKey restarts sshd on the same port with a newly generated host
// key and returns the new HostKeyLine. Connections already open stay open
// (their sshd processes outlive the listener); new ones see the new key.
func (d *SSHD) RotateHostKey(t testing.TB) string {
	t.Helper()
	keygen := tool(t, "ssh-keygen", "/usr/bin/ssh-keygen", "the openssh-client package")
	if err := d.stop(); err != nil {
		t.Fatalf("sshdtest: stopping sshd: %v", err)
	}
	if err := d.newHostKey(keygen); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	if err := d.start(); err != nil {
		t.Fatalf("sshdtest: restarting sshd on port %d: %v", d.port, err)
	}
	return d.HostKeyLine()
}

func (d *SSHD) newHostKey(keygen string) error {
	d.mu.Lock()
	d.gen++
	path := filepath.Join(d.dir, fmt.Sprintf("host_ed25519_%d", d.gen))
	d.mu.Unlock()
	if err := run(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "sshdtest-host", "-f", path); err != nil {
		return err
	}
	d.mu.Lock()
	d.hostKey = path
	d.mu.Unlock()
	return nil
}

// config is the whole sshd_config: nothing of the system's is read.
func (d *SSHD) config() string {
	d.mu.Lock()
	hostKey := d.hostKey
	d.mu.Unlock()
	lines := append([]string(nil), d.opts.Config...)
	lines = append(lines,
		fmt.Sprintf("ListenAddress %s:%d", d.Host(), d.port),
		"HostKey "+hostKey,
		"PidFile none",
		"StrictModes no",
		"UsePAM no",
		"UseDNS no",
		"LogLevel VERBOSE",
		"PermitRootLogin no",
		"AllowUsers "+d.acct.name,
		"PasswordAuthentication yes",
		"PubkeyAuthentication yes",
		"KbdInteractiveAuthentication no",
		"AuthorizedKeysFile "+d.acct.authorizedKeys,
		"PrintMotd no",
		"PrintLastLog no",
		"Subsystem sftp internal-sftp",
	)
	return strings.Join(lines, "\n") + "\n"
}

// start starts sshd and waits until it answers on d.port.
func (d *SSHD) start() error {
	cfg := filepath.Join(d.dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(d.config()), 0o600); err != nil {
		return err
	}
	before := len(d.log.String())
	// sshd re-executes itself, so it needs its absolute path.
	cmd := exec.Command(d.sshd, "-D", "-e", "-f", cfg)
	cmd.Stdout, cmd.Stderr = d.logW, d.logW
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", d.sshd, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	d.mu.Lock()
	d.proc, d.exited = cmd, exited
	d.mu.Unlock()

	deadline := time.Now().Add(readyTimeout)
	for {
		if answersSSH(d.Addr()) {
			return nil
		}
		select {
		case <-exited:
			log := d.log.String()[before:]
			if strings.Contains(log, "Address already in use") {
				return fmt.Errorf("%w: %d", errPortTaken, d.port)
			}
			return fmt.Errorf("sshd exited (%v) before listening; its log:\n%s", cmd.ProcessState, log)
		case <-time.After(pollInterval):
		}
		if time.Now().After(deadline) {
			_ = d.stop()
			return fmt.Errorf("sshd not answering on %s after %v; its log:\n%s", d.Addr(), readyTimeout, d.log.String()[before:])
		}
	}
}

// answersSSH reports whether addr accepts a connection and sends an SSH
// banner.
func answersSSH(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(dialTimeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "SSH-2.0-")
}

// stop ends the listening sshd: SIGTERM, then SIGKILL. It returns once the
// process has been waited for.
func (d *SSHD) stop() error {
	d.mu.Lock()
	cmd, exited := d.proc, d.exited
	d.proc = nil
	d.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-exited:
		return fmt.Errorf("sshd (pid %d) ignored SIGTERM for %v", cmd.Process.Pid, stopTimeout)
	case <-time.After(stopTimeout):
		return fmt.Errorf("sshd (pid %d) survived SIGKILL", cmd.Process.Pid)
	}
}

// cleanup stops sshd and ends the log drain; the account is removed by its
// own cleanup, which runs after this one.
func (d *SSHD) cleanup() {
	if err := d.stop(); err != nil {
		d.t.Errorf("sshdtest: %v", err)
	}
	// The per-connection sshd processes hold the pipe too: the drain ends
	// when the last of them exits, which is when its client disconnects.
	d.logW.Close()
	select {
	case <-d.loged:
	case <-time.After(drainTimeout):
		d.t.Errorf("sshdtest: an sshd connection process still runs %v after sshd stopped (a client did not disconnect)", drainTimeout)
		d.logR.Close()
		<-d.loged
	}
	d.logR.Close()
	if d.t.Failed() {
		d.t.Logf("sshd log (port %d, user %s):\n%s", d.port, d.acct.name, d.Log())
	}
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
