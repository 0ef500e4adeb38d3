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
