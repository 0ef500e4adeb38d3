package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/examples/servers/ssh/internal/sshdtest"
)

// Each of the 13 tools through the mcpvisor CLI (`mcpvisor call`), with the
// server registered in a config file, against the loopback sshd: what a
// person does from a clean clone.
func TestCLICallsEveryTool(t *testing.T) {
	t.Parallel()
	d := sshdtest.Start(t, sshdtest.Options{})
	d.SudoNopasswd(t)
	home, data := t.TempDir(), t.TempDir()
	knownHosts := filepath.Join(home, "known_hosts")
	if err := os.WriteFile(knownHosts, []byte(d.HostKeyLine()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	config := map[string]any{"mcpServers": map[string]any{"ssh": map[string]any{
		"command": bin.ssh,
		"env": map[string]string{
			"SSH_MCP_ALIASES":     filepath.Join(home, "aliases.json"),
			"SSH_MCP_KNOWN_HOSTS": knownHosts,
			"HOME":                home,
		},
		"timeout": "60s",
	}}}
	b, _ := json.Marshal(config)
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "up.txt")
	if err := os.WriteFile(local, []byte("uploaded\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	downloaded := filepath.Join(t.TempDir(), "down.txt")
	remote := filepath.Join(d.HomeDir(), "cli")

	call := func(tool string, args map[string]any) (string, string, int) {
		t.Helper()
		raw, _ := json.Marshal(args)
		cmd := exec.Command(bin.mcpvisor, "call", "--config", cfg, "--data", data, "mcp__ssh__"+tool, string(raw))
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("mcpvisor call %s: %v", tool, err)
		}
		return out.String(), errOut.String(), code
	}

	// systemd is absent from a container: the tool must say so.
	systemd := cliStep{"systemd", map[string]any{"alias": "box", "action": "list"}, ".service", false}
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		systemd.want, systemd.fail = "systemd is not available", true
	}
	steps := []cliStep{
		{"add_alias", map[string]any{"alias": "box", "host": d.Host(), "port": d.Port(), "user": d.User(), "auth": "key", "key_path": d.KeyPath(), "sudo": "nopasswd"}, "box", false},
		{"list_aliases", map[string]any{}, d.User(), false},
		{"upload", map[string]any{"alias": "box", "local_path": local, "remote_path": remote + "/"}, "", false},
		{"list_files", map[string]any{"alias": "box", "path": remote}, "up.txt", false},
		{"read_file", map[string]any{"alias": "box", "path": remote + "/up.txt"}, "     1\tuploaded", false},
		{"edit_file", map[string]any{"alias": "box", "path": remote + "/up.txt", "old_string": "uploaded", "new_string": "edited"}, "1 replacement", false},
		{"replace_lines", map[string]any{"alias": "box", "path": remote + "/up.txt", "start_line": 1, "end_line": 1, "content": "replaced"}, "Replaced lines 1-1", false},
		{"grep_files", map[string]any{"alias": "box", "pattern": "replaced", "path": remote}, "up.txt:1:replaced", false},
		{"download", map[string]any{"alias": "box", "remote_path": remote + "/up.txt", "local_path": downloaded}, "", false},
		{"exec", map[string]any{"alias": "box", "command": "id -u", "sudo": true}, "0", false},
		{"sysinfo", map[string]any{"alias": "box"}, "kernel: ", false},
		systemd,
		{"remove_alias", map[string]any{"alias": "box"}, "box", false},
	}
	seen := map[string]bool{}
	for _, s := range steps {
		seen[s.tool] = true
		out, errOut, code := call(s.tool, s.args)
		switch {
		case s.fail && (code == 0 || !strings.Contains(errOut, s.want)):
			t.Errorf("%s: exit %d, stderr %q; want a failure saying %q", s.tool, code, errOut, s.want)
		case !s.fail && (code != 0 || !strings.Contains(out, s.want)):
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want success with %q", s.tool, code, out, errOut, s.want)
		}
	}
	if len(seen) != 13 {
		t.Errorf("the CLI test covers %d tools, want 13", len(seen))
	}
	if b, err := os.ReadFile(downloaded); err != nil || string(b) != "replaced\n" {
		t.Errorf("downloaded file: %q, %v", b, err)
	}
}

// cliStep is one `mcpvisor call`: the tool, its arguments, and what its
// stdout (or, for a failure, stderr) must contain.
type cliStep struct {
	tool string
	args map[string]any
	want string
	fail bool
}
