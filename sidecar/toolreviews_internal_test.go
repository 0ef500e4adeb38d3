package sidecar

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecidedBy(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	for _, tc := range []struct {
		name, given, want string
	}{
		{"none", "", "api"},
		{"blank", " \t ", "api"},
		{"a name", "alice", "api:alice"},
		{"the inbox", "inbox", "api:inbox"},
		{"another surface's name", "cli:root", "api:cli:root"},
		{"a forged log line", "alice\nINFO approved by=root", "api:aliceINFO approved by=root"},
		{"bidi and zero-width", "al\u202eice\u200b", "api:alice"},
		{"invalid UTF-8", "al\xffice", "api:alice"},
		{"only control characters", "\x00\x1b\u2066", "api"},
		{"too long", long, "api:" + strings.Repeat("é", (maxDecidedBy-len("api:"))/2)},
		{"cut inside a rune", "x" + long, "api:x" + strings.Repeat("é", (maxDecidedBy-len("api:x"))/2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decidedBy(tc.given)
			if got != tc.want {
				t.Errorf("decidedBy(%q) = %q, want %q", tc.given, got, tc.want)
			}
			if len(got) > maxDecidedBy || !utf8.ValidString(got) {
				t.Errorf("decidedBy(%q) = %q: %d bytes, valid UTF-8 %v", tc.given, got, len(got), utf8.ValidString(got))
			}
		})
	}
}
