package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/mcpserve"
	"golang.org/x/crypto/ssh"
)

// sshServer is the state behind the tools: the aliases file, the secret
// caches, the dialer and the connection pool. Close closes the pool.
type sshServer struct {
	cfg     config
	aliases *aliasStore
	login   *secretCache // login passwords and key passphrases
	sudo    *secretCache // sudo passwords
	dialer  *dialer
	pool    *pool
}

func newSSHServer(cfg config) *sshServer {
	s := &sshServer{
		cfg:     cfg,
		aliases: &aliasStore{path: cfg.AliasesPath},
		login:   newSecretCache(cfg.LoginTTL),
		sudo:    newSecretCache(cfg.SudoTTL),
	}
	s.dialer = newDialer(cfg, s.login)
	s.pool = newPool(cfg.PoolTTL, s.dialer.dial)
	return s
}

// Close closes every pooled connection; see pool.Close.
func (s *sshServer) Close() { s.pool.Close() }

// connect looks up the alias and returns a pooled connection to it; the
// caller must call release.
func (s *sshServer) connect(ctx context.Context, call *mcpserve.ToolCall, name string) (Alias, *conn, func(), error) {
	if name == "" {
		return Alias{}, nil, nil, fmt.Errorf("alias is required")
	}
	a, err := s.aliases.get(name)
	if err != nil {
		return Alias{}, nil, nil, err
	}
	c, release, err := s.pool.acquire(ctx, a, elicitAsker(call))
	if err != nil {
		return Alias{}, nil, nil, err
	}
	return a, c, release, nil
}

// maxOutput bounds each of a command's stdout and stderr as kept for the
// result; the rest is counted and dropped.
const maxOutput = 1 << 20

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if room >= len(p) {
		return b.buf.Write(p)
	}
	if room > 0 {
		b.buf.Write(p[:room])
	}
	b.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

func (b *cappedBuffer) String() string {
	s := b.buf.String()
	if b.dropped > 0 {
		s += fmt.Sprintf("\n[%d more bytes not shown]", b.dropped)
	}
	return s
}

// runResult is what a remote command did.
type runResult struct {
	Stdout, Stderr string
	Exit           int    // -1 when the command ended without a status
	Signal         string // the signal that killed it, if any
}

func (r runResult) failed() bool { return r.Exit != 0 }

// text renders r for a tool result: the exit status, then stdout and
// stderr under their own headers.
func (r runResult) text() string {
	var b strings.Builder
	switch {
	case r.Signal != "":
		fmt.Fprintf(&b, "exit status: %d (signal %s)\n", r.Exit, r.Signal)
	default:
		fmt.Fprintf(&b, "exit status: %d\n", r.Exit)
	}
	b.WriteString("--- stdout ---\n")
	if r.Stdout != "" {
		b.WriteString(strings.TrimSuffix(r.Stdout, "\n"))
		b.WriteByte('\n')
	}
	b.WriteString("--- stderr ---\n")
	if r.Stderr != "" {
		b.WriteString(strings.TrimSuffix(r.Stderr, "\n"))
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// runRemote runs command through the remote user's shell with stdin (nil:
// none), for at most timeout. When the time is up the command is sent
// SIGKILL and the channel closed; the output so far is returned with
// errTimeout.
func runRemote(ctx context.Context, c *conn, command string, stdin []byte, timeout time.Duration) (runResult, error) {
	sess, err := c.ssh.NewSession()
	if err != nil {
		return runResult{}, fmt.Errorf("open session: %w", err)
	}
	defer sess.Close()
	var stdout, stderr = &cappedBuffer{max: maxOutput}, &cappedBuffer{max: maxOutput}
	sess.Stdout, sess.Stderr = stdout, stderr
	if stdin != nil {
		sess.Stdin = bytes.NewReader(stdin)
	}
	if err := sess.Start(command); err != nil {
		return runResult{}, fmt.Errorf("start command: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr, stopErr error
	select {
	case waitErr = <-done:
	case <-timer.C:
		stopErr = fmt.Errorf("command %w after %s", errTimeout, timeout)
	case <-ctx.Done():
		stopErr = ctx.Err()
	}
	if stopErr != nil {
		_ = sess.Signal(ssh.SIGKILL)
		sess.Close()
		<-done // Wait returns once the channel is closed
		return runResult{Stdout: stdout.String(), Stderr: stderr.String(), Exit: -1}, stopErr
	}
	res := runResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exitErr):
		res.Exit = exitErr.ExitStatus()
		res.Signal = exitErr.Signal()
		if res.Signal != "" && res.Exit == 0 {
			res.Exit = -1
		}
	case errors.As(waitErr, &missing):
		res.Exit = -1
	default:
		return res, fmt.Errorf("command: %w", waitErr)
	}
	return res, nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sudoWrap returns the command line that runs command (a shell command)
// under sudo as the alias's sudo method says, and whether the sudo
// password must be fed on stdin.
func sudoWrap(a Alias, command, user string) (string, bool, error) {
	userOpt := ""
	if user != "" {
		userOpt = " -u " + shellQuote(user)
	}
	switch a.Sudo {
	case sudoNopasswd:
		return "sudo -n" + userOpt + " -- sh -c " + shellQuote(command), false, nil
	case sudoPrompt:
		// -k: always read the password, never a cached sudo timestamp, so
		// the password is consumed by sudo and not left on the command's
		// stdin; the command's stdin is /dev/null all the same, in case a
		// NOPASSWD rule means sudo reads nothing.
		return "sudo -S -k -p ''" + userOpt + " -- sh -c " + shellQuote("exec </dev/null; "+command), true, nil
	default:
		return "", false, fmt.Errorf("%w: alias %q; re-add it with sudo=prompt or sudo=nopasswd to allow sudo", errSudoDisabled, a.Name)
	}
}

func sudoKey(a Alias) string { return "sudo:" + a.Name }

// run runs command on c, under sudo (as sudoUser, if set) when asked.
func (s *sshServer) run(ctx context.Context, call *mcpserve.ToolCall, a Alias, c *conn, command string, sudo bool, sudoUser string, timeout time.Duration) (runResult, error) {
	if !sudo && sudoUser == "" {
		return runRemote(ctx, c, command, nil, timeout)
	}
	line, needsPassword, err := sudoWrap(a, command, sudoUser)
	if err != nil {
		return runResult{}, err
	}
	var stdin []byte
	if needsPassword {
		ask := elicitAsker(call)
		pw, err := s.sudo.getOrAsk(ctx, sudoKey(a), func(ctx context.Context) (secret, error) {
			return ask(ctx,
				fmt.Sprintf("alias %q needs the sudo password for %s", a.Name, a.userHost()),
				"sudo password for "+a.userHost(),
				"use a client with elicitation, or re-add the alias with sudo=nopasswd (with a NOPASSWD sudoers rule)")
		})
		if err != nil {
			return runResult{}, err
		}
		stdin = []byte(pw.reveal() + "\n")
	}
	res, err := runRemote(ctx, c, line, stdin, timeout)
	if err != nil {
		return res, err
	}
	if res.failed() {
		switch {
		case a.Sudo == sudoNopasswd && strings.Contains(res.Stderr, "a password is required"):
			return res, errSudoNeedsPassword
		case needsPassword && (strings.Contains(res.Stderr, "incorrect password") || strings.Contains(res.Stderr, "Sorry, try again")):
			s.sudo.drop(sudoKey(a))
			return res, fmt.Errorf("%w for %s: the password was wrong and has been forgotten; the next call asks again", errSudoWrongPassword, a.userHost())
		}
	}
	return res, nil
}
