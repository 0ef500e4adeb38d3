package config

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpand(t *testing.T) {
	lookup := func(name string) (string, bool) {
		v, ok := map[string]string{"TOKEN": "t0k", "HOME": "/home/u", "input:key": "k3y"}[name]
		return v, ok
	}
	off := false
	stdio := Server{
		Name: "fs", Command: "${HOME}/bin/fs", Args: []string{"--root", "${env:HOME}"},
		Env: map[string]string{"TOKEN": "${TOKEN}"}, Cwd: "${HOME}", Enabled: true,
		Headers: map[string]string{"X": "unused"}, Timeout: Duration(MinTimeout), Prefix: &off,
		IncludeTools: []string{"read"}, Limits: &Limits{Processes: 8},
	}
	got, err := stdio.Expand(lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := Server{
		Name: "fs", Type: "stdio", Command: "/home/u/bin/fs", Args: []string{"--root", "/home/u"},
		Env: map[string]string{"TOKEN": "t0k"}, Cwd: "/home/u", Enabled: true,
		Timeout: Duration(MinTimeout), Prefix: &off, IncludeTools: []string{"read"}, Limits: &Limits{Processes: 8},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stdio Expand (-want +got):\n%s", diff)
	}
	got.Args[0], got.Env["TOKEN"], got.Limits.Processes = "x", "x", 1
	if stdio.Args[0] != "--root" || stdio.Env["TOKEN"] != "${TOKEN}" || stdio.Limits.Processes != 8 {
		t.Error("Expand's result shares memory with the entry")
	}

	remote := Server{
		Name: "api", URL: "https://h.example/mcp", APIKey: "${input:key}", Args: []string{"unused"},
		OAuth: &OAuth{ClientID: "${TOKEN}", GrantType: "jwt_bearer", Assertion: "a"},
	}
	got, err = remote.Expand(lookup)
	if err != nil {
		t.Fatal(err)
	}
	want = Server{
		Name: "api", Type: "http", URL: "https://h.example/mcp",
		Headers: map[string]string{"Authorization": "Bearer k3y"},
		OAuth:   &OAuth{ClientID: "t0k", GrantType: "urn:ietf:params:oauth:grant-type:jwt-bearer", Assertion: "a"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("remote Expand (-want +got):\n%s", diff)
	}

	_, err = Server{Name: "fs", Command: "x", Env: map[string]string{"A": "${NOPE}"}}.Expand(lookup)
	const msg = `config: server "fs": field "env.A": variable NOPE is not set and has no default`
	if err == nil || err.Error() != msg || !errors.Is(err, ErrInvalid) {
		t.Errorf("Expand with an unset variable: %v, want %q wrapping ErrInvalid", err, msg)
	}
}
