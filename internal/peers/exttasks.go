package peers

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// ExtTasksVersion is the version of @modelcontextprotocol/ext-tasks, the
// official client of the tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663), that scripts/peers.sh installs beside the v2 client it runs
// on; keep the two in step.
const ExtTasksVersion = "0.2.2"

const extTasksDir = "node_modules/@modelcontextprotocol/ext-tasks"

// ExtTasks returns node, the directory of the TypeScript SDK's v2 client
// (as ClientV2) and the directory of @modelcontextprotocol/ext-tasks, all
// absolute, or skips the test when any is not installed (fails it when CI
// is set). It starts nothing.
//
// ext-tasks is an ES module package that a script outside the cache
// imports by file URL: "@modelcontextprotocol/ext-tasks/client" is
// extTasks/dist/client/index.js. It imports the client by name, which
// resolves in the cache to the same files as client/dist/index.mjs.
func ExtTasks(t testing.TB) (node, client, extTasks string) {
	t.Helper()
	node, client = ClientV2(t)
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	extTasks, err = checkExtTasks(root)
	if err != nil {
		testenv.Unavailable(t, "@modelcontextprotocol/ext-tasks not installed: run make peers (npm unreachable?): %v", err)
	}
	return node, client, extTasks
}

// checkExtTasks verifies the pinned ext-tasks in the cache under root and
// returns its absolute directory. It reads files only.
func checkExtTasks(root string) (string, error) {
	dir := filepath.Join(root, filepath.FromSlash(cacheDir), filepath.FromSlash(extTasksDir))
	if _, err := os.Stat(filepath.Join(dir, "dist", "client", "index.js")); err != nil {
		return "", fmt.Errorf("no dist/client/index.js in %s", dir)
	}
	v, err := packageVersion(dir)
	if err != nil {
		return "", err
	}
	if v != ExtTasksVersion {
		return "", fmt.Errorf("@modelcontextprotocol/ext-tasks %s installed, want %s", v, ExtTasksVersion)
	}
	return dir, nil
}
