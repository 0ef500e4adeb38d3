package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readFile returns the store's file as decoded JSON.
func readFile(t *testing.T, dir string) map[string]map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]map[string]map[string]string
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

func TestStoreSetLookupReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Lookup("a", Prefix+"APIKEY"); ok {
		t.Error("Lookup in an empty store found a secret")
	}
	if err := s.Set("a", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dropping nothing wrote the file: %v", err)
	}
	if err := s.Set("a", map[string]string{Prefix + "APIKEY": "k1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("b", map[string]string{Prefix + "ENV_54": "v"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, mode %v; want 0600", FileName, err, fi.Mode())
	}
	want := map[string]map[string]map[string]string{"servers": {
		"a": {Prefix + "APIKEY": "k1"},
		"b": {Prefix + "ENV_54": "v"},
	}}
	if diff := cmp.Diff(want, readFile(t, dir)); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	if v, ok := s.Lookup("a", Prefix+"APIKEY"); !ok || v != "k1" {
		t.Errorf("Lookup = %q, %v; want k1", v, ok)
	}
	if _, ok := s.Lookup("b", Prefix+"APIKEY"); ok {
		t.Error("server b resolved server a's secret")
	}

	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := again.Lookup("b", Prefix+"ENV_54"); !ok || v != "v" {
		t.Errorf("after reopening: Lookup = %q, %v; want v", v, ok)
	}
	if err := again.Set("a", nil); err != nil {
		t.Fatal(err)
	}
	delete(want["servers"], "a")
	if diff := cmp.Diff(want, readFile(t, dir)); diff != "" {
		t.Errorf("file after dropping a (-want +got):\n%s", diff)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("data dir holds %d entries, want only %s (no temporaries)", len(entries), FileName)
	}
}

func TestStoreSetUnchangedWritesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("a", map[string]string{"N": "v"}); err != nil {
		t.Fatal(err)
	}
	// A file that is not the store's own shows whether Set writes again.
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte("sentinel"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("a", map[string]string{"N": "v"}); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepOnly(func(string) bool { return true }, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "sentinel" {
		t.Errorf("file rewritten to %q by changes that change nothing", b)
	}
}

func TestStoreUpdateKeepsReferencedSecrets(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]string{Prefix + "APIKEY": "k", Prefix + "ENV_41": "a", Prefix + "ENV_42": "b"}
	if err := s.Set("x", old); err != nil {
		t.Fatal(err)
	}
	row := []byte(`{"apiKey":"${` + Prefix + `APIKEY}","env":{"B":"${` + Prefix + `ENV_42}","C":"${` + Prefix + `ENV_43}"}}`)
	if err := s.Update("x", map[string]string{Prefix + "ENV_43": "c"}, row); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]map[string]string{"servers": {
		"x": {Prefix + "APIKEY": "k", Prefix + "ENV_42": "b", Prefix + "ENV_43": "c"},
	}}
	if diff := cmp.Diff(want, readFile(t, dir)); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	if err := s.Update("x", nil, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir)["servers"]; len(got) != 0 {
		t.Errorf("after an update that refers to nothing: %v, want no servers", got)
	}
}

func TestStoreKeepOnly(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, server := range []string{"a", "b", "c"} {
		if err := s.Set(server, map[string]string{"N": server}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.KeepOnly(func(server string) bool { return server != "b" }, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]map[string]string{"servers": {"a": {"N": "a"}, "c": {"N": "c"}}}
	if diff := cmp.Diff(want, readFile(t, dir)); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	if _, ok := s.Lookup("b", "N"); ok {
		t.Error("b's secret still resolves")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	var syn *json.SyntaxError
	if _, err := Open(dir); !errors.As(err, &syn) {
		t.Errorf("Open of a malformed file: %v, want a *json.SyntaxError", err)
	}
	if err := os.Remove(filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil {
		t.Error("Open of a directory named secrets.json: no error")
	}
}

func TestSealer(t *testing.T) {
	var s Sealer
	if got := s.Sealed(); got == nil || len(got) != 0 {
		t.Errorf("zero Sealer: Sealed() = %#v, want an empty map", got)
	}
	tests := []struct {
		seal func() string
		want string
	}{
		{func() string { return s.APIKey("k") }, "${MCPVISOR_SECRET_APIKEY}"},
		{func() string { return s.Header("X-Key", "h") }, "${MCPVISOR_SECRET_HEADER_582D4B6579}"},
		{func() string { return s.Env("TOKEN", "t") }, "${MCPVISOR_SECRET_ENV_544F4B454E}"},
		{func() string { return s.Env("REF", "${HOME}/x") }, "${HOME}/x"},
		{func() string { return s.Env("EMPTY", "") }, ""},
	}
	for _, tt := range tests {
		if got := tt.seal(); got != tt.want {
			t.Errorf("sealed as %q, want %q", got, tt.want)
		}
	}
	want := map[string]string{
		"MCPVISOR_SECRET_APIKEY":            "k",
		"MCPVISOR_SECRET_HEADER_582D4B6579": "h",
		"MCPVISOR_SECRET_ENV_544F4B454E":    "t",
	}
	if diff := cmp.Diff(want, s.Sealed()); diff != "" {
		t.Errorf("Sealed (-want +got):\n%s", diff)
	}
}

// testKey is a fixed 32-byte key.
var testKey = bytes.Repeat([]byte{0x42}, KeySize)

func mustOpen(t *testing.T, dir string, key []byte) *Store {
	t.Helper()
	s, err := OpenWithKey(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func loadOAuth(t *testing.T, s *Store, key string) string {
	t.Helper()
	b, err := s.LoadOAuth(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOAuthRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  []byte
	}{{"plaintext", nil}, {"encrypted", testKey}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, tc.key)
			if b, err := s.LoadOAuth("a"); b != nil || err != nil {
				t.Fatalf("LoadOAuth of nothing = %q, %v; want nil, nil", b, err)
			}
			tok := `{"access_token":"at-<1>&","refresh_token":"rt"}`
			if err := s.SaveOAuth("a", []byte("  "+tok+"\n")); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveOAuth("a\x00alice", []byte(`{"client_id":"c"}`)); err != nil {
				t.Fatal(err)
			}
			if got := loadOAuth(t, s, "a"); got != tok {
				t.Errorf("LoadOAuth(a) = %s, want %s", got, tok)
			}
			if err := s.SaveOAuth("a", []byte("not json")); err == nil {
				t.Error("SaveOAuth of a non-JSON blob: no error")
			}

			again := mustOpen(t, dir, tc.key)
			if got := loadOAuth(t, again, "a"); got != tok {
				t.Errorf("after reopening: LoadOAuth(a) = %s, want %s", got, tok)
			}
			if got := loadOAuth(t, again, "a\x00alice"); got != `{"client_id":"c"}` {
				t.Errorf("after reopening: LoadOAuth(a\\x00alice) = %s", got)
			}

			// Saving what is there, compacted or not, writes nothing.
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, []byte("sentinel"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := again.SaveOAuth("a", []byte(tok)); err != nil {
				t.Fatal(err)
			}
			if err := again.SaveOAuth("b", nil); err != nil {
				t.Fatal(err)
			}
			if err := again.DropOAuth("nobody"); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path); string(b) != "sentinel" {
				t.Errorf("file rewritten to %q by changes that change nothing", b)
			}

			if err := again.SaveOAuth("a", nil); err != nil {
				t.Fatal(err)
			}
			third := mustOpen(t, dir, tc.key)
			if b, _ := third.LoadOAuth("a"); b != nil {
				t.Errorf("after SaveOAuth(a, nil) and reopening: %s, want nil", b)
			}
			if got := loadOAuth(t, third, "a\x00alice"); got != `{"client_id":"c"}` {
				t.Errorf("deleting a dropped a\\x00alice: %q", got)
			}
		})
	}
}

func TestOAuthFileLayout(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, nil)
	if err := s.Set("a", map[string]string{"N": "v"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveOAuth("a\x00u", []byte(`{"t":1}`)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Servers map[string]map[string]string
		OAuth   map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Servers["a"]["N"] != "v" || string(got.OAuth["a\x00u"]) != `{"t":1}` {
		t.Errorf("file = %s, want servers.a.N and oauth[\"a\\u0000u\"]", b)
	}
}

func TestOAuthLifetime(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, nil)
	for _, key := range []string{"a", "a\x00u1", "a\x00u2", "ab", "b", "b\x00a"} {
		if err := s.SaveOAuth(key, []byte(`{"k":"`+strings.ReplaceAll(key, "\x00", "/")+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Set("a", map[string]string{"N": "v"}); err != nil {
		t.Fatal(err)
	}
	present := func(t *testing.T, st *Store, want ...string) {
		t.Helper()
		var got []string
		for _, key := range []string{"a", "a\x00u1", "a\x00u2", "ab", "b", "b\x00a"} {
			if b, _ := st.LoadOAuth(key); b != nil {
				got = append(got, key)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("OAuth keys (-want +got):\n%s", diff)
		}
	}

	// Dropping the server's secrets, as on registering it again, keeps
	// its sign-in.
	if err := s.Set("a", nil); err != nil {
		t.Fatal(err)
	}
	present(t, s, "a", "a\x00u1", "a\x00u2", "ab", "b", "b\x00a")

	if err := s.DropOAuth("a"); err != nil {
		t.Fatal(err)
	}
	present(t, s, "ab", "b", "b\x00a")
	present(t, mustOpen(t, dir, nil), "ab", "b", "b\x00a")

	if err := s.Set("b", map[string]string{"N": "b"}); err != nil {
		t.Fatal(err)
	}
	// Sealed secrets and sign-ins are kept by their own rules.
	if err := s.KeepOnly(func(string) bool { return false }, func(server string) bool { return server != "ab" }); err != nil {
		t.Fatal(err)
	}
	present(t, s, "b", "b\x00a")
	if err := s.KeepOnly(func(server string) bool { return server == "ab" }, func(server string) bool { return server == "ab" }); err != nil {
		t.Fatal(err)
	}
	present(t, s)
	if _, ok := s.Lookup("b", "N"); ok {
		t.Error("KeepOnly kept b's secret")
	}
	present(t, mustOpen(t, dir, nil))
}

func TestEncryptedStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := mustOpen(t, dir, testKey)
	if err := s.Set("a", map[string]string{Prefix + "APIKEY": "sk-very-secret"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveOAuth("a\x00u", []byte(`{"refresh_token":"rt-very-secret"}`)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, plain := range []string{"sk-very-secret", "rt-very-secret", "refresh_token", Prefix, `"a"`} {
		if bytes.Contains(b, []byte(plain)) {
			t.Errorf("encrypted file holds %q: %s", plain, b)
		}
	}
	var env map[string]any
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	if env["version"] != 1.0 || env["alg"] != "A256GCM" || env["nonce"] == nil || env["ciphertext"] == nil || len(env) != 4 {
		t.Errorf("envelope = %s", b)
	}
	nonce, err := base64.StdEncoding.DecodeString(env["nonce"].(string))
	if err != nil || len(nonce) != 12 {
		t.Errorf("nonce %q: %v, %d bytes; want 12", env["nonce"], err, len(nonce))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, mode %v; want 0600", FileName, err, fi.Mode())
	}

	// Each write takes a fresh nonce.
	if err := s.Set("b", map[string]string{"N": "v"}); err != nil {
		t.Fatal(err)
	}
	b2, _ := os.ReadFile(path)
	var env2 map[string]any
	if err := json.Unmarshal(b2, &env2); err != nil || env2["nonce"] == env["nonce"] {
		t.Errorf("second write: nonce %v, first %v (%v)", env2["nonce"], env["nonce"], err)
	}
	b = b2

	again := mustOpen(t, dir, testKey)
	if v, ok := again.Lookup("a", Prefix+"APIKEY"); !ok || v != "sk-very-secret" {
		t.Errorf("after reopening: Lookup = %q, %v", v, ok)
	}
	if got := loadOAuth(t, again, "a\x00u"); got != `{"refresh_token":"rt-very-secret"}` {
		t.Errorf("after reopening: LoadOAuth = %s", got)
	}

	// Without the key, or with another one, or on a damaged file: a clear
	// error and the file untouched.
	wrong := bytes.Repeat([]byte{0x43}, KeySize)
	if _, err := Open(dir); !errors.Is(err, ErrEncrypted) || !strings.Contains(err.Error(), path+" is encrypted: give the key") {
		t.Errorf("Open without a key: %v, want ErrEncrypted naming %s", err, path)
	}
	if _, err := OpenWithKey(dir, wrong); !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), path+": wrong key or corrupted file") {
		t.Errorf("OpenWithKey with the wrong key: %v, want ErrWrongKey naming %s", err, path)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Error("a failed open changed the file")
	}
	ct, _ := base64.StdEncoding.DecodeString(env2["ciphertext"].(string))
	ct[0] ^= 1
	env2["ciphertext"] = base64.StdEncoding.EncodeToString(ct)
	damaged, _ := json.Marshal(env2)
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWithKey(dir, testKey); !errors.Is(err, ErrWrongKey) {
		t.Errorf("OpenWithKey of a damaged file: %v, want ErrWrongKey", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, damaged) {
		t.Error("a failed open changed the damaged file")
	}

	if _, err := OpenWithKey(dir, testKey[:16]); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("OpenWithKey with a 16-byte key: %v, want ErrInvalidKey", err)
	}
}

func TestPlaintextMigratesToEncrypted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := mustOpen(t, dir, nil)
	if err := s.Set("a", map[string]string{"N": "plain-secret"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveOAuth("a", []byte(`{"access_token":"plain-token"}`)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte("plain-secret")) {
		t.Fatalf("plaintext store: file %s lacks the secret", b)
	}

	enc := mustOpen(t, dir, testKey)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("plain-secret")) || bytes.Contains(b, []byte("plain-token")) {
		t.Errorf("after OpenWithKey, before any change, the file still holds plaintext: %s", b)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, mode %v; want 0600", FileName, err, fi.Mode())
	}
	if v, ok := enc.Lookup("a", "N"); !ok || v != "plain-secret" {
		t.Errorf("Lookup after migration = %q, %v", v, ok)
	}
	if _, err := Open(dir); !errors.Is(err, ErrEncrypted) {
		t.Errorf("Open without a key after migration: %v, want ErrEncrypted", err)
	}
	again := mustOpen(t, dir, testKey)
	if got := loadOAuth(t, again, "a"); got != `{"access_token":"plain-token"}` {
		t.Errorf("LoadOAuth after migration = %s", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("data dir holds %d entries, want only %s", len(entries), FileName)
	}

	// A missing file stays missing until the first change.
	empty := t.TempDir()
	mustOpen(t, empty, testKey)
	if _, err := os.Stat(filepath.Join(empty, FileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenWithKey of nothing wrote a file: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	key := make([]byte, KeySize)
	for i := range key {
		key[i] = byte(0xf0 + i) // high bytes make + / - _ differ
	}
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"std padded", base64.StdEncoding.EncodeToString(key), true},
		{"std raw", base64.RawStdEncoding.EncodeToString(key), true},
		{"url padded", base64.URLEncoding.EncodeToString(key), true},
		{"url raw", base64.RawURLEncoding.EncodeToString(key), true},
		{"hex", hex.EncodeToString(key), true},
		{"HEX", strings.ToUpper(hex.EncodeToString(key)), true},
		{"surrounding whitespace", "  " + hex.EncodeToString(key) + "\n", true},
		{"empty", "", false},
		{"16 bytes base64", base64.StdEncoding.EncodeToString(key[:16]), false},
		{"33 bytes base64", base64.StdEncoding.EncodeToString(append(key, 0)), false},
		{"62 hex", hex.EncodeToString(key[:31]), false},
		{"64 non-hex", strings.Repeat("zz", KeySize), false},
		{"passphrase", "correct horse battery staple", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKey(tt.in)
			if !tt.ok {
				if !errors.Is(err, ErrInvalidKey) {
					t.Errorf("ParseKey(%q) = %x, %v; want ErrInvalidKey", tt.in, got, err)
				}
				if tt.in != "" && strings.Contains(err.Error(), tt.in) {
					t.Errorf("error %q quotes the key", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, key) {
				t.Errorf("ParseKey(%q) = %x, %v; want %x", tt.in, got, err, key)
			}
		})
	}
}

func TestKeyFromEnv(t *testing.T) {
	key := bytes.Repeat([]byte{7}, KeySize)
	b64 := base64.StdEncoding.EncodeToString(key)
	files := map[string]string{"/k": "\n  " + hex.EncodeToString(key) + "\n", "/bad": "short"}
	readFile := func(p string) ([]byte, error) {
		if v, ok := files[p]; ok {
			return []byte(v), nil
		}
		return nil, fs.ErrNotExist
	}
	tests := []struct {
		name    string
		env     map[string]string
		want    []byte
		wantErr error
	}{
		{"neither", nil, nil, nil},
		{"empty", map[string]string{EnvKey: "", EnvKeyFile: ""}, nil, nil},
		{"key", map[string]string{EnvKey: b64}, key, nil},
		{"key wins over file", map[string]string{EnvKey: b64, EnvKeyFile: "/missing"}, key, nil},
		{"file", map[string]string{EnvKeyFile: "/k"}, key, nil},
		{"bad key", map[string]string{EnvKey: "nope"}, nil, ErrInvalidKey},
		{"bad file content", map[string]string{EnvKeyFile: "/bad"}, nil, ErrInvalidKey},
		{"missing file", map[string]string{EnvKeyFile: "/missing"}, nil, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			got, err := KeyFromEnv(lookup, readFile)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("KeyFromEnv: %v, want %v", err, tt.wantErr)
			}
			if !bytes.Equal(got, tt.want) || (tt.want == nil) != (got == nil) {
				t.Errorf("KeyFromEnv = %x, want %x", got, tt.want)
			}
		})
	}
}

func TestStoreInputs(t *testing.T) {
	dir := t.TempDir()
	key := bytes.Repeat([]byte{7}, 32)
	s, err := OpenWithKey(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetInput("ev-token", "tok-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("a", map[string]string{Prefix + "APIKEY": "k1"}); err != nil {
		t.Fatal(err)
	}
	// Dropping every server keeps the answers: they belong to the file,
	// not to one server.
	if err := s.KeepOnly(func(string) bool { return false }, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("tok-1")) {
		t.Error("an input's answer is in the sealed file in plaintext")
	}
	again, err := OpenWithKey(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := again.Input("ev-token"); !ok || v != "tok-1" {
		t.Errorf("after reopening: Input = %q, %v; want tok-1", v, ok)
	}
	if err := again.SetInput("ev-token", ""); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Input("ev-token"); ok {
		t.Error("SetInput(\"\") kept the answer")
	}
}
