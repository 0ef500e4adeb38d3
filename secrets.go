package mcpvisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// The journal keeps no secrets. A server registered through the API
// (Register, PUT /v1/servers, register_mcp) may carry literal credentials:
// its apiKey, its header values, its env values. Those are moved out of
// the registry row into <data>/secrets.json (mode 0600, written atomically)
// and the row holds a reference in their place, ${MCPVISOR_SECRET_...},
// which only that server's own secrets can resolve. A value that already
// holds a ${VAR} reference is left in the row as written: it names a
// secret, it is not one.

// secretPrefix starts every reference to the secret store. Such a
// reference never falls through to the environment.
const secretPrefix = "MCPVISOR_SECRET_"

const secretsFile = "secrets.json"

// secretStore is the file of secrets by server, loaded at Open. Safe for
// concurrent use; every change is durable (fsynced and renamed into place)
// when it returns.
type secretStore struct {
	path string

	mu      sync.Mutex
	servers map[string]map[string]string // server → reference name → value
}

func openSecretStore(dataDir string) (*secretStore, error) {
	s := &secretStore{path: filepath.Join(dataDir, secretsFile), servers: map[string]map[string]string{}}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	var file struct {
		Servers map[string]map[string]string `json:"servers"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("secrets: %s: %w", s.path, err)
	}
	if file.Servers != nil {
		s.servers = file.Servers
	}
	return s, nil
}

// lookup resolves a secret reference of server.
func (s *secretStore) lookup(server, name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.servers[server][name]
	return v, ok
}

// update sets server's secrets to fresh plus those it held before that
// sealed, its sealed entry, still refers to (an entry read back from its
// row and registered again, as on enable, keeps them), durably.
func (s *secretStore) update(server string, fresh map[string]string, sealed ServerConfig) error {
	row, err := json.Marshal(sealed)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(fresh)
	for name, v := range s.servers[server] {
		if _, ok := next[name]; !ok && strings.Contains(string(row), "${"+name+"}") {
			next[name] = v
		}
	}
	return s.setLocked(server, next)
}

// set replaces server's secrets (none: drops them), durably. Setting what
// is already there writes nothing.
func (s *secretStore) set(server string, secrets map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.setLocked(server, secrets)
}

func (s *secretStore) setLocked(server string, secrets map[string]string) error {
	old, had := s.servers[server]
	if (len(secrets) == 0 && !had) || (had && maps.Equal(old, secrets)) {
		return nil
	}
	next := maps.Clone(s.servers)
	if len(secrets) == 0 {
		delete(next, server)
	} else {
		next[server] = maps.Clone(secrets)
	}
	if err := s.write(next); err != nil {
		return err
	}
	s.servers = next
	return nil
}

// keepOnly drops the secrets of every server keep rejects, durably.
func (s *secretStore) keepOnly(keep func(server string) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(s.servers)
	maps.DeleteFunc(next, func(server string, _ map[string]string) bool { return !keep(server) })
	if len(next) == len(s.servers) {
		return nil
	}
	if err := s.write(next); err != nil {
		return err
	}
	s.servers = next
	return nil
}

// write replaces the file with servers: a temporary file, fsynced, renamed
// over the old one, and the directory fsynced, so a crash leaves either
// the old file or the new one.
func (s *secretStore) write(servers map[string]map[string]string) error {
	b, err := json.Marshal(map[string]any{"servers": servers})
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	dir := filepath.Dir(s.path)
	f, err := os.CreateTemp(dir, ".secrets-*.json")
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(0o600); err == nil {
		if _, err = f.Write(b); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
	}
	return nil
}

// sealSecrets returns sc with its literal credentials replaced by
// references, and the values they stand for.
func sealSecrets(sc ServerConfig) (ServerConfig, map[string]string) {
	secrets := map[string]string{}
	seal := func(name, v string) string {
		if v == "" || strings.Contains(v, "${") {
			return v
		}
		secrets[name] = v
		return "${" + name + "}"
	}
	sc.APIKey = seal(secretPrefix+"APIKEY", sc.APIKey)
	if len(sc.Headers) > 0 {
		h := make(map[string]string, len(sc.Headers))
		for k, v := range sc.Headers {
			h[k] = seal(fmt.Sprintf("%sHEADER_%X", secretPrefix, k), v)
		}
		sc.Headers = h
	}
	if len(sc.Env) > 0 {
		e := make(map[string]string, len(sc.Env))
		for k, v := range sc.Env {
			e[k] = seal(fmt.Sprintf("%sENV_%X", secretPrefix, k), v)
		}
		sc.Env = e
	}
	return sc, secrets
}

// lookupFor is the variable lookup for server's entry: its own secrets
// for secret references, the host's environment for the rest.
func (h *Host) lookupFor(server string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if strings.HasPrefix(name, secretPrefix) {
			return h.secrets.lookup(server, name)
		}
		return h.opts.LookupEnv(name)
	}
}
