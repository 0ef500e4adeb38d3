package secrets

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
	if err := s.KeepOnly(func(string) bool { return true }); err != nil {
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
	if err := s.KeepOnly(func(server string) bool { return server != "b" }); err != nil {
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
