package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAddServerKeepsTheFile: a server added to a person's file changes
// nothing else in it: comments, order, indentation and trailing commas.
func TestAddServerKeepsTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".mcp.json")
	writeFile(t, path, `{
  // the team's servers
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}, // files
  },
  "other": true
}
`)
	err := AddServer(path, "time", Entry{Command: "uvx", Args: []string{"mcp-server-time"}, Env: map[string]string{"TZ": "UTC"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  // the team's servers
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}, // files
    "time": {
      "type": "stdio",
      "command": "uvx",
      "args": [
        "mcp-server-time"
      ],
      "env": {
        "TZ": "UTC"
      }
    },
  },
  "other": true
}
`
	if diff := cmp.Diff(want, readText(t, path)); diff != "" {
		t.Fatalf("file after add (-want +got):\n%s", diff)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 2 || cfg.Servers[1].Name != "time" || cfg.Servers[1].Env["TZ"] != "UTC" {
		t.Fatalf("loaded %+v", cfg.Servers)
	}

	if err := AddServer(path, "time", Entry{Command: "x"}, false); !errors.Is(err, ErrServerExists) {
		t.Fatalf("second add: %v, want ErrServerExists", err)
	}
	if err := AddServer(path, "time", Entry{URL: "https://example.com/mcp"}, true); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 2 || cfg.Servers[1].URL != "https://example.com/mcp" || cfg.Servers[1].Command != "" {
		t.Fatalf("after replace %+v", cfg.Servers)
	}

	if err := RemoveServer(path, "time"); err != nil {
		t.Fatal(err)
	}
	after := readText(t, path)
	if !strings.Contains(after, "// the team's servers") || !strings.Contains(after, "// files") || strings.Contains(after, "time") {
		t.Fatalf("after remove:\n%s", after)
	}
	if err := RemoveServer(path, "time"); !errors.Is(err, ErrNoSuchServer) {
		t.Fatalf("second remove: %v, want ErrNoSuchServer", err)
	}
}

// TestRemoveServerEachPlace removes the first, a middle and the last
// member, and the only one.
func TestRemoveServerEachPlace(t *testing.T) {
	const file = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"},\n    \"b\": {\"command\": \"b\"},\n    \"c\": {\"command\": \"c\"}\n  }\n}\n"
	for _, tc := range []struct {
		name, want string
	}{
		{"a", "{\n  \"mcpServers\": {\n    \"b\": {\"command\": \"b\"},\n    \"c\": {\"command\": \"c\"}\n  }\n}\n"},
		{"b", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"},\n    \"c\": {\"command\": \"c\"}\n  }\n}\n"},
		{"c", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"},\n    \"b\": {\"command\": \"b\"}\n  }\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "servers.json")
			writeFile(t, path, file)
			if err := RemoveServer(path, tc.name); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, readText(t, path)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "servers.json")
	writeFile(t, path, `{"mcpServers": {"only": {"command": "x"}}}`)
	if err := RemoveServer(path, "only"); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, path); got != `{"mcpServers": {}}` {
		t.Fatalf("got %s", got)
	}
}

// TestAddServerDialects: each tool's file gets the server in its own
// field names, and a new file is created in the dialect its name says.
func TestAddServerDialects(t *testing.T) {
	remote := Entry{URL: "http://127.0.0.1:8080/mcp", Headers: map[string]string{"Authorization": "Bearer t"}}
	local := Entry{Command: "mcpvisor", Args: []string{"stdio"}, Env: map[string]string{"A": "1"}}
	for _, tc := range []struct {
		file  string
		e     Entry
		want  []string // substrings of the written file
		start string
	}{
		{file: ".vscode/mcp.json", e: local, want: []string{`"servers": {`, `"type": "stdio"`}},
		{file: ".vscode/mcp.json", e: remote, want: []string{`"type": "http"`, `"url": "http://127.0.0.1:8080/mcp"`}},
		{file: ".cursor/mcp.json", e: remote, want: []string{`"mcpServers"`, `"url": "http://127.0.0.1:8080/mcp"`}},
		{file: ".gemini/settings.json", e: remote, want: []string{`"httpUrl": "http://127.0.0.1:8080/mcp"`, `"theme": "x"`},
			start: `{"ui": {"theme": "x"}}`},
		{file: ".zed/settings.json", e: local, want: []string{`"context_servers"`, `"command": "mcpvisor"`, `"vim_mode": true`},
			start: "{\n  // Zed settings\n  \"vim_mode\": true\n}\n"},
		{file: ".codex/config.toml", e: local, want: []string{"model = \"o3\"\n", "[mcp_servers.new]\ncommand = \"mcpvisor\"\nargs = [\"stdio\"]\n", "[mcp_servers.new.env]\nA = \"1\"\n"},
			start: "model = \"o3\"\n"},
		{file: ".codex/config.toml", e: remote, want: []string{"url = \"http://127.0.0.1:8080/mcp\"", "[mcp_servers.new.http_headers]\nAuthorization = \"Bearer t\"\n"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), filepath.FromSlash(tc.file))
			if tc.start != "" {
				writeFile(t, path, tc.start)
			}
			if err := AddServer(path, "new", tc.e, false); err != nil {
				t.Fatal(err)
			}
			got := readText(t, path)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("file lacks %q:\n%s", w, got)
				}
			}
			cfg, err := Load(path)
			if err != nil {
				t.Fatalf("%v\n%s", err, got)
			}
			if len(cfg.Servers) != 1 || cfg.Servers[0].Name != "new" || cfg.Servers[0].URL != tc.e.URL || cfg.Servers[0].Command != tc.e.Command {
				t.Fatalf("loaded %+v", cfg.Servers)
			}
			if err := RemoveServer(path, "new"); err != nil {
				t.Fatal(err)
			}
			if names, err := ServerNames(path); err != nil || len(names) != 0 {
				t.Fatalf("after remove: %v %v\n%s", names, err, readText(t, path))
			}
		})
	}
	yaml := filepath.Join(t.TempDir(), "config.yaml")
	if err := AddServer(yaml, "new", local, false); err == nil || !strings.Contains(err.Error(), "by hand") {
		t.Fatalf("YAML: %v", err)
	}
}

// TestSetJSONCreatesThePath: SetJSON makes the objects on the way, keeps
// the rest of a machine-written file, and DeleteJSON takes the member out.
func TestSetJSONCreatesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude.json")
	writeFile(t, path, `{"numStartups": 3, "projects": {"/other": {"mcpServers": {}}}}`)
	keys := []string{"projects", "/work/p", "mcpServers", "mcpvisor"}
	if err := SetJSON(path, keys, json.RawMessage(`{"command":"mcpvisor","args":["stdio"]}`)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		NumStartups int
		Projects    map[string]struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		}
	}
	if err := json.Unmarshal([]byte(readText(t, path)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.NumStartups != 3 || len(doc.Projects) != 2 || doc.Projects["/work/p"].MCPServers["mcpvisor"] == nil {
		t.Fatalf("%s", readText(t, path))
	}
	if found, err := DeleteJSON(path, keys); err != nil || !found {
		t.Fatalf("delete: %v %v", found, err)
	}
	if strings.Contains(readText(t, path), "mcpvisor") {
		t.Fatalf("after delete: %s", readText(t, path))
	}
	if found, err := DeleteJSON(path, keys); err != nil || found {
		t.Fatalf("second delete: %v %v", found, err)
	}
}
