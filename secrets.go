package mcpvisor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/secrets"
)

// The journal keeps no secrets. A server, from the config file or
// registered through the API (Register, PUT /v1/servers, register_mcp),
// may carry literal credentials:
// its apiKey, its header values, its env values, its oauth object's
// clientSecret, privateKey, idpClientSecret, idToken and assertion. Those are moved out of
// the registry row into <data>/secrets.json (mode 0600, written atomically;
// see internal/secrets) and the row holds a reference in their place,
// ${MCPVISOR_SECRET_...}, which only that server's own secrets can resolve.
// A value that already holds a ${VAR} reference is left in the row as
// written: it names a secret, it is not one.

// secretStore is the host's secrets.json, seen from the ServerConfig side.
type secretStore struct {
	*secrets.Store
	key []byte // the store's key; nil when it is plaintext
}

// openSecretStore opens the store, encrypted with key when one is given,
// else with the key the environment names (MCPVISOR_SECRET_KEY,
// MCPVISOR_SECRET_KEY_FILE), else in plaintext.
func openSecretStore(dataDir string, key []byte, lookup func(string) (string, bool)) (*secretStore, error) {
	if key == nil {
		var err error
		if key, err = secrets.KeyFromEnv(lookup, os.ReadFile); err != nil {
			return nil, err
		}
	}
	if key != nil {
		key = slices.Clone(key)
	}
	var s *secrets.Store
	var err error
	if key != nil {
		s, err = secrets.OpenWithKey(dataDir, key)
	} else {
		s, err = secrets.Open(dataDir)
	}
	if err != nil {
		return nil, err
	}
	return &secretStore{Store: s, key: key}, nil
}

// DerivedKey returns a 32-byte key for purpose derived from the host's
// secret key (Options.SecretKey, else MCPVISOR_SECRET_KEY[_FILE]), or nil
// when the host has none. Hosts with the same secret key derive the same
// keys: a gateway's replicas share their requestState key this way
// (gateway.Options.StateKey). Different purposes give unrelated keys.
func (h *Host) DerivedKey(purpose string) []byte {
	if h.secrets.key == nil {
		return nil
	}
	mac := hmac.New(sha256.New, h.secrets.key)
	mac.Write([]byte("mcpvisor derived key: " + purpose))
	return mac.Sum(nil)
}

// update sets server's secrets to fresh plus those it held before that
// sealed, its sealed entry, still refers to (an entry read back from its
// row and registered again, as on enable, keeps them), durably.
func (s *secretStore) update(server string, fresh map[string]string, sealed ServerConfig) error {
	row, err := json.Marshal(sealed)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	return s.Update(server, fresh, row)
}

// sealSecrets returns sc with its literal credentials replaced by
// references, and the values they stand for.
func sealSecrets(sc ServerConfig) (ServerConfig, map[string]string) {
	var s secrets.Sealer
	sc.APIKey = s.APIKey(sc.APIKey)
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

// lookupFor is the variable lookup for server's entry: its own secrets
// for secret references, config inputs (inputs.go) for ${input:ID}, the
// host's environment for the rest.
func (h *Host) lookupFor(server string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if strings.HasPrefix(name, secrets.Prefix) {
			return h.secrets.Lookup(server, name)
		}
		if v, isInput, ok := h.lookupInput(name); isInput {
			return v, ok
		}
		return h.opts.LookupEnv(name)
	}
}
