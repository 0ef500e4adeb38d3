package secrets

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/config"
)

// The store seen from the server entries' side (config.Server): which of
// an entry's fields are literal credentials, the store as a host opens it,
// and how an entry's ${...} references resolve against it. The journal
// keeps no secrets: an entry, from the config file or registered through
// the API, may carry literal credentials (its apiKey, its header values,
// its env values, its oauth object's clientSecret, privateKey,
// idpClientSecret, idToken and assertion). Seal moves those out of the
// registry row into the store, and the row holds a reference in their
// place, ${MCPVISOR_SECRET_...}, which only that server's own secrets can
// resolve. A value that already holds a ${VAR} reference is left in the
// row as written: it names a secret, it is not one.

// OpenHost opens the store in dataDir as a host does: encrypted with key
// when one is given, else with the key the environment names through
// lookup (EnvKey, EnvKeyFile), else in plaintext. The key it was opened
// with, if any, is kept for DeriveKey; the caller's slice is not.
func OpenHost(dataDir string, key []byte, lookup func(string) (string, bool)) (*Store, error) {
	if key == nil {
		var err error
		if key, err = KeyFromEnv(lookup, os.ReadFile); err != nil {
			return nil, err
		}
	}
	if key == nil {
		return Open(dataDir)
	}
	key = slices.Clone(key)
	s, err := OpenWithKey(dataDir, key)
	if err != nil {
		return nil, err
	}
	s.key = key
	return s, nil
}

// DeriveKey returns a 32-byte key for purpose derived from the key the
// store was opened with (HMAC-SHA256 of the purpose), or nil for a store
// opened without one. The same key derives the same keys, so hosts that
// share a secret key share what they derive (a gateway's replicas, their
// requestState key) without a second secret to distribute; different
// purposes give unrelated keys.
func (s *Store) DeriveKey(purpose string) []byte {
	if s.key == nil {
		return nil
	}
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte("mcpvisor derived key: " + purpose))
	return mac.Sum(nil)
}

// Seal returns sc with its literal credentials replaced by references,
// and the values they stand for, by reference name. What sc points to
// (its maps, its oauth object) is not modified: the result has its own.
func Seal(sc config.Server) (config.Server, map[string]string) {
	var s Sealer
	sc.APIKey = s.APIKey(sc.APIKey)
	sc.URL = s.URL(sc.URL)
	if len(sc.Headers) > 0 {
		h := make(map[string]string, len(sc.Headers))
		for k, v := range sc.Headers {
			h[k] = s.Header(k, v)
		}
		sc.Headers = h
	}
	if len(sc.Env) > 0 {
		e := make(map[string]string, len(sc.Env))
		for k, v := range sc.Env {
			e[k] = s.Env(k, v)
		}
		sc.Env = e
	}
	if sc.OAuth != nil {
		o := *sc.OAuth // sc is a copy, but what OAuth points to is the caller's
		o.ClientSecret = s.OAuth("clientSecret", o.ClientSecret)
		o.PrivateKey = s.OAuth("privateKey", o.PrivateKey)
		o.IDPClientSecret = s.OAuth("idpClientSecret", o.IDPClientSecret)
		o.IDToken = s.OAuth("idToken", o.IDToken)
		o.Assertion = s.OAuth("assertion", o.Assertion)
		sc.OAuth = &o
	}
	return sc, s.Sealed()
}

// UpdateServer sets server's secrets to fresh plus those it held before
// that sealed, its entry as Seal returned it, still refers to (an entry
// read back from its row and registered again, as on enable, keeps them),
// durably: Update with the row sealed is stored as.
func (s *Store) UpdateServer(server string, fresh map[string]string, sealed config.Server) error {
	row, err := json.Marshal(sealed)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	return s.Update(server, fresh, row)
}

// Resolver is the variable lookup for server's entry: its own secrets for
// references to the store (Prefix), which never fall through; then input,
// for the names it claims (isInput: a config input's ${input:ID}); then
// env for the rest.
func (s *Store) Resolver(server string, input func(name string) (value string, isInput, ok bool), env func(string) (string, bool)) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if strings.HasPrefix(name, Prefix) {
			return s.Lookup(server, name)
		}
		if v, isInput, ok := input(name); isInput {
			return v, ok
		}
		return env(name)
	}
}
