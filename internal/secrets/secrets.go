package secrets

import (
	"bytes"
	"crypto/cipher"
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

// Prefix starts the name of every reference to the store. Such a
// reference never falls through to the environment.
const Prefix = "MCPVISOR_SECRET_"

// FileName is the store's file in the data directory.
const FileName = "secrets.json"

// Store is the file of secrets by server, loaded at Open. Safe for
// concurrent use; every change is durable (fsynced and renamed into place)
// when it returns.
type Store struct {
	path string
	aead cipher.AEAD // nil: the file is plaintext
	key  []byte      // the key given to OpenHost, for DeriveKey; nil: none

	mu      sync.Mutex
	servers map[string]map[string]string // server → reference name → value
	oauth   map[string]json.RawMessage   // key (server or server\x00user) → compact JSON
	inputs  map[string]string            // config input id → the person's answer
}

// fileContent is the plaintext document: the whole file without a key,
// the sealed content with one.
type fileContent struct {
	Servers map[string]map[string]string `json:"servers"`
	OAuth   map[string]json.RawMessage   `json:"oauth,omitempty"`
	// Inputs are the answers to a config file's inputs (VS Code's
	// ${input:ID}), by id, host-wide: asked once, reused by every server
	// and every later run.
	Inputs map[string]string `json:"inputs,omitempty"`
}

// Open loads <dataDir>/secrets.json, unencrypted; a missing file is an
// empty store. A file sealed by OpenWithKey is ErrEncrypted, and is left
// as it is.
func Open(dataDir string) (*Store, error) {
	return open(dataDir, nil)
}

// OpenWithKey loads <dataDir>/secrets.json sealed with key, 32 bytes
// (see ParseKey, KeyFromEnv), and seals every write with it: AES-256-GCM,
// a fresh random nonce each time. A plaintext file is read and rewritten
// sealed before OpenWithKey returns. A key that does not open the file is
// ErrWrongKey, and the file is left as it is. A nil or empty key is Open.
func OpenWithKey(dataDir string, key []byte) (*Store, error) {
	if len(key) == 0 {
		return open(dataDir, nil)
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return open(dataDir, aead)
}

func open(dataDir string, aead cipher.AEAD) (*Store, error) {
	s := &Store{
		path:    filepath.Join(dataDir, FileName),
		aead:    aead,
		servers: map[string]map[string]string{},
		oauth:   map[string]json.RawMessage{},
		inputs:  map[string]string{},
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	sealed, err := isSealed(b)
	if err != nil {
		return nil, fmt.Errorf("secrets: %s: %w", s.path, err)
	}
	switch {
	case sealed && aead == nil:
		return nil, encryptedError(s.path)
	case sealed:
		if b, err = unseal(aead, s.path, b); err != nil {
			return nil, err
		}
	}
	var file fileContent
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("secrets: %s: %w", s.path, err)
	}
	if file.Servers != nil {
		s.servers = file.Servers
	}
	if file.Inputs != nil {
		s.inputs = file.Inputs
	}
	for k, v := range file.OAuth {
		if c := compactJSON(v); c != nil {
			s.oauth[k] = c
		}
	}
	if aead != nil && !sealed {
		// The key is new: seal the file now rather than at the next change,
		// so the plaintext does not linger.
		if err := s.write(s.content()); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Lookup resolves the reference name of server's secrets.
func (s *Store) Lookup(server, name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.servers[server][name]
	return v, ok
}

// Update sets server's secrets to fresh plus those it held before that row,
// its sealed entry as stored, still refers to as ${name} (an entry read
// back from its row and registered again, as on enable, keeps them),
// durably.
func (s *Store) Update(server string, fresh map[string]string, row []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(fresh)
	if next == nil {
		next = map[string]string{}
	}
	for name, v := range s.servers[server] {
		if _, ok := next[name]; !ok && bytes.Contains(row, []byte("${"+name+"}")) {
			next[name] = v
		}
	}
	return s.setLocked(server, next)
}

// Set replaces server's secrets (none: drops them), durably. Setting what
// is already there writes nothing. Its OAuth entries are kept: a server
// registered again keeps its sign-in (see DropOAuth).
func (s *Store) Set(server string, secrets map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.setLocked(server, secrets)
}

func (s *Store) setLocked(server string, secrets map[string]string) error {
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
	c := s.content()
	c.Servers = next
	if err := s.write(c); err != nil {
		return err
	}
	s.servers = next
	return nil
}

// KeepOnly drops the sealed secrets of every server keep rejects, and the
// OAuth entries of every server keepOAuth rejects, durably.
func (s *Store) KeepOnly(keep, keepOAuth func(server string) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(s.servers)
	maps.DeleteFunc(next, func(server string, _ map[string]string) bool { return !keep(server) })
	nextOAuth := maps.Clone(s.oauth)
	maps.DeleteFunc(nextOAuth, func(key string, _ json.RawMessage) bool { return !keepOAuth(oauthServer(key)) })
	if len(next) == len(s.servers) && len(nextOAuth) == len(s.oauth) {
		return nil
	}
	c := s.content()
	c.Servers, c.OAuth = next, nextOAuth
	if err := s.write(c); err != nil {
		return err
	}
	s.servers, s.oauth = next, nextOAuth
	return nil
}

// Input returns the stored answer to the config input id.
func (s *Store) Input(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.inputs[id]
	return v, ok
}

// SetInput stores the answer to the config input id, durably; "" forgets
// it. Storing what is already there writes nothing.
func (s *Store) SetInput(id, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.inputs[id]
	if (value == "" && !had) || (had && old == value) {
		return nil
	}
	next := maps.Clone(s.inputs)
	if value == "" {
		delete(next, id)
	} else {
		next[id] = value
	}
	c := s.content()
	c.Inputs = next
	if err := s.write(c); err != nil {
		return err
	}
	s.inputs = next
	return nil
}

// content is what the file holds now. Callers hold s.mu.
func (s *Store) content() fileContent {
	return fileContent{Servers: s.servers, OAuth: s.oauth, Inputs: s.inputs}
}

// write replaces the file with c, sealed when the store has a key: a temporary file, fsynced, renamed over the old one, and the
// directory fsynced, so a crash leaves either the old file or the new one.
func (s *Store) write(c fileContent) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// The OAuth blobs are stored as given (compacted); escaping <, > and &
	// would rewrite them.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	b := buf.Bytes()
	if s.aead != nil {
		sealed, err := seal(s.aead, b)
		clear(b)
		if err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		b = sealed
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

// Sealer replaces literal credentials with references to the store and
// collects the values they stand for. A value that already holds a ${...}
// reference, or is empty, is kept as written: it names a secret, it is not
// one. The zero Sealer is ready to use.
type Sealer struct {
	sealed map[string]string
}

// APIKey seals an entry's API key.
func (s *Sealer) APIKey(v string) string { return s.seal(Prefix+"APIKEY", v) }

// URL seals the user information and the query of a server's URL
// (https://user:token@host/mcp?key=...): either may carry a credential.
// The rest stays as written, so the row still says where the server is.
func (s *Sealer) URL(raw string) string {
	if raw == "" || strings.Contains(raw, "${") {
		return raw
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		authority = s.seal(Prefix+"URL_USERINFO", authority[:at]) + authority[at:]
	}
	if q := strings.IndexByte(tail, '?'); q >= 0 {
		query, frag := tail[q+1:], ""
		if h := strings.IndexByte(query, '#'); h >= 0 {
			query, frag = query[:h], query[h:]
		}
		tail = tail[:q+1] + s.seal(Prefix+"URL_QUERY", query) + frag
	}
	return scheme + "://" + authority + tail
}

// Header seals the value of the header name.
func (s *Sealer) Header(name, v string) string {
	return s.seal(fmt.Sprintf("%sHEADER_%X", Prefix, name), v)
}

// Env seals the value of the environment variable name.
func (s *Sealer) Env(name, v string) string {
	return s.seal(fmt.Sprintf("%sENV_%X", Prefix, name), v)
}

// OAuth seals the value of the oauth field name (clientSecret, ...).
func (s *Sealer) OAuth(name, v string) string {
	return s.seal(fmt.Sprintf("%sOAUTH_%X", Prefix, name), v)
}

func (s *Sealer) seal(name, v string) string {
	if v == "" || strings.Contains(v, "${") {
		return v
	}
	if s.sealed == nil {
		s.sealed = map[string]string{}
	}
	s.sealed[name] = v
	return "${" + name + "}"
}

// Sealed returns the values sealed so far by reference name; never nil.
func (s *Sealer) Sealed() map[string]string {
	if s.sealed == nil {
		return map[string]string{}
	}
	return s.sealed
}
