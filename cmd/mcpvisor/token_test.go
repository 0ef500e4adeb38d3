package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
