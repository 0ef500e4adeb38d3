package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// The environment variables that give the store's key: the key itself, or
// the path of a file that holds it. Their names start with Prefix, so no
// server's ${...} reference can resolve them from the environment.
const (
	EnvKey     = "MCPVISOR_SECRET_KEY"
	EnvKeyFile = "MCPVISOR_SECRET_KEY_FILE"
)

// KeySize is the length of a key in bytes (AES-256).
const KeySize = 32

const (
	sealedVersion = 1
	sealedAlg     = "A256GCM"
)

// sealedFile is the content of an encrypted store: the plaintext file,
// sealed with AES-256-GCM under a fresh random nonce each write.
type sealedFile struct {
	Version    int    `json:"version"`
	Alg        string `json:"alg"`
	Nonce      string `json:"nonce"`
	Ciphertext string `json:"ciphertext"`
}

// ParseKey decodes a key written as base64 (standard or URL alphabet,
// padded or not) or as 64 hex characters; surrounding whitespace is
// ignored. Anything else, or a length other than 32 bytes, is
// ErrInvalidKey. The error never quotes the key.
func ParseKey(s string) ([]byte, error) {
	k, err := parseKey(s)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return k, nil
}

func parseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*KeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%w (got %d characters)", ErrInvalidKey, len(s))
}

// KeyFromEnv returns the key given by EnvKey, or else by the file EnvKeyFile
// names (its content, surrounding whitespace trimmed), through lookup (as
// os.LookupEnv) and readFile (as os.ReadFile). Neither set, or set empty:
// a nil key and a nil error, the store stays in plaintext.
func KeyFromEnv(lookup func(string) (string, bool), readFile func(string) ([]byte, error)) ([]byte, error) {
	if v, ok := lookup(EnvKey); ok && v != "" {
		k, err := parseKey(v)
		if err != nil {
			return nil, fmt.Errorf("secrets: $%s: %w", EnvKey, err)
		}
		return k, nil
	}
	path, ok := lookup(EnvKeyFile)
	if !ok || path == "" {
		return nil, nil
	}
	b, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("secrets: $%s: %w", EnvKeyFile, err)
	}
	k, err := parseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("secrets: $%s: %s: %w", EnvKeyFile, path, err)
	}
	return k, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets: %w (got %d bytes)", ErrInvalidKey, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return cipher.NewGCM(block)
}

// isSealed reports whether b, the file's content, is a sealedFile rather
// than the plaintext document. A malformed file is an error.
func isSealed(b []byte) (bool, error) {
	var probe struct {
		Alg        *string `json:"alg"`
		Ciphertext *string `json:"ciphertext"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return false, err
	}
	return probe.Alg != nil || probe.Ciphertext != nil, nil
}

// seal returns the sealed file holding plain.
func seal(aead cipher.AEAD, plain []byte) ([]byte, error) {
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return json.Marshal(sealedFile{
		Version:    sealedVersion,
		Alg:        sealedAlg,
		Nonce:      base64.StdEncoding.EncodeToString(nonce),
		Ciphertext: base64.StdEncoding.EncodeToString(aead.Seal(nil, nonce, plain, nil)),
	})
}

// unseal returns the plaintext of the sealed file b at path.
func unseal(aead cipher.AEAD, path string, b []byte) ([]byte, error) {
	var f sealedFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("secrets: %s: %w", path, err)
	}
	if f.Version != sealedVersion || f.Alg != sealedAlg {
		return nil, fmt.Errorf("secrets: %s: unsupported encryption (version %d, alg %q)", path, f.Version, f.Alg)
	}
	nonce, err := base64.StdEncoding.DecodeString(f.Nonce)
	if err != nil || len(nonce) != aead.NonceSize() {
		return nil, fmt.Errorf("secrets: %s: %w", path, ErrWrongKey)
	}
	ct, err := base64.StdEncoding.DecodeString(f.Ciphertext)
	if err != nil {
		return nil, fmt.Errorf("secrets: %s: %w", path, ErrWrongKey)
	}
	plain, err := aead.Open(nil, nonce, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("secrets: %s: %w", path, ErrWrongKey)
	}
	return plain, nil
}

// encryptedError is the error of opening the sealed file at path without
// a key.
func encryptedError(path string) error {
	return fmt.Errorf("secrets: %s is %w: give the key in $%s or $%s", path, ErrEncrypted, EnvKey, EnvKeyFile)
}
