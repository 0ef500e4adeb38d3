// Package sshdtest runs a real OpenSSH server on loopback for tests, with a
// throwaway login account, client keys and optional sudo rules:
//
//	func TestLogin(t *testing.T) {
//		d := sshdtest.Start(t, sshdtest.Options{})
//		cfg := &ssh.ClientConfig{
//			User:            d.User(),
//			Auth:            []ssh.AuthMethod{ssh.Password(d.Password())},
//			HostKeyCallback: knownhostsCallback(t, d.KnownHostsFile(t)),
//		}
//		c, err := ssh.Dial("tcp", d.Addr(), cfg)
//		…
//	}
//
// Start writes its own sshd_config (no system configuration is read), a
// temporary ed25519 host key and a per-test authorized_keys, starts
// /usr/sbin/sshd in the foreground (-D -e) on a free port of 127.0.0.1, and
// waits until the port answers with an SSH banner. The account is created
// with useradd and removed with its home (userdel -r) when the test ends, so
// sshd can log in as an ordinary user; sudo rules go in
// /etc/sudoers.d/mcpssh-<user> and are removed too.
//
// All of it needs root (a fresh CI machine runs the tests as root) and
// Debian's openssh-server and sudo packages. Without them the test, or for
// sudo only the sub-test asking for it, is skipped with the reason; with the
// environment variable CI set, it fails instead, so that CI never passes by
// skipping.
//
// sshd's log (stderr, including the per-connection processes) is kept in
// memory: Log returns it, Accepted counts the logins, WaitLog waits for a
// condition on it, and a failed test gets it attached.
package sshdtest
