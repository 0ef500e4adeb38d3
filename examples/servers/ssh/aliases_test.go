package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAliasStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nested", "ssh_aliases.json")
	s := &aliasStore{path: path}

	if got, err := s.list(); err != nil || len(got) != 0 {
		t.Fatalf("list on a missing file = %v, %v; want nothing", got, err)
	}
	replaced, err := s.put(Alias{Name: "web", Host: "web.example", User: "deploy"})
	if err != nil || replaced {
		t.Fatalf("put = %v, %v", replaced, err)
	}
	want := Alias{Name: "web", Host: "web.example", Port: 22, User: "deploy", Auth: authKey, Sudo: sudoPrompt}
	got, err := s.get("web")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("aliases file mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}

	replaced, err = s.put(Alias{Name: "web", Host: "10.0.0.5", Port: 2222, User: "root", Auth: authPassword, Sudo: sudoNone, AcceptNewHostKey: true})
	if err != nil || !replaced {
		t.Fatalf("replace = %v, %v", replaced, err)
	}
	if _, err := s.put(Alias{Name: "db", Host: "db", User: "u", KeyPath: "/k/id", Sudo: sudoNopasswd}); err != nil {
		t.Fatal(err)
	}
	all, err := s.list()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, a := range all {
		lines = append(lines, a.line())
	}
	wantLines := []string{
		"db: u@db:22 auth=key sudo=nopasswd key_path=/k/id",
		"web: root@10.0.0.5:2222 auth=password sudo=none accept_new_host_key=true",
	}
	if diff := cmp.Diff(wantLines, lines); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}

	// The file holds exactly the alias fields: nothing that could carry a
	// secret, and no temporary files left beside it.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"host": true, "port": true, "user": true, "auth": true, "key_path": true, "sudo": true, "accept_new_host_key": true}
	for name, fields := range raw {
		for k := range fields {
			if !allowed[k] {
				t.Errorf("alias %s has field %q in the file", name, k)
			}
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the aliases file", len(entries))
	}

	if err := s.remove("web"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.get("web"); !errors.Is(err, errUnknownAlias) {
		t.Errorf("get after remove: %v, want errUnknownAlias", err)
	}
	if err := s.remove("web"); !errors.Is(err, errUnknownAlias) {
		t.Errorf("second remove: %v, want errUnknownAlias", err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("aliases file mode after remove = %v, %v; want 0600", st.Mode().Perm(), err)
	}
}

func TestAliasValidation(t *testing.T) {
	s := &aliasStore{path: filepath.Join(t.TempDir(), "a.json")}
	for _, tc := range []struct {
		name string
		a    Alias
	}{
		{"empty name", Alias{Host: "h", User: "u"}},
		{"slash in name", Alias{Name: "a/b", Host: "h", User: "u"}},
		{"space in name", Alias{Name: "a b", Host: "h", User: "u"}},
		{"no host", Alias{Name: "a", User: "u"}},
		{"no user", Alias{Name: "a", Host: "h"}},
		{"bad port", Alias{Name: "a", Host: "h", User: "u", Port: 70000}},
		{"bad auth", Alias{Name: "a", Host: "h", User: "u", Auth: "kerberos"}},
		{"bad sudo", Alias{Name: "a", Host: "h", User: "u", Sudo: "always"}},
		{"key_path with password", Alias{Name: "a", Host: "h", User: "u", Auth: authPassword, KeyPath: "/k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.put(tc.a); !errors.Is(err, errBadAlias) {
				t.Errorf("put(%+v) = %v, want errBadAlias", tc.a, err)
			}
		})
	}
	if _, err := os.Stat(s.path); !os.IsNotExist(err) {
		t.Errorf("rejected aliases wrote the file: %v", err)
	}
	for _, name := range []string{"a", "web-1", "db.prod", "X_y"} {
		if _, err := s.put(Alias{Name: name, Host: "h", User: "u"}); err != nil {
			t.Errorf("put %q: %v", name, err)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	getenv := func(k string) string { return env[k] }
	c, err := configFromEnv(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if c.AliasesPath != "/home/u/.config/mcpvisor/ssh_aliases.json" || c.KnownHostsPath != "/home/u/.ssh/known_hosts" ||
		c.PoolTTL != defaultTTL || c.LoginTTL != defaultTTL || c.SudoTTL != defaultTTL || c.KeyPassphrase != nil {
		t.Errorf("defaults: %+v", c)
	}
	env["XDG_CONFIG_HOME"] = "/xdg"
	env[envPoolTTL] = "2"
	env[envSudoTTL] = "1.5"
	env[envLoginTTL] = "1m"
	env[envKeyPassphrase] = "hunter2"
	if c, err = configFromEnv(getenv); err != nil {
		t.Fatal(err)
	}
	if c.AliasesPath != "/xdg/mcpvisor/ssh_aliases.json" || c.PoolTTL.Seconds() != 2 || c.SudoTTL.Seconds() != 1.5 || c.LoginTTL.Minutes() != 1 {
		t.Errorf("overrides: %+v", c)
	}
	if c.KeyPassphrase == nil || c.KeyPassphrase.reveal() != "hunter2" {
		t.Errorf("passphrase override not read")
	}
	env[envPoolTTL] = "soon"
	if _, err := configFromEnv(getenv); err == nil {
		t.Errorf("bad duration accepted")
	}
}
