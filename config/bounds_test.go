package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Hostile files are refused before they are decoded (issue 38: a YAML
// billion laughs, a 200,000-deep YAML and a 50 MB JSON each ran past 30 s
// and up to 2 GB), with an error wrapping ErrInvalid; real files still load.
func TestHostileFilesRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var laughs strings.Builder
	laughs.WriteString("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 'b'; i <= 'j'; i++ {
		fmt.Fprintf(&laughs, "%c: &%c [", i, i)
		for k := range 9 {
			if k > 0 {
				laughs.WriteString(",")
			}
			fmt.Fprintf(&laughs, "*%c", i-1)
		}
		laughs.WriteString("]\n")
	}
	laughs.WriteString("mcpServers: []\n")
	big := `{"mcpServers": {"x": {"command": "true", "args": ["` + strings.Repeat("a", MaxFileSize) + `"]}}}`
	for _, tc := range []struct{ name, body, want string }{
		{"config.yaml", laughs.String(), "aliases"},
		{"deep.yaml", "mcpServers: " + strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + "\n", "nest"},
		{"deep.json", `{"mcpServers": ` + strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + "}", "nest"},
		{"deep.toml", "x = " + strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + "\n", "nest"},
		{"big.json", big, "bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(write(tc.name, tc.body))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.name) {
				t.Errorf("Load: %v, want an invalid-config error naming the file and saying %q", err, tc.want)
			}
		})
	}

	// Within the bounds: anchors and a few aliases, strings full of
	// brackets.
	ok := write("ok.yaml", "base: &env {A: \"1\"}\nmcpServers:\n  - name: one\n    command: \"echo [[[[\"\n    env: *env\n")
	if cfg, err := Load(ok); err != nil || len(cfg.Servers) != 1 {
		t.Errorf("a file within the bounds: %+v, %v", cfg, err)
	}
	okJSON := write("ok.json", `{"mcpServers": {"one": {"command": "echo", "args": ["[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["]}}}`)
	if cfg, err := Load(okJSON); err != nil || len(cfg.Servers) != 1 {
		t.Errorf("brackets in a string: %+v, %v", cfg, err)
	}
}
