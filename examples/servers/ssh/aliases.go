package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Alias is one remote host the tools can reach, as the aliases file stores
// it. It has no field for a secret: passwords and passphrases live only in
// the server's memory (secretCache).
type Alias struct {
	Name             string `json:"-"`
	Host             string `json:"host"`
	Port             int    `json:"port"`
	User             string `json:"user"`
	Auth             string `json:"auth"`               // authKey or authPassword
	KeyPath          string `json:"key_path,omitempty"` // "" means agent, then default keys
	Sudo             string `json:"sudo"`               // sudoPrompt, sudoNopasswd or sudoNone
	AcceptNewHostKey bool   `json:"accept_new_host_key"`
}

// Values of Alias.Auth and Alias.Sudo.
const (
	authKey      = "key"
	authPassword = "password"
	sudoPrompt   = "prompt"
	sudoNopasswd = "nopasswd"
	sudoNone     = "none"
)

var aliasName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// target is "user@host:port", how messages name the remote account.
func (a Alias) target() string { return fmt.Sprintf("%s@%s:%d", a.User, a.Host, a.Port) }

// userHost is "user@host", as the password prompts say.
func (a Alias) userHost() string { return a.User + "@" + a.Host }

// addr is the dial address.
func (a Alias) addr() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

// normalize fills defaults and checks every field.
func (a *Alias) normalize() error {
	if !aliasName.MatchString(a.Name) {
		return fmt.Errorf("%w %q: use letters, digits, '.', '_' and '-'", errBadAlias, a.Name)
	}
	if a.Host == "" || strings.ContainsAny(a.Host, " \t\r\n@/") {
		return fmt.Errorf("%w %q: host must be a host name or address", errBadAlias, a.Name)
	}
	if a.Port == 0 {
		a.Port = 22
	}
	if a.Port < 1 || a.Port > 65535 {
		return fmt.Errorf("%w %q: port %d out of range", errBadAlias, a.Name, a.Port)
	}
	if a.User == "" || strings.ContainsAny(a.User, " \t\r\n@:") {
		return fmt.Errorf("%w %q: user is required", errBadAlias, a.Name)
	}
	switch a.Auth {
	case "":
		a.Auth = authKey
	case authKey, authPassword:
	default:
		return fmt.Errorf("%w %q: auth must be %q or %q", errBadAlias, a.Name, authKey, authPassword)
	}
	switch a.Sudo {
	case "":
		a.Sudo = sudoPrompt
	case sudoPrompt, sudoNopasswd, sudoNone:
	default:
		return fmt.Errorf("%w %q: sudo must be %q, %q or %q", errBadAlias, a.Name, sudoPrompt, sudoNopasswd, sudoNone)
	}
	if a.KeyPath != "" && a.Auth != authKey {
		return fmt.Errorf("%w %q: key_path needs auth %q", errBadAlias, a.Name, authKey)
	}
	return nil
}

// line is the alias as list_aliases shows it.
func (a Alias) line() string {
	s := fmt.Sprintf("%s: %s auth=%s sudo=%s", a.Name, a.target(), a.Auth, a.Sudo)
	if a.KeyPath != "" {
		s += " key_path=" + a.KeyPath
	}
	if a.AcceptNewHostKey {
		s += " accept_new_host_key=true"
	}
	return s
}

// aliasStore is the aliases file: a JSON object from alias name to Alias,
// read afresh on every lookup (so edits by hand are seen) and written
// atomically with mode 0600. Safe for concurrent use.
type aliasStore struct {
	path string
	mu   sync.Mutex
}

func (s *aliasStore) load() (map[string]Alias, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Alias{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read aliases file: %w", err)
	}
	m := map[string]Alias{}
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("aliases file %s: %w", s.path, err)
		}
	}
	for name, a := range m {
		a.Name = name
		m[name] = a
	}
	return m, nil
}

// get returns the alias called name.
func (s *aliasStore) get(name string) (Alias, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return Alias{}, err
	}
	a, ok := m[name]
	if !ok {
		return Alias{}, fmt.Errorf("%w %q: add it with add_alias (list_aliases shows the known ones)", errUnknownAlias, name)
	}
	if err := a.normalize(); err != nil {
		return Alias{}, fmt.Errorf("aliases file %s: %w", s.path, err)
	}
	return a, nil
}

// list returns every alias, sorted by name.
func (s *aliasStore) list() ([]Alias, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return nil, err
	}
	out := make([]Alias, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[name])
	}
	return out, nil
}

// put adds a, replacing any alias of the same name; a must be normalized.
// It reports whether an alias was replaced.
func (s *aliasStore) put(a Alias) (replaced bool, err error) {
	if err := a.normalize(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return false, err
	}
	_, replaced = m[a.Name]
	m[a.Name] = a
	return replaced, s.save(m)
}

// remove deletes the alias called name; a missing one is errUnknownAlias.
func (s *aliasStore) remove(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return err
	}
	if _, ok := m[name]; !ok {
		return fmt.Errorf("%w %q", errUnknownAlias, name)
	}
	delete(m, name)
	return s.save(m)
}

// save writes m through a temporary file renamed over the aliases file, so
// a reader sees the old file or the new one, never half of one. The caller
// holds s.mu.
func (s *aliasStore) save(m map[string]Alias) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save aliases: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(s.path)+".*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("save aliases: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("save aliases: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("save aliases: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save aliases: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save aliases: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("save aliases: %w", err)
	}
	return nil
}
