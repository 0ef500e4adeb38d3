package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A token file another user can read, or one with a guessable token, is
// refused with the fix (issue 38: a world-readable one-character token
// was accepted silently); DIR/token is held to the same rule.
func TestTokenFileRefused(t *testing.T) {
	good := strings.Repeat("a1", 16)
	for _, tc := range []struct {
		name, token string
		mode        os.FileMode
		want        string // in the error; "" for none
	}{
		{"private and long", good, 0o600, ""},
		{"readable by others", good, 0o644, "chmod 600"},
		{"readable by its group", good, 0o640, "chmod 600"},
		{"one character", "x", 0o600, "at least 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, given := range []bool{true, false} {
				data := t.TempDir()
				path, flag := filepath.Join(data, "token"), ""
				if given {
					path = filepath.Join(t.TempDir(), "tok")
					flag = path
				}
				if err := os.WriteFile(path, []byte(tc.token+"\n"), tc.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, tc.mode); err != nil { // whatever the umask
					t.Fatal(err)
				}
				token, _, err := loadToken(data, flag)
				if tc.want == "" {
					if err != nil || token != tc.token {
						t.Errorf("--token-file %v: %q, %v", given, token, err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
					t.Errorf("--token-file %v: %v, want an error naming %s and saying %q", given, err, path, tc.want)
				}
			}
		})
	}
}

// An admin token file is held to the same rule, and may not repeat the
// gateway token.
func TestAdminTokenFileRefused(t *testing.T) {
	good := strings.Repeat("a1", 16)
	for _, tc := range []struct {
		name, token string
		mode        os.FileMode
		want        string
	}{
		{"readable by others", strings.Repeat("b2", 16), 0o644, "chmod 600"},
		{"one character", "x", 0o600, "at least 16"},
		{"the gateway token", good, 0o600, "is the gateway token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			if err := os.WriteFile(filepath.Join(data, "token"), []byte(good+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, given := range []bool{true, false} {
				path, flag := filepath.Join(data, "admin-token"), ""
				if given {
					path = filepath.Join(t.TempDir(), "admin")
					flag = path
				}
				if err := os.WriteFile(path, []byte(tc.token+"\n"), tc.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, tc.mode); err != nil {
					t.Fatal(err)
				}
				_, err := loadTokens(data, "", flag)
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
					t.Errorf("--admin-token-file %v: %v, want an error naming %s and saying %q", given, err, path, tc.want)
				}
				os.Remove(path)
			}
		})
	}
}

// A new data directory gets two tokens: the gateway token, which cannot
// change state, and the admin token, which the CLI finds by itself.
func TestServeSplitsTokens(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"t": {"command": "MCPTEST", "args": ["-name", "t"]}}}`)
	data := filepath.Join(t.TempDir(), "data")
	s := startServe(t, "--config", cfg, "--data", data)
	gw := s.token(t)
	adminPath := filepath.Join(data, "admin-token")
	raw, err := os.ReadFile(adminPath)
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(raw))
	if st, err := os.Stat(adminPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("admin token file: %v %v", st, err)
	}
	if len(admin) != 64 || admin == gw {
		t.Fatalf("admin token %q, gateway token %q: want two different generated tokens", admin, gw)
	}
	if !strings.Contains(s.stderr.String(), "admin token in "+adminPath) || strings.Contains(s.stderr.String(), "one token is both") {
		t.Errorf("serve's stderr: %s", s.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put := `{"command": "` + mcptestBin + `", "args": ["-name", "evil"]}`
	if a := s.request(ctx, "PUT", "/v1/servers/evil", gw, put); a.status != http.StatusForbidden || !strings.Contains(a.body, `"admin_required"`) {
		t.Errorf("PUT /v1/servers with the gateway token: %d %s", a.status, a.body)
	}
	if a := s.request(ctx, "GET", "/v1/servers", gw, ""); a.status != http.StatusOK || strings.Contains(a.body, "evil") {
		t.Errorf("GET /v1/servers with the gateway token: %d %s", a.status, a.body)
	}
	if a := s.request(ctx, "POST", "/v1/call", gw, `{"tool":"mcp__t__echo","arguments":{}}`); a.status != http.StatusOK {
		t.Errorf("POST /v1/call with the gateway token: %d %s", a.status, a.body)
	}
	// The CLI changes state with the admin token, found through the note.
	if out, errOut, code := runCLIData(t, data, "servers", "disable", "t"); code != 0 {
		t.Fatalf("servers disable through the sidecar: %d %s %s", code, out, errOut)
	}
	if a := s.request(ctx, "GET", "/v1/servers", gw, ""); !strings.Contains(a.body, `"enabled":false`) {
		t.Errorf("t after servers disable: %s", a.body)
	}
	if a := s.request(ctx, "PUT", "/v1/servers/evil", admin, put); a.status >= 300 {
		t.Errorf("PUT /v1/servers with the admin token: %d %s", a.status, a.body)
	}
}

// A data directory from before there were two tokens, or a --token-file
// alone, keeps the one token for everything, with a warning that says how
// to split them.
func TestServeSingleTokenWarns(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	token := strings.Repeat("c3", 16)
	for _, given := range []bool{false, true} {
		t.Run(map[bool]string{false: "old data dir", true: "token file"}[given], func(t *testing.T) {
			data := t.TempDir()
			path := filepath.Join(data, "token")
			args := []string{"--config", cfg, "--data", data}
			if given {
				path = filepath.Join(t.TempDir(), "tok")
				args = append(args, "--token-file", path)
			}
			if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			s := startServe(t, args...)
			if !strings.Contains(s.stderr.String(), "one token is both the gateway token and the admin token") ||
				!strings.Contains(s.stderr.String(), filepath.Join(data, "admin-token")) {
				t.Errorf("no warning: %s", s.stderr)
			}
			if _, err := os.Stat(filepath.Join(data, "admin-token")); !os.IsNotExist(err) {
				t.Errorf("an admin token was generated: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			put := `{"command": "` + mcptestBin + `", "args": ["-name", "x"]}`
			if a := s.request(ctx, "PUT", "/v1/servers/x", token, put); a.status >= 300 {
				t.Errorf("PUT /v1/servers with the one token: %d %s", a.status, a.body)
			}
		})
	}
}
