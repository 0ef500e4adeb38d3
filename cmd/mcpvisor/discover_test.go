package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// put writes body (NOTES replaced by the notes server) at dir/name.
func put(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(body, "NOTES", notesBin)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// toolServers are the servers of tools --json's tools.
func toolServers(t *testing.T, out string) map[string]bool {
	t.Helper()
	var tools []struct{ Server string }
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	servers := map[string]bool{}
	for _, tl := range tools {
		servers[tl.Server] = true
	}
	return servers
}

// With no --config, a command finds the project's file: MCPVISOR_CONFIG
// first, else the first agent tool's file in the README's order, in the
// directory it runs in or the nearest above it up to the project's root,
// and says which; the data directory is then the project's.
func TestConfigDiscovery(t *testing.T) {
	t.Setenv(configEnv, "")
	root := t.TempDir()
	project := filepath.Join(root, "project")
	put(t, root, ".mcp.json", `{"mcpServers": {"outside": {"command": "NOTES"}}}`) // above the project's root
	if err := os.MkdirAll(filepath.Join(project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(project, "src", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)

	// Nothing in the project: the file above its root is not taken.
	_, errOut, code := runArgs("tools", "--json")
	if code != 2 || !strings.Contains(errOut, "no config file") || !strings.Contains(errOut, ".vscode/mcp.json") {
		t.Fatalf("no file in the project: exit %d: %s", code, errOut)
	}

	vscode := put(t, project, ".vscode/mcp.json", `{"servers": {"code": {"command": "NOTES"}}}`)
	out, errOut, code := runArgs("tools", "--json")
	if code != 0 || !strings.Contains(errOut, "using "+vscode) {
		t.Fatalf("VS Code's file from a subdirectory: exit %d: %s", code, errOut)
	}
	if s := toolServers(t, out); !s["code"] || len(s) != 1 {
		t.Fatalf("the servers of the file found: %v", s)
	}
	if _, err := os.Stat(filepath.Join(project, ".mcpvisor")); err != nil {
		t.Errorf("the data directory is not the project's: %v", err)
	}
	if _, err := os.Stat(filepath.Join(sub, ".mcpvisor")); err == nil {
		t.Error("a data directory was made where the command ran")
	}

	// Claude Code's file comes first.
	claude := put(t, project, ".mcp.json", `{"mcpServers": {"claude": {"command": "NOTES"}}}`)
	out, errOut, code = runArgs("tools", "--json")
	if s := toolServers(t, out); code != 0 || !s["claude"] || len(s) != 1 || !strings.Contains(errOut, "using "+claude) {
		t.Fatalf("with .mcp.json too: exit %d, servers %v: %s", code, s, errOut)
	}

	// MCPVISOR_CONFIG comes before any file.
	t.Setenv(configEnv, vscode)
	out, errOut, code = runArgs("tools", "--json")
	if s := toolServers(t, out); code != 0 || !s["code"] || len(s) != 1 || !strings.Contains(errOut, "from MCPVISOR_CONFIG") {
		t.Fatalf("MCPVISOR_CONFIG: exit %d, servers %v: %s", code, s, errOut)
	}

	// --config comes before both, and is not announced.
	other := writeConfig(t, `{"mcpServers": {"given": {"command": "NOTES"}}}`)
	out, errOut, code = runArgs("tools", "--json", "--config", other)
	if s := toolServers(t, out); code != 0 || !s["given"] || len(s) != 1 || strings.Contains(errOut, "using") {
		t.Fatalf("--config: exit %d, servers %v: %s", code, s, errOut)
	}
}
