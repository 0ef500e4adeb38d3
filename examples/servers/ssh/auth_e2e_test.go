package main_test

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/mcpvisor/mcpvisor/examples/servers/ssh/internal/sshdtest"
)

// logWait bounds a wait for sshd to log something the server caused.
const logWait = 20 * time.Second

// An unencrypted key_path logs in without asking anything.
func TestKeyLogin(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.addAlias("box", nil)
	if got := strings.TrimSpace(stdout(t, r.exec("box", "id -un"))); got != r.sshd.User() {
		t.Fatalf("id -un = %q, want %s", got, r.sshd.User())
	}
	if n := r.asker.count(); n != 0 {
		t.Fatalf("%d elicitations for a key login, want none", n)
	}
	if !strings.Contains(r.sshd.Log(), "Accepted publickey for "+r.sshd.User()) {
		t.Fatalf("sshd logged no public key login:\n%s", r.sshd.Log())
	}
}

// A password alias asks the password once, through a masked form field, and
// the cached password serves the next connection too.
func TestPasswordLoginAskedOnceThenCached(t *testing.T) {
	t.Parallel()
	// The pool is off (a TTL of 0 closes each connection after its call),
	// so the second call logs in again: with the cached password.
	r := newRig(t, rigOptions{env: map[string]string{"SSH_MCP_POOL_TTL": "0"}})
	r.addAlias("box", map[string]any{"auth": "password", "key_path": nil})
	r.asker.reply(r.sshd.Password())
	for range 2 {
		if got := strings.TrimSpace(stdout(t, r.exec("box", "id -un"))); got != r.sshd.User() {
			t.Fatalf("id -un = %q, want %s", got, r.sshd.User())
		}
	}
	if n := r.asker.count(); n != 1 {
		t.Fatalf("%d elicitations for two calls, want 1 (the password is cached)", n)
	}
	r.sshd.WaitAccepted(t, 2, logWait)
	if n := strings.Count(r.sshd.Log(), "Accepted password for "+r.sshd.User()); n != 2 {
		t.Fatalf("%d password logins, want 2 (one per call, the pool being off):\n%s", n, r.sshd.Log())
	}
	if req := r.asker.requests()[0]; !strings.Contains(req.Message, r.sshd.User()) || req.Server != serverName {
		t.Errorf("elicitation %+v: want it to name the account and come from %q", req, serverName)
	}
}

// A rejected password is forgotten: the call fails, and the next one asks
// again and logs in.
func TestWrongPasswordIsAskedAgain(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.addAlias("box", map[string]any{"auth": "password", "key_path": nil})
	r.asker.reply("not-" + r.sshd.Password())
	r.fails("exec", map[string]any{"alias": "box", "command": "id -un"}, "authentication failed")
	if n := r.asker.count(); n != 1 {
		t.Fatalf("%d elicitations after a failed login, want 1", n)
	}
	r.asker.reply(r.sshd.Password())
	if got := strings.TrimSpace(stdout(t, r.exec("box", "id -un"))); got != r.sshd.User() {
		t.Fatalf("id -un = %q, want %s", got, r.sshd.User())
	}
	if n := r.asker.count(); n != 2 {
		t.Fatalf("%d elicitations, want 2 (the wrong password was dropped)", n)
	}
}

// Declining the password form fails the call without a login; the next
// call asks again.
func TestPasswordDeclined(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.addAlias("box", map[string]any{"auth": "password", "key_path": nil})
	r.asker.decline()
	r.fails("exec", map[string]any{"alias": "box", "command": "true"}, "cancelled")
	if n := r.sshd.Accepted(); n != 0 {
		t.Fatalf("%d logins without a password", n)
	}
	r.asker.reply(r.sshd.Password())
	r.exec("box", "true")
	if n := r.asker.count(); n != 2 {
		t.Fatalf("%d elicitations, want 2", n)
	}
}

// An encrypted key_path's passphrase is asked lazily, once, and cached; a
// wrong one is forgotten and asked again.
func TestEncryptedKeyPassphraseElicited(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{env: map[string]string{"SSH_MCP_POOL_TTL": "0"}})
	r.addAlias("box", map[string]any{"key_path": r.sshd.EncryptedKeyPath()})
	if n := r.asker.count(); n != 0 {
		t.Fatalf("add_alias asked %d times: the passphrase is asked only when a connection needs it", n)
	}
	r.asker.reply("not-" + r.sshd.Passphrase())
	r.fails("exec", map[string]any{"alias": "box", "command": "true"}, "passphrase")
	r.asker.reply(r.sshd.Passphrase())
	for range 2 {
		if got := strings.TrimSpace(stdout(t, r.exec("box", "id -un"))); got != r.sshd.User() {
			t.Fatalf("id -un = %q, want %s", got, r.sshd.User())
		}
	}
	if n := r.asker.count(); n != 2 {
		t.Fatalf("%d elicitations, want 2 (a wrong passphrase, then the right one, cached for the second login)", n)
	}
	if n := strings.Count(r.sshd.Log(), "Accepted publickey for "+r.sshd.User()); n != 2 {
		t.Fatalf("%d key logins, want 2:\n%s", n, r.sshd.Log())
	}
}

// SSH_MCP_KEY_PASSPHRASE opens an encrypted key with no elicitation.
func TestEncryptedKeyPassphraseFromEnv(t *testing.T) {
	t.Parallel()
	d := sshdtest.Start(t, sshdtest.Options{})
	// The configuration names the passphrase by reference, as a secret is
	// configured for mcpvisor: the literal never reaches its files.
	r := newRig(t, rigOptions{sshd: d,
		env:     map[string]string{"SSH_MCP_KEY_PASSPHRASE": "${MCPSSH_TEST_PASSPHRASE}"},
		hostEnv: map[string]string{"MCPSSH_TEST_PASSPHRASE": d.Passphrase()},
	})
	r.addAlias("box", map[string]any{"key_path": d.EncryptedKeyPath()})
	if got := strings.TrimSpace(stdout(t, r.exec("box", "id -un"))); got != d.User() {
		t.Fatalf("id -un = %q, want %s", got, d.User())
	}
	if n := r.asker.count(); n != 0 {
		t.Fatalf("%d elicitations with SSH_MCP_KEY_PASSPHRASE set, want none", n)
	}
}

// An unknown host is refused unless the alias accepts new host keys; then
// its key is added to known_hosts and later connections check against it.
func TestUnknownHost(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{unknownHost: true})
	r.addAlias("strict", nil)
	r.fails("exec", map[string]any{"alias": "strict", "command": "true"}, "unknown host key", "accept_new_host_key")
	if b, _ := os.ReadFile(r.knownHosts); len(b) != 0 {
		t.Fatalf("known_hosts gained %q from a refused host", b)
	}
	if n := r.sshd.Accepted(); n != 0 {
		t.Fatalf("%d logins to an unknown host", n)
	}

	r.addAlias("trusting", map[string]any{"accept_new_host_key": true})
	r.exec("trusting", "true")
	b, err := os.ReadFile(r.knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(r.sshd.HostKeyLine())
	if !strings.Contains(string(b), want[1]+" "+want[2]) {
		t.Fatalf("known_hosts %q lacks the host key %s %s", b, want[1], want[2])
	}
	checkKnownHost(t, r.knownHosts, r.sshd)
	if fi, err := os.Stat(r.knownHosts); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("known_hosts mode %v (%v), want no access for group and others", fi.Mode(), err)
	}
	// Known now: the strict alias connects too.
	r.exec("strict", "true")
	if n := strings.Count(string(mustRead(t, r.knownHosts)), want[2]); n != 1 {
		t.Fatalf("known_hosts holds the key %d times, want once:\n%s", n, mustRead(t, r.knownHosts))
	}
}

// checkKnownHost verifies with x/crypto's own parser that known_hosts
// accepts d's current host key for d's address.
func checkKnownHost(t *testing.T, path string, d *sshdtest.SSHD) {
	t.Helper()
	cb, err := knownhosts.New(path)
	if err != nil {
		t.Fatalf("known_hosts does not parse: %v", err)
	}
	fields := strings.Fields(d.HostKeyLine())
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(fields[1] + " " + fields[2]))
	if err != nil {
		t.Fatal(err)
	}
	if err := cb(d.Addr(), &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: d.Port()}, key); err != nil {
		t.Fatalf("known_hosts refuses the host key: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A changed host key is refused, even for an alias that accepts new keys,
// and known_hosts is left alone.
func TestChangedHostKeyRefused(t *testing.T) {
	t.Parallel()
	d := sshdtest.Start(t, sshdtest.Options{})
	r := newRig(t, rigOptions{sshd: d}) // known_hosts has the first key
	before := mustRead(t, r.knownHosts)
	d.RotateHostKey(t)
	r.addAlias("box", nil)
	r.addAlias("trusting", map[string]any{"accept_new_host_key": true})
	for _, alias := range []string{"box", "trusting"} {
		r.fails("exec", map[string]any{"alias": alias, "command": "true"}, "host key changed")
	}
	if after := mustRead(t, r.knownHosts); string(after) != string(before) {
		t.Fatalf("known_hosts changed from %q to %q", before, after)
	}
	if n := d.Accepted(); n != 0 {
		t.Fatalf("%d logins to a host with a changed key", n)
	}
}

// Calls on one alias share one SSH connection while the pool keeps it.
func TestPoolReusesConnection(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.addAlias("box", nil)
	r.exec("box", "true")
	r.ok("read_file", map[string]any{"alias": "box", "path": r.writeRemote("f.txt", "x\n")})
	r.exec("box", "true")
	if n := r.sshd.Accepted(); n != 1 {
		t.Fatalf("%d logins for three calls, want 1 (pooled):\n%s", n, r.sshd.Log())
	}
	if n := r.sshd.Disconnected(); n != 0 {
		t.Fatalf("%d connections ended while pooled", n)
	}
}

// With SSH_MCP_POOL_TTL=1 an idle connection is closed once the TTL has
// passed, and the next call logs in again.
func TestPoolEvictsIdleConnection(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{env: map[string]string{"SSH_MCP_POOL_TTL": "1"}})
	r.addAlias("box", nil)
	r.exec("box", "true")
	// The server closes the idle connection on its own (its janitor); sshd
	// logs the end of the session. Waiting for that log line is the
	// condition; the TTL itself is wall-clock time.
	r.sshd.WaitDisconnected(t, 1, logWait)
	r.exec("box", "true")
	r.sshd.WaitAccepted(t, 2, logWait)
	if n := r.sshd.Accepted(); n != 2 {
		t.Fatalf("%d logins, want 2 (one before the eviction, one after)", n)
	}
}

// stdout returns the "--- stdout ---" section of an exec result.
func stdout(t *testing.T, result string) string {
	t.Helper()
	_, rest, ok := strings.Cut(result, "--- stdout ---\n")
	if !ok {
		t.Fatalf("exec result without a stdout section: %q", result)
	}
	out, _, ok := strings.Cut(rest, "--- stderr ---")
	if !ok {
		t.Fatalf("exec result without a stderr section: %q", result)
	}
	return out
}
