package peers

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// ClaudeCodeVersion is the version of Anthropic's Claude Code CLI
// (@anthropic-ai/claude-code) that scripts/peers.sh installs; keep the two
// in step. Its `claude mcp list` connects to each configured server (an
// MCP handshake and a tools listing) without signing in to a model, which
// is how a test checks what mcpvisor connect writes for it.
const ClaudeCodeVersion = "2.1.197"

const claudeCodeDir = "node_modules/@anthropic-ai/claude-code"

// ClaudeCode returns the absolute path of the claude executable, or skips
// the test when it is not installed (fails it when CI is set). It starts
// nothing.
func ClaudeCode(t testing.TB) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := checkClaudeCode(root)
	if err != nil {
		testenv.Unavailable(t, "@anthropic-ai/claude-code not installed: run make peers (npm unreachable?): %v", err)
	}
	return bin
}

// checkClaudeCode verifies the pinned Claude Code in the cache under root.
func checkClaudeCode(root string) (string, error) {
	dir := filepath.Join(root, filepath.FromSlash(cacheDir), filepath.FromSlash(claudeCodeDir))
	bin := filepath.Join(dir, "bin", "claude.exe")
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("no claude at %s", bin)
	}
	v, err := packageVersion(dir)
	if err != nil {
		return "", err
	}
	if v != ClaudeCodeVersion {
		return "", fmt.Errorf("@anthropic-ai/claude-code %s installed, want %s", v, ClaudeCodeVersion)
	}
	return bin, nil
}

// InspectorVersion is the version of the MCP inspector
// (@modelcontextprotocol/inspector) that scripts/inspector.sh installs;
// keep the two in step.
const InspectorVersion = "2.12.0"

// InspectorCLI returns node and the inspector's command-line client
// script (run as node SCRIPT --cli ...), both absolute, or skips the test
// when either is not installed (fails it when CI is set).
func InspectorCLI(t testing.TB) (node, script string) {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(root, filepath.FromSlash(cacheDir), filepath.FromSlash(nodeBin))
	dir := filepath.Join(root, ".cache", "inspector", "node_modules", "@modelcontextprotocol", "inspector")
	script = filepath.Join(dir, "clients", "launcher", "build", "index.js")
	if _, err := os.Stat(script); err != nil {
		testenv.Unavailable(t, "@modelcontextprotocol/inspector not installed: run make peers (npm unreachable?): %v", err)
	}
	if v, err := packageVersion(dir); err != nil || v != InspectorVersion {
		testenv.Unavailable(t, "@modelcontextprotocol/inspector %s installed, want %s (%v)", v, InspectorVersion, err)
	}
	if _, err := os.Stat(node); err != nil {
		testenv.Unavailable(t, "no node at %s: run make peers", node)
	}
	return node, script
}
