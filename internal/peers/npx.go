package peers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// ReferenceServers are the npm packages of the MCP reference servers that
// scripts/peers.sh installs, each at Version: the servers the agent tools'
// documented config files start with npx.
var ReferenceServers = []string{
	"@modelcontextprotocol/server-everything",
	"@modelcontextprotocol/server-filesystem",
	"@modelcontextprotocol/server-memory",
	"@modelcontextprotocol/server-sequential-thinking",
}

// NPX writes a stand-in for npx into a new temporary directory and
// returns the directory, to put first in PATH, or skips the test when the
// reference servers are not installed. It starts nothing.
//
// A config file that says `"command": "npx", "args": ["-y",
// "@modelcontextprotocol/server-memory"]` then runs, unchanged and
// offline, the installed package's bin (node …/dist/index.js) with the
// arguments that follow the package name, as npx would once the package
// is in its cache. The stand-in knows only the packages of
// ReferenceServers, written bare or @latest or @Version; for any other it
// says so on stderr and exits 127, as a missing command does.
func NPX(t testing.TB) (dir string) {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	node, entries, err := checkReferenceServers(root)
	if err != nil {
		testenv.Unavailable(t, "the MCP reference servers are not installed: run make peers (npm unreachable?): %v", err)
	}
	var cases strings.Builder
	for _, pkg := range ReferenceServers {
		fmt.Fprintf(&cases, "\t%s|%s@latest|%s@%s) entry=%s ;;\n", pkg, pkg, pkg, Version, shellQuote(entries[pkg]))
	}
	script := `#!/bin/sh
# npx stand-in for tests (internal/peers.NPX): runs an MCP reference server
# installed in .cache/peers, offline, as npx runs a cached package.
while [ $# -gt 0 ]; do
	case $1 in
	-y|--yes|--quiet|-q) shift ;;
	*) break ;;
	esac
done
pkg=$1
[ $# -gt 0 ] && shift
case $pkg in
` + cases.String() + `	*) echo "npx (test stand-in): $pkg is not one of the reference servers installed in .cache/peers" >&2; exit 127 ;;
esac
exec ` + shellQuote(node) + ` "$entry" "$@"
`
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "npx"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkReferenceServers verifies node and the pinned reference servers in
// the cache under root and returns node and each package's entry script,
// absolute. It reads files only.
func checkReferenceServers(root string) (node string, entries map[string]string, err error) {
	cache := filepath.Join(root, filepath.FromSlash(cacheDir))
	node = filepath.Join(cache, filepath.FromSlash(nodeBin))
	if st, err := os.Stat(node); err != nil || st.Mode()&0o111 == 0 {
		return "", nil, fmt.Errorf("no node at %s", node)
	}
	entries = map[string]string{}
	for _, pkg := range ReferenceServers {
		dir := filepath.Join(cache, "node_modules", filepath.FromSlash(pkg))
		script := filepath.Join(dir, "dist", "index.js") // each package's "bin"
		if _, err := os.Stat(script); err != nil {
			return "", nil, fmt.Errorf("no %s", script)
		}
		v, err := packageVersion(dir)
		if err != nil {
			return "", nil, err
		}
		if v != Version {
			return "", nil, fmt.Errorf("%s %s installed, want %s", pkg, v, Version)
		}
		entries[pkg] = script
	}
	return node, entries, nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
