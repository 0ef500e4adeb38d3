package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// dialTimeout bounds the TCP connect plus the SSH handshake and login.
const dialTimeout = 15 * time.Second

// defaultKeys are tried, in order, for auth "key" without a key_path, after
// the ssh-agent.
var defaultKeys = []string{"id_ed25519", "id_ecdsa", "id_rsa"}

// dialer opens authenticated SSH connections for aliases: it checks host
// keys against the known_hosts file and signs in with a key, the agent or an
// elicited password. Safe for concurrent use.
type dialer struct {
	cfg   config
	login *secretCache // login passwords and key passphrases

	khMu     sync.Mutex    // serialises reading and appending known_hosts
	probeKey ssh.PublicKey // a key in no known_hosts file, to ask which keys are known
}

func newDialer(cfg config, login *secretCache) *dialer {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	probe, err := ssh.NewPublicKey(pub)
	if err != nil {
		panic(err)
	}
	return &dialer{cfg: cfg, login: login, probeKey: probe}
}

func loginKey(a Alias) string { return "login:" + a.Name }

func passphraseKey(path string) string { return "passphrase:" + path }

func isAuthFailure(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unable to authenticate")
}

// dial connects to a and signs in. ask obtains secrets the cache lacks.
func (d *dialer) dial(ctx context.Context, a Alias, ask asker) (*ssh.Client, error) {
	if a.Auth == authPassword {
		return d.dialPassword(ctx, a, ask)
	}
	return d.dialKey(ctx, a, ask)
}

func (d *dialer) dialPassword(ctx context.Context, a Alias, ask asker) (*ssh.Client, error) {
	key := loginKey(a)
	pw, err := d.login.getOrAsk(ctx, key, func(ctx context.Context) (secret, error) {
		return ask(ctx,
			fmt.Sprintf("alias %q needs the login password for %s", a.Name, a.userHost()),
			"password for "+a.userHost(),
			"use a client with elicitation, or re-add the alias with auth=key")
	})
	if err != nil {
		return nil, err
	}
	answer := func(name, instruction string, questions []string, echos []bool) ([]string, error) {
		answers := make([]string, len(questions))
		for i := range questions {
			if !echos[i] {
				answers[i] = pw.reveal()
			}
		}
		return answers, nil
	}
	c, err := d.connect(ctx, a, []ssh.AuthMethod{ssh.Password(pw.reveal()), ssh.KeyboardInteractive(answer)})
	if isAuthFailure(err) {
		d.login.drop(key)
		return nil, fmt.Errorf("%w for %s: the password was rejected and forgotten; the next call asks again", errAuthFailed, a.target())
	}
	return c, err
}

func (d *dialer) dialKey(ctx context.Context, a Alias, ask asker) (*ssh.Client, error) {
	if a.KeyPath != "" {
		pem, err := os.ReadFile(a.KeyPath)
		if err != nil {
			return nil, fmt.Errorf("read key_path: %w", err)
		}
		signer, err := ssh.ParsePrivateKey(pem)
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			signer, err = d.decrypt(ctx, a, a.KeyPath, [][]byte{pem}, ask)
		} else if err != nil {
			return nil, fmt.Errorf("parse key %s: %w", a.KeyPath, err)
		}
		if err != nil {
			return nil, err
		}
		c, err := d.connect(ctx, a, []ssh.AuthMethod{ssh.PublicKeys(signer)})
		if isAuthFailure(err) {
			d.login.drop(passphraseKey(a.KeyPath))
			return nil, fmt.Errorf("%w for %s: the server rejected key %s", errAuthFailed, a.target(), a.KeyPath)
		}
		return c, err
	}

	var signers []ssh.Signer
	var tried []string
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		if conn, err := net.DialTimeout("unix", sock, 2*time.Second); err == nil {
			defer conn.Close() // the agent signs during the handshake
			if s, err := agent.NewClient(conn).Signers(); err == nil && len(s) > 0 {
				signers = append(signers, s...)
				tried = append(tried, "ssh-agent")
			}
		}
	}
	var encrypted [][]byte
	var encryptedPaths []string
	for _, name := range defaultKeys {
		path := filepath.Join(d.cfg.Home, ".ssh", name)
		pem, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s, err := ssh.ParsePrivateKey(pem)
		var missing *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &missing):
			encrypted = append(encrypted, pem)
			encryptedPaths = append(encryptedPaths, path)
		case err == nil:
			signers = append(signers, s)
			tried = append(tried, path)
		}
	}
	if len(signers) == 0 && len(encrypted) == 0 {
		return nil, fmt.Errorf("%w for %s: no key to offer (no ssh-agent at SSH_AUTH_SOCK, none of ~/.ssh/%s); set key_path, or use auth=password",
			errAuthFailed, a.target(), strings.Join(defaultKeys, ", "))
	}
	if len(signers) > 0 {
		c, err := d.connect(ctx, a, []ssh.AuthMethod{ssh.PublicKeys(signers...)})
		if !isAuthFailure(err) || len(encrypted) == 0 {
			if isAuthFailure(err) {
				return nil, fmt.Errorf("%w for %s: the server accepted none of the keys offered (%s)", errAuthFailed, a.target(), strings.Join(tried, ", "))
			}
			return c, err
		}
	}
	// Only now, with the unencrypted keys refused or absent, is the
	// passphrase of an encrypted default key asked for.
	s, err := d.decrypt(ctx, a, encryptedPaths[0], encrypted, ask)
	if err != nil {
		return nil, err
	}
	c, err := d.connect(ctx, a, []ssh.AuthMethod{ssh.PublicKeys(append(signers, s)...)})
	if isAuthFailure(err) {
		d.login.drop(passphraseKey(encryptedPaths[0]))
		return nil, fmt.Errorf("%w for %s: the server accepted none of the keys offered", errAuthFailed, a.target())
	}
	return c, err
}

// decrypt parses the first of pems that the passphrase opens; the
// passphrase is SSH_MCP_KEY_PASSPHRASE, else the cached one for path, else
// asked. A wrong elicited passphrase is forgotten.
func (d *dialer) decrypt(ctx context.Context, a Alias, path string, pems [][]byte, ask asker) (ssh.Signer, error) {
	pass := d.cfg.KeyPassphrase
	fromEnv := pass != nil
	key := passphraseKey(path)
	if !fromEnv {
		p, err := d.login.getOrAsk(ctx, key, func(ctx context.Context) (secret, error) {
			return ask(ctx,
				fmt.Sprintf("alias %q needs the passphrase of key %s", a.Name, path),
				"passphrase for "+filepath.Base(path),
				"set "+envKeyPassphrase+", or use an unencrypted key or ssh-agent")
		})
		if err != nil {
			return nil, err
		}
		pass = &p
	}
	for _, pem := range pems {
		s, err := ssh.ParsePrivateKeyWithPassphrase(pem, []byte(pass.reveal()))
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, x509.IncorrectPasswordError) {
			return nil, fmt.Errorf("parse key %s: %w", path, err)
		}
	}
	if fromEnv {
		return nil, fmt.Errorf("%w: %s does not open key %s", errAuthFailed, envKeyPassphrase, path)
	}
	d.login.drop(key)
	return nil, fmt.Errorf("%w: wrong passphrase for key %s; it was forgotten, the next call asks again", errAuthFailed, path)
}

// connect dials a, checks its host key and authenticates with methods. The
// whole exchange is bounded by dialTimeout and ctx.
func (d *dialer) connect(ctx context.Context, a Alias, methods []ssh.AuthMethod) (*ssh.Client, error) {
	// The callback runs on the handshake's goroutine; its error is kept to
	// be returned as is rather than inside "ssh: handshake failed".
	var hostKeyMu sync.Mutex
	var hostKeyErr error
	check := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := d.checkHostKey(a, hostname, remote, key)
		hostKeyMu.Lock()
		hostKeyErr = err
		hostKeyMu.Unlock()
		return err
	}
	cfg := &ssh.ClientConfig{
		User:              a.User,
		Auth:              methods,
		HostKeyCallback:   check,
		HostKeyAlgorithms: d.knownAlgorithms(a.addr()),
		Timeout:           dialTimeout,
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext(dctx, "tcp", a.addr())
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", a.addr(), err)
	}
	stop := context.AfterFunc(dctx, func() { conn.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(conn, a.addr(), cfg)
	if !stop() {
		if err == nil {
			sc.Close()
		}
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("connect to %s: %w after %s", a.addr(), errTimeout, dialTimeout)
	}
	if err != nil {
		conn.Close()
		hostKeyMu.Lock()
		hkErr := hostKeyErr
		hostKeyMu.Unlock()
		if hkErr != nil {
			return nil, hkErr
		}
		return nil, fmt.Errorf("ssh to %s: %w", a.target(), err)
	}
	return ssh.NewClient(sc, chans, reqs), nil
}

// loadKnownHosts returns the known_hosts callback, or nil when the file
// does not exist. The caller holds d.khMu.
func (d *dialer) loadKnownHosts() (ssh.HostKeyCallback, error) {
	if _, err := os.Stat(d.cfg.KnownHostsPath); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	kh, err := knownhosts.New(d.cfg.KnownHostsPath)
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	return kh, nil
}

// knownAlgorithms lists the host key algorithms of the keys known_hosts
// holds for addr, so the server is asked for a key we can check rather than
// one of another type (which would look like a changed key). Nil when none
// is known.
func (d *dialer) knownAlgorithms(addr string) []string {
	d.khMu.Lock()
	defer d.khMu.Unlock()
	kh, err := d.loadKnownHosts()
	if kh == nil || err != nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if !errors.As(kh(addr, &net.TCPAddr{IP: net.IPv4zero}, d.probeKey), &ke) {
		return nil
	}
	var algos []string
	for _, k := range ke.Want {
		switch t := k.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			algos = append(algos, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			algos = append(algos, t)
		}
	}
	return algos
}

// checkHostKey accepts a key known_hosts lists for hostname; adds an unknown
// host's key when the alias allows it; and refuses a changed key always.
func (d *dialer) checkHostKey(a Alias, hostname string, remote net.Addr, key ssh.PublicKey) error {
	d.khMu.Lock()
	defer d.khMu.Unlock()
	path := d.cfg.KnownHostsPath
	fp := key.Type() + " " + ssh.FingerprintSHA256(key)
	kh, err := d.loadKnownHosts()
	if err != nil {
		return err
	}
	if kh != nil {
		if _, ok := remote.(*net.TCPAddr); !ok {
			remote = &net.TCPAddr{IP: net.IPv4zero}
		}
		err := kh(hostname, remote, key)
		var ke *knownhosts.KeyError
		var revoked *knownhosts.RevokedError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &revoked):
			return fmt.Errorf("%w for %s: the server's key %s is marked revoked in %s", errHostKeyChanged, hostname, fp, revoked.Revoked.Filename)
		case errors.As(err, &ke) && len(ke.Want) > 0:
			w := ke.Want[0]
			return fmt.Errorf("%w for %s: the server offered %s, but %s line %d has %s %s; if the host was reinstalled, remove the old key (ssh-keygen -f %s -R '%s') and connect again",
				errHostKeyChanged, hostname, fp, w.Filename, w.Line, w.Key.Type(), ssh.FingerprintSHA256(w.Key), w.Filename, knownhosts.Normalize(hostname))
		case !errors.As(err, &ke):
			return fmt.Errorf("known_hosts %s: %w", path, err)
		}
	}
	if !a.AcceptNewHostKey {
		return fmt.Errorf("%w for %s: %s is not in %s; if you trust it, re-add the alias %q with accept_new_host_key=true",
			errUnknownHost, hostname, fp, path, a.Name)
	}
	return appendKnownHost(path, hostname, key)
}

// appendKnownHost adds hostname's key to the known_hosts file at path,
// creating it (0600, its directory 0700) if needed.
func appendKnownHost(path, hostname string, key ssh.PublicKey) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key) + "\n"
	if old, err := os.ReadFile(path); err == nil && len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		line = "\n" + line
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return fmt.Errorf("known_hosts: %w", err)
	}
	return f.Close()
}
