package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// clientFiles are the agent tools' documented config files in
// testdata/clients, each at the path its tool reads, with what the CLI
// must list from it. Every stdio server in them is an MCP reference server
// started as the tools' documentation shows, with npx; every remote one is
// on a loopback address, which mcpvisor refuses without allowPrivate, so
// that none of them reaches the network.
var clientFiles = []struct {
	file string
	// tools must be listed (one of each server, by its namespaced name);
	// absent must not be (a tool the file excludes).
	tools, absent []string
	// refused are the remote servers, on loopback where nothing listens,
	// which fail to start.
	refused []string
}{{
	file:    "claude-code/.mcp.json",
	tools:   []string{"mcp__filesystem__list_directory", "mcp__memory__read_graph"},
	refused: []string{"api-server"},
}, {
	file:  "claude-desktop/claude_desktop_config.json",
	tools: []string{"mcp__filesystem__list_directory", "mcp__everything__echo"},
}, {
	file:    "cursor/.cursor/mcp.json",
	tools:   []string{"mcp__memory__read_graph", "mcp__filesystem__list_directory"},
	refused: []string{"remote-server"},
}, {
	file:    "vscode/.vscode/mcp.json",
	tools:   []string{"mcp__memory__read_graph", "mcp__filesystem__list_directory", "mcp__sequential-thinking__sequentialthinking"},
	refused: []string{"my-remote"},
}, {
	file:    "gemini/.gemini/settings.json",
	tools:   []string{"mcp__memory__read_graph", "mcp__sequentialThinking__sequentialthinking"},
	refused: []string{"httpServer", "sseServer"},
}, {
	file:    "codex/.codex/config.toml",
	tools:   []string{"mcp__memory__read_graph", "mcp__sequential-thinking__sequentialthinking"},
	refused: []string{"chrome_devtools"}, // figma is disabled
}, {
	file:    "zed/settings.json",
	tools:   []string{"mcp__memory__read_graph", "mcp__sequential-thinking__sequentialthinking"},
	refused: []string{"remote-mcp-server"}, // mcp-server-context7 is a Zed extension, skipped
}, {
	file:    "windsurf/mcp_config.json",
	tools:   []string{"mcp__filesystem__list_directory", "mcp__memory__read_graph"},
	absent:  []string{"mcp__memory__delete_entities", "mcp__memory__delete_relations"}, // disabledTools
	refused: []string{"remote-http-mcp"},
}, {
	file:    "cline/cline_mcp_settings.json",
	tools:   []string{"mcp__memory__read_graph", "mcp__sequential-thinking__sequentialthinking"},
	refused: []string{"remote-server"}, // streamable-server is disabled
}, {
	file:    "roo/.roo/mcp.json",
	tools:   []string{"mcp__filesystem__list_directory", "mcp__memory__read_graph"},
	absent:  []string{"mcp__filesystem__write_file", "mcp__filesystem__edit_file"}, // disabledTools
	refused: []string{"modern-remote-server"},
}, {
	file:    "continue/.continue/config.yaml",
	tools:   []string{"mcp__Memory__read_graph", "mcp__Filesystem__list_directory"},
	refused: []string{"Remote"},
}, {
	file:  "continue/.continue/mcpServers/sequential-thinking.yaml",
	tools: []string{"mcp__Sequential-thinking__sequentialthinking"},
}}

// TestClientFiles runs `mcpvisor tools --config FILE --json` on every
// agent tool's documented file, unchanged, and checks that the tools of
// its servers are listed. npx is a stand-in that runs the reference
// servers installed by scripts/peers.sh (internal/peers.NPX), so the
// files start their servers as written, offline.
func TestClientFiles(t *testing.T) {
	npx := peers.NPX(t) // skips when the reference servers are not installed
	root, err := peers.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "testdata", "clients")

	t.Run("every file is listed", func(t *testing.T) {
		var files, listed []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() != ".env" {
				rel, _ := filepath.Rel(dir, p)
				files = append(files, filepath.ToSlash(rel))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range clientFiles {
			listed = append(listed, c.file)
		}
		slices.Sort(files)
		slices.Sort(listed)
		if diff := cmp.Diff(listed, files); diff != "" {
			t.Errorf("testdata/clients (-listed +present):\n%s", diff)
		}
	})

	for _, c := range clientFiles {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			memory := filepath.Join(tmp, "memory.json")
			env := []string{
				"PATH=" + npx + string(os.PathListSeparator) + os.Getenv("PATH"),
				"HOME=" + tmp, // Cursor's file keeps its memory under ${userHome}
				// What the files reference.
				"MEMORY_FILE_PATH=" + memory, "MEMORY_FILE=" + memory, "ROO_MEMORY_FILE=" + memory,
				"MCPVISOR_INPUT_MEMORY_FILE=" + memory, // VS Code's ${input:memory-file}
				"API_KEY=k", "MY_SERVICE_TOKEN=s", "AUTH_TOKEN=a", "REMOTE_TOKEN=r",
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, cliBin, "tools", "--config", filepath.Join(dir, filepath.FromSlash(c.file)),
				"--data", filepath.Join(tmp, "data"), "--json", "--wait", "60s")
			cmd.Env = withEnv(os.Environ(), env)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			switch {
			case err == nil && len(c.refused) > 0:
				t.Errorf("exit 0, want 1: %v should fail to start\nstderr:\n%s", c.refused, stderr.String())
			case err != nil && (!errors.As(err, &exit) || len(c.refused) == 0):
				t.Fatalf("tools: %v\nstderr:\n%s", err, stderr.String())
			}

			var tools []struct{ Name, Server string }
			if err := json.Unmarshal(stdout.Bytes(), &tools); err != nil {
				t.Fatalf("stdout is not a JSON array of tools: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			var names []string
			for _, tl := range tools {
				names = append(names, tl.Name)
			}
			for _, want := range c.tools {
				if !slices.Contains(names, want) {
					t.Errorf("%s not listed; listed: %v\nstderr:\n%s", want, names, stderr.String())
				}
			}
			for _, no := range c.absent {
				if slices.Contains(names, no) {
					t.Errorf("%s listed, but the file excludes it", no)
				}
			}
			for _, name := range c.refused {
				// A loopback server of the user's own file is dialed, with
				// no warning and no guard in the way: nothing listens there,
				// so it fails to start, and says so.
				if strings.Contains(stderr.String(), `server "`+name+`": url http://`) || strings.Contains(stderr.String(), "non-public address") {
					t.Errorf("a loopback server of the user's file was warned of or refused:\n%s", stderr.String())
				}
				if !strings.Contains(stderr.String(), `server "`+name+`" is `) {
					t.Errorf("%s not reported as failing to start in stderr:\n%s", name, stderr.String())
				}
			}
		})
	}
}

// withEnv is environ with the variables of set added, replacing any of
// the same name.
func withEnv(environ, set []string) []string {
	names := map[string]bool{}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	out := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return names[k]
	})
	return append(out, set...)
}
