package sshdtest_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/mcpvisor/mcpvisor/examples/servers/ssh/internal/sshdtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// dial logs in with auth, checking the host key against knownHosts.
func dial(t *testing.T, d *sshdtest.SSHD, knownHosts string, auth ssh.AuthMethod) (*ssh.Client, error) {
	t.Helper()
	cb, err := knownhosts.New(knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	return ssh.Dial("tcp", d.Addr(), &ssh.ClientConfig{User: d.User(), Auth: []ssh.AuthMethod{auth}, HostKeyCallback: cb, Timeout: 10 * time.Second})
}

func mustDial(t *testing.T, d *sshdtest.SSHD, knownHosts string, auth ssh.AuthMethod) *ssh.Client {
	t.Helper()
	c, err := dial(t, d, knownHosts, auth)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// output runs cmd on c with stdin and returns its stdout, stderr and error.
func output(t *testing.T, c *ssh.Client, cmd, stdin string) (string, string, error) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr, s.Stdin = &stdout, &stderr, strings.NewReader(stdin)
	err = s.Run(cmd)
	return stdout.String(), stderr.String(), err
}

func keySigner(t *testing.T, path, passphrase string) ssh.Signer {
	t.Helper()
	pem, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s ssh.Signer
	if passphrase == "" {
		s, err = ssh.ParsePrivateKey(pem)
	} else {
		s, err = ssh.ParsePrivateKeyWithPassphrase(pem, []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every way in logs in as the throwaway account, and each login is one
// "Accepted" line of sshd's log.
func TestLogin(t *testing.T) {
	d := sshdtest.Start(t, sshdtest.Options{})
	kh := d.KnownHostsFile(t)
	if want := "[127.0.0.1]:"; !strings.HasPrefix(d.HostKeyLine(), want) || !strings.Contains(d.HostKeyLine(), " ssh-ed25519 AAAA") {
		t.Fatalf("HostKeyLine %q", d.HostKeyLine())
	}
	pem, err := os.ReadFile(d.EncryptedKeyPath())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ssh.ParsePrivateKey(pem); !errors.As(err, new(*ssh.PassphraseMissingError)) {
		t.Fatalf("encrypted key parsed without its passphrase: %v", err)
	}
	methods := []struct {
		name string
		auth ssh.AuthMethod
	}{
		{"key", ssh.PublicKeys(keySigner(t, d.KeyPath(), ""))},
		{"encrypted key", ssh.PublicKeys(keySigner(t, d.EncryptedKeyPath(), d.Passphrase()))},
		{"password", ssh.Password(d.Password())},
	}
	for i, m := range methods {
		t.Run(m.name, func(t *testing.T) {
			c := mustDial(t, d, kh, m.auth)
			out, _, err := output(t, c, "id -un", "")
			if err != nil || strings.TrimSpace(out) != d.User() {
				t.Fatalf("id -un = %q, %v; want %s", out, err, d.User())
			}
			if got := d.Accepted(); got != i+1 {
				t.Fatalf("Accepted() = %d after %d logins; log:\n%s", got, i+1, d.Log())
			}
			c.Close()
			d.WaitDisconnected(t, i+1, 10*time.Second)
		})
	}
	t.Run("sftp subsystem", func(t *testing.T) {
		c := mustDial(t, d, kh, ssh.Password(d.Password()))
		s, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.RequestSubsystem("sftp"); err != nil {
			t.Fatalf("sftp subsystem: %v", err)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		if c, err := dial(t, d, kh, ssh.Password("not-"+d.Password())); err == nil {
			c.Close()
			t.Fatal("logged in with a wrong password")
		}
	})
}

// A rotated host key keeps the port; the old known_hosts line is refused
// as a changed key, the new one accepted.
func TestRotateHostKey(t *testing.T) {
	d := sshdtest.Start(t, sshdtest.Options{})
	oldKH, oldLine, port := d.KnownHostsFile(t), d.HostKeyLine(), d.Port()
	newLine := d.RotateHostKey(t)
	if newLine == oldLine || d.Port() != port {
		t.Fatalf("after rotation: line %q (was %q), port %d (was %d)", newLine, oldLine, d.Port(), port)
	}
	_, err := dial(t, d, oldKH, ssh.Password(d.Password()))
	var kerr *knownhosts.KeyError
	if !errors.As(err, &kerr) || len(kerr.Want) == 0 {
		t.Fatalf("dial with the old key: %v, want a knownhosts.KeyError naming the old key", err)
	}
	mustDial(t, d, d.KnownHostsFile(t), ssh.Password(d.Password()))
}

// The sudo rules behave as the SSH server's sudo modes expect: NOPASSWD
// runs `sudo -n`; a password rule fails `sudo -n` with "a password is
// required" and takes the login password on stdin with `sudo -S`.
func TestSudo(t *testing.T) {
	d := sshdtest.Start(t, sshdtest.Options{})
	kh := d.KnownHostsFile(t)
	c := mustDial(t, d, kh, ssh.Password(d.Password()))

	if out, _, err := output(t, c, "sudo -n id -u", ""); err == nil {
		t.Fatalf("sudo -n without a rule succeeded: %q", out)
	}

	t.Run("nopasswd", func(t *testing.T) {
		d.SudoNopasswd(t)
		out, stderr, err := output(t, c, "sudo -n id -u", "")
		if err != nil || strings.TrimSpace(out) != "0" {
			t.Fatalf("sudo -n id -u = %q, %v: %s", out, err, stderr)
		}
	})
	t.Run("password", func(t *testing.T) {
		d.SudoWithPassword(t)
		_, stderr, err := output(t, c, "sudo -n id -u", "")
		if err == nil || !strings.Contains(stderr, "a password is required") {
			t.Fatalf("sudo -n with a password rule: %v, stderr %q; want a failure saying a password is required", err, stderr)
		}
		out, stderr, err := output(t, c, "sudo -S -p '' id -u", d.Password()+"\n")
		if err != nil || strings.TrimSpace(out) != "0" {
			t.Fatalf("sudo -S id -u = %q, %v: %s", out, err, stderr)
		}
		if _, _, err := output(t, c, "sudo -S -p '' id -u", "not-"+d.Password()+"\n"); err == nil {
			t.Fatal("sudo -S accepted a wrong password")
		}
	})
}

// WaitLog wakes on sshd's output: a failed login is logged.
func TestWaitLog(t *testing.T) {
	d := sshdtest.Start(t, sshdtest.Options{})
	if c, err := net.Dial("tcp", d.Addr()); err == nil {
		c.Close()
	}
	if _, err := dial(t, d, d.KnownHostsFile(t), ssh.Password("wrong")); err == nil {
		t.Fatal("logged in with a wrong password")
	}
	d.WaitLog(t, 10*time.Second, "a failed password", func(log string) bool { return strings.Contains(log, "Failed password for "+d.User()) })
	if d.Accepted() != 0 {
		t.Fatalf("Accepted() = %d with no login", d.Accepted())
	}
}
