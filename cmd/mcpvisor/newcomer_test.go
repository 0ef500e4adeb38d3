package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// A newcomer's first minutes with the README's commands only: a server
// added with add, then the MCP inspector's CLI (the one-shot client people
// try first) lists and calls it through mcpvisor stdio, with no flag;
// with a sidecar running, the same through its /mcp with the token
// mcpvisor token prints, and through stdio, which now joins the sidecar.
func TestNewcomerInspectorCLI(t *testing.T) {
	node, script := peers.InspectorCLI(t)
	t.Setenv(configEnv, "")
	project := filepath.Join(t.TempDir(), "project")
	if err := os.MkdirAll(filepath.Join(project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(project)
	if _, errOut, code := cliExec("", "add", "notes", notesBin); code != 0 {
		t.Fatalf("add: exit %d: %s", code, errOut)
	}
	inspect := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{script, "--cli"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("inspector --cli %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	call := []string{"--method", "tools/call", "--tool-name", "mcp__notes__add", "--tool-arg", "a=2", "--tool-arg", "b=40"}

	if out := inspect(cliBin, "stdio", "--method", "tools/list"); !strings.Contains(out, `"mcp__notes__add"`) {
		t.Fatalf("tools/list through stdio:\n%s", out)
	}
	if out := inspect(append([]string{cliBin, "stdio"}, call...)...); !strings.Contains(out, `"42"`) {
		t.Fatalf("tools/call through stdio:\n%s", out)
	}

	s := startSidecar(t, "--config", filepath.Join(project, ".mcp.json"), "--data", filepath.Join(project, ".mcpvisor"))
	tok, errOut, code := cliExec("", "token")
	if code != 0 {
		t.Fatalf("token: exit %d: %s", code, errOut)
	}
	url := listening.FindStringSubmatch(s.stderr.String())
	if url == nil {
		t.Fatalf("no address in serve's banner: %s", s.stderr)
	}
	http := append([]string{url[1] + "/mcp", "--transport", "http", "--header", "Authorization: Bearer " + strings.TrimSpace(tok)}, call...)
	if out := inspect(http...); !strings.Contains(out, `"42"`) {
		t.Fatalf("tools/call through the sidecar's /mcp:\n%s", out)
	}
	if out := inspect(append([]string{cliBin, "stdio"}, call...)...); !strings.Contains(out, `"42"`) {
		t.Fatalf("tools/call through stdio beside the sidecar:\n%s", out)
	}
}
