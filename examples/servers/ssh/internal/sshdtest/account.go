package sshdtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// account is the throwaway login user and the client keys that log in as it.
type account struct {
	name, password, home string
	authorizedKeys       string // ~/.ssh/authorized_keys, owned by the user, 0600
	key, encKey          string // client private keys, in the harness's directory
	passphrase           string
}

// newAccount creates the user (removed with its home in t.Cleanup), sets its
// password and installs an unencrypted and an encrypted client key.
func newAccount(t testing.TB, keygen, dir string) account {
	t.Helper()
	useradd := tool(t, "useradd", "/usr/sbin/useradd", "the passwd package")
	userdel := tool(t, "userdel", "/usr/sbin/userdel", "the passwd package")
	chpasswd := tool(t, "chpasswd", "/usr/sbin/chpasswd", "the passwd package")

	a := account{
		name:       "mcpssh" + randomHex(4),
		password:   "pw-" + randomHex(12),
		passphrase: "pp-" + randomHex(12),
		key:        filepath.Join(dir, "id_ed25519"),
		encKey:     filepath.Join(dir, "id_ed25519_encrypted"),
	}
	if err := shadowTool(useradd, nil, "-m", "-s", "/bin/bash", a.name); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	t.Cleanup(func() {
		// -f: a session the test left open must not keep the account.
		if err := shadowTool(userdel, nil, "-r", "-f", a.name); err != nil && !userGone(a.name) {
			t.Errorf("sshdtest: %v", err)
		}
	})
	if err := shadowTool(chpasswd, strings.NewReader(a.name+":"+a.password+"\n")); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	u, err := user.Lookup(a.name)
	if err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	a.home = u.HomeDir

	if err := run(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "sshdtest-client", "-f", a.key); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	if err := run(keygen, "-q", "-t", "ed25519", "-N", a.passphrase, "-C", "sshdtest-client-encrypted", "-f", a.encKey); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	var keys []byte
	for _, k := range []string{a.key, a.encKey} {
		pub, err := os.ReadFile(k + ".pub")
		if err != nil {
			t.Fatalf("sshdtest: %v", err)
		}
		keys = append(keys, pub...)
	}
	sshDir := filepath.Join(a.home, ".ssh")
	a.authorizedKeys = filepath.Join(sshDir, "authorized_keys")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	if err := os.WriteFile(a.authorizedKeys, keys, 0o600); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	for _, p := range []string{sshDir, a.authorizedKeys} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatalf("sshdtest: %v", err)
		}
	}
	return a
}

// shadowMu serialises this process's useradd/userdel/chpasswd; shadowTool
// also retries when another process holds the password files' lock.
var shadowMu sync.Mutex

const (
	shadowAttempts = 50
	shadowBackoff  = 100 * time.Millisecond
)

func shadowTool(path string, stdin *strings.Reader, args ...string) error {
	shadowMu.Lock()
	defer shadowMu.Unlock()
	var err error
	for range shadowAttempts {
		cmd := exec.Command(path, args...)
		if stdin != nil {
			_, _ = stdin.Seek(0, 0)
			cmd.Stdin = stdin
		}
		var out []byte
		out, err = cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		err = fmt.Errorf("%s %s: %v: %s", filepath.Base(path), strings.Join(args, " "), err, bytes.TrimSpace(out))
		// Another test binary running in parallel holds /etc/passwd's lock:
		// back off and retry, a bounded number of times.
		if !bytes.Contains(out, []byte("lock")) {
			return err
		}
		time.Sleep(shadowBackoff)
	}
	return err
}

func userGone(name string) bool {
	_, err := user.Lookup(name)
	_, unknown := err.(user.UnknownUserError)
	return unknown
}

// SudoNopasswd lets the account run anything as anyone without a password
// (`<user> ALL=(ALL) NOPASSWD: ALL`) until t ends. It skips t (fails it when
// CI is set) when sudo is not installed.
func (d *SSHD) SudoNopasswd(t testing.TB) {
	t.Helper()
	d.sudoers(t, d.acct.name+" ALL=(ALL) NOPASSWD: ALL")
}

// SudoWithPassword lets the account run anything as anyone after typing its
// own login password (`<user> ALL=(ALL) ALL`; Debian's sudo asks the
// invoking user's password) until t ends. It skips t (fails it when CI is
// set) when sudo is not installed.
func (d *SSHD) SudoWithPassword(t testing.TB) {
	t.Helper()
	d.sudoers(t, d.acct.name+" ALL=(ALL) ALL")
}

// sudoers writes /etc/sudoers.d/mcpssh-<user> with rule, replacing an
// earlier rule of this account, and removes it when t ends. Credentials are
// never cached (timestamp_timeout=0): each sudo asks again, whatever ran
// before.
func (d *SSHD) sudoers(t testing.TB, rule string) {
	t.Helper()
	requireRoot(t, "write /etc/sudoers.d")
	tool(t, "sudo", "/usr/bin/sudo", "the sudo package")
	if fi, err := os.Stat("/etc/sudoers.d"); err != nil || !fi.IsDir() {
		unavailable(t, "sudo does not read /etc/sudoers.d on this machine (%v)", err)
	}
	// sudo ignores files whose name contains a dot; the user name has none.
	path := "/etc/sudoers.d/mcpssh-" + d.acct.name
	content := fmt.Sprintf("Defaults:%s timestamp_timeout=0\n%s\n", d.acct.name, rule)
	tmp := filepath.Join(t.TempDir(), "sudoers")
	if err := os.WriteFile(tmp, []byte(content), 0o440); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	if visudo, err := lookTool("visudo", "/usr/sbin/visudo"); err == nil {
		if err := run(visudo, "-c", "-q", "-f", tmp); err != nil {
			t.Fatalf("sshdtest: sudoers rule %q rejected: %v", content, err)
		}
	}
	if err := os.WriteFile(path, []byte(content), 0o440); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Errorf("sshdtest: %v", err)
		}
	})
}

// requireRoot skips t (fails it when CI is set) unless the process is root.
func requireRoot(t testing.TB, why string) {
	t.Helper()
	if uid := os.Geteuid(); uid != 0 {
		unavailable(t, "needs root to %s; running as uid %d", why, uid)
	}
}

// tool returns the path of a program, looked up in PATH and then at
// fallback (sbin is often outside a user's PATH). Missing, it skips t (fails
// it when CI is set) naming the package to install.
func tool(t testing.TB, name, fallback, pkg string) string {
	t.Helper()
	p, err := lookTool(name, fallback)
	if err != nil {
		unavailable(t, "%s not found in PATH or at %s (install %s)", name, fallback, pkg)
	}
	return p
}

func lookTool(name, fallback string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	if _, err := os.Stat(fallback); err != nil {
		return "", err
	}
	return fallback, nil
}

// unavailable skips t with the reason; in CI it fails t instead, since the
// CI machine installs everything these tests need (testenv.Unavailable).
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	testenv.Unavailable(t, "sshdtest: "+format, args...)
}

func run(path string, args ...string) error {
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", filepath.Base(path), strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
