package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// connectProject is a project whose .mcp.json runs the notes server, in a
// home directory of its own; the CLI runs there.
func connectProject(t *testing.T) (project, home string, env []string) {
	t.Helper()
	t.Setenv(configEnv, "")
	home = t.TempDir()
	project = filepath.Join(t.TempDir(), "project")
	if err := os.MkdirAll(filepath.Join(project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	put(t, project, ".mcp.json", "{\n  // the project's servers\n  \"mcpServers\": {\"notes\": {\"command\": \"NOTES\"}}\n}\n")
	t.Chdir(project)
	return project, home, []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
}

// connect claude-code writes mcpvisor into Claude Code's own file for
// the project (never into the .mcp.json mcpvisor reads), disables the
// servers Claude Code would otherwise run a second time, and what it
// writes works: the real Claude Code connects to it, and the entry, run as
// written, serves the project's tools. --remove takes it all out again.
func TestConnectClaudeCode(t *testing.T) {
	project, home, env := connectProject(t)
	before, _ := os.ReadFile(filepath.Join(project, ".mcp.json"))
	out, errOut, code := cliExecEnv(env, "connect", "claude-code")
	if code != 0 {
		t.Fatalf("connect: exit %d: %s %s", code, out, errOut)
	}
	if after, _ := os.ReadFile(filepath.Join(project, ".mcp.json")); !bytes.Equal(before, after) {
		t.Fatalf("connect changed the .mcp.json mcpvisor reads:\n%s", after)
	}
	var doc struct {
		Projects map[string]struct {
			MCPServers             map[string]claudeEntry `json:"mcpServers"`
			DisabledMcpjsonServers []string               `json:"disabledMcpjsonServers"`
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".claude.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	p := doc.Projects[project]
	entry, ok := p.MCPServers["mcpvisor"]
	if !ok || entry.Type != "stdio" || strings.Join(p.DisabledMcpjsonServers, ",") != "notes" {
		t.Fatalf("~/.claude.json: %s", b)
	}
	wantArgs := []string{"stdio", "--config", filepath.Join(project, ".mcp.json"), "--data", filepath.Join(project, ".mcpvisor")}
	if strings.Join(entry.Args, " ") != strings.Join(wantArgs, " ") || !filepath.IsAbs(entry.Command) {
		t.Fatalf("the entry: %+v, want args %v", entry, wantArgs)
	}

	// The entry as written, from another directory: the project's tools.
	c := startEntry(t, entry.Command, entry.Args, t.TempDir())
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.answer("1")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if res := c.answer("2"); !strings.Contains(string(res["result"]), `"mcp__notes__`) {
		t.Fatalf("tools/list through the entry: %s", res["result"])
	}
	c.in.Close()

	// Claude Code itself: claude mcp list checks each server's health.
	claude := peers.ClaudeCode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "mcp", "list")
	cmd.Env = append(os.Environ(), env...)
	listed, err := cmd.CombinedOutput()
	if err != nil || !regexpConnected(string(listed)) {
		t.Fatalf("claude mcp list: %v\n%s", err, listed)
	}

	// Twice is once; --remove undoes both changes.
	if _, errOut, code = cliExecEnv(env, "connect", "claude-code"); code != 0 {
		t.Fatalf("connect again: exit %d: %s", code, errOut)
	}
	if out, errOut, code = cliExecEnv(env, "connect", "--remove", "claude-code"); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("connect --remove: exit %d: %s %s", code, out, errOut)
	}
	b, _ = os.ReadFile(filepath.Join(home, ".claude.json"))
	doc.Projects = nil
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if p := doc.Projects[project]; len(p.MCPServers) != 0 || len(p.DisabledMcpjsonServers) != 0 {
		t.Fatalf("after --remove: %s", b)
	}
}

// regexpConnected reports whether claude mcp list says mcpvisor connected.
func regexpConnected(out string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "mcpvisor:") && strings.Contains(line, "Connected") {
			return true
		}
	}
	return false
}

// startEntry runs a client's stdio entry in dir.
func startEntry(t *testing.T, command string, args []string, dir string) *stdioClient {
	t.Helper()
	if filepath.Base(command) != filepath.Base(cliBin) && command != cliBin {
		t.Fatalf("the entry runs %s, not mcpvisor", command)
	}
	wd, _ := os.Getwd()
	t.Chdir(dir)
	defer t.Chdir(wd)
	return startStdio(t, args[1:]...)
}

// The other clients: each file in its own dialect, mcpvisor never written
// into a file it reads (the user's file instead), an entry that runs
// mcpvisor stdio skipped when a config is read, --print writing nothing.
func TestConnectOtherClients(t *testing.T) {
	project, home, env := connectProject(t)
	for _, tc := range []struct {
		client, file string
	}{
		{"vscode", filepath.Join(project, ".vscode", "mcp.json")},
		{"cursor", filepath.Join(project, ".cursor", "mcp.json")},
		{"gemini", filepath.Join(project, ".gemini", "settings.json")},
		{"codex", filepath.Join(home, ".codex", "config.toml")},
		{"claude-desktop", filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")},
	} {
		if out, errOut, code := cliExecEnv(env, "connect", tc.client, "--print"); code != 0 || !strings.Contains(errOut, tc.file) || !strings.Contains(out, "stdio") {
			t.Fatalf("connect %s --print: exit %d: %s %s", tc.client, code, out, errOut)
		}
		if _, err := os.Stat(tc.file); err == nil {
			t.Fatalf("--print wrote %s", tc.file)
		}
		if out, errOut, code := cliExecEnv(env, "connect", tc.client); code != 0 || !strings.Contains(out, tc.file) {
			t.Fatalf("connect %s: exit %d: %s %s", tc.client, code, out, errOut)
		}
		cfg, err := config.Load(tc.file)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if len(cfg.Servers) != 1 || cfg.Servers[0].Name != "mcpvisor" || cfg.Servers[0].Args[0] != "stdio" {
			t.Fatalf("%s: %+v", tc.file, cfg.Servers)
		}
	}

	// mcpvisor reading the VS Code file: connect vscode writes VS Code's
	// user file, and the entry there is not run by mcpvisor.
	vscode := filepath.Join(project, ".vscode", "mcp.json")
	put(t, project, ".vscode/mcp.json", `{"servers": {"notes": {"type": "stdio", "command": "NOTES"}}}`)
	user := filepath.Join(home, ".config", "Code", "User", "mcp.json")
	if out, errOut, code := cliExecEnv(env, "connect", "--config", vscode, "vscode"); code != 0 || !strings.Contains(out, user) {
		t.Fatalf("connect vscode reading its file: exit %d: %s %s", code, out, errOut)
	}
	out, errOut, code := cliExecEnv(env, "tools", "--config", user, "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" || !strings.Contains(errOut, `server "mcpvisor" runs mcpvisor stdio`) {
		t.Fatalf("tools of a file with the entry: exit %d: %s %s", code, out, errOut)
	}

	if _, errOut, code := cliExecEnv(env, "connect", "emacs"); code != 2 || !strings.Contains(errOut, "claude-code") {
		t.Fatalf("an unknown client: exit %d: %s", code, errOut)
	}
	if _, errOut, code := cliExecEnv(env, "connect", "--http", "cursor"); code != 1 || !strings.Contains(errOut, "no sidecar") {
		t.Fatalf("--http without a sidecar: exit %d: %s", code, errOut)
	}
}

// connect --http writes the running sidecar's /mcp and its token.
func TestConnectHTTP(t *testing.T) {
	project, _, env := connectProject(t)
	data := filepath.Join(project, ".mcpvisor")
	startSidecar(t, "--config", filepath.Join(project, ".mcp.json"), "--data", data)
	if out, errOut, code := cliExecEnv(env, "connect", "--http", "cursor"); code != 0 {
		t.Fatalf("connect --http: exit %d: %s %s", code, out, errOut)
	}
	cfg, err := config.Load(filepath.Join(project, ".cursor", "mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := os.ReadFile(filepath.Join(data, "token"))
	s := cfg.Servers[0]
	if !strings.HasSuffix(s.URL, "/mcp") || s.Headers["Authorization"] != "Bearer "+strings.TrimSpace(string(tok)) {
		t.Fatalf("the entry: %+v", s)
	}
	if st, _ := os.Stat(filepath.Join(project, ".cursor", "mcp.json")); st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("a new file holding the token is mode %v", st.Mode().Perm())
	}
}
