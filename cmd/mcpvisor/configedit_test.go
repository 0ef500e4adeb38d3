package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// add, remove and list edit the project's file as claude mcp add does:
// a new .mcp.json when there is none, the found file otherwise, the
// command's own flags kept as given, the name refused twice; a sidecar
// running the file applies each change at once.
func TestAddRemoveList(t *testing.T) {
	t.Setenv(configEnv, "")
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(project)
	cfg := filepath.Join(project, ".mcp.json")

	out, errOut, code := runArgs("add", "notes", notesBin)
	if code != 0 || !strings.Contains(out, `added server "notes" to .mcp.json`) {
		t.Fatalf("add: exit %d: %s %s", code, out, errOut)
	}
	// The server's own flags after COMMAND, and after --.
	if _, errOut, code = runArgs("add", "-e", "TZ=UTC", "flags", "npx", "-y", "pkg", "--port", "1"); code != 0 {
		t.Fatalf("add with the command's flags: exit %d: %s", code, errOut)
	}
	if _, errOut, code = runArgs("add", "--", "dashes", "uvx", "-q"); code != 0 {
		t.Fatalf("add after --: exit %d: %s", code, errOut)
	}
	if _, errOut, code = runArgs("add", "web", "https://example.com/mcp", "-H", "X-Key: k"); code != 0 {
		t.Fatalf("add a URL: exit %d: %s", code, errOut)
	}
	if _, errOut, code = runArgs("add", "notes", "other"); code != 1 || !strings.Contains(errOut, "--force") {
		t.Fatalf("add a name twice: exit %d: %s", code, errOut)
	}
	if _, errOut, code = runArgs("add", "bad name", "x"); code != 2 {
		t.Fatalf("add an invalid name: exit %d: %s", code, errOut)
	}
	if _, errOut, code = runArgs("add", "h", "https://example.com", "-e", "A=1"); code != 2 || !strings.Contains(errOut, "--header") {
		t.Fatalf("add a URL with --env: exit %d: %s", code, errOut)
	}

	out, errOut, code = runArgs("list", "--json")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	var list []listEntry
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("list --json: %v: %s", err, out)
	}
	got := map[string]listEntry{}
	for _, le := range list {
		got[le.Name] = le
	}
	if len(list) != 4 || got["notes"].Target != notesBin || got["notes"].Transport != "stdio" ||
		got["flags"].Target != "npx -y pkg --port 1" || got["dashes"].Target != "uvx -q" ||
		got["web"].Transport != "http" || got["web"].Target != "https://example.com/mcp" || got["notes"].File != cfg {
		t.Fatalf("list: %+v", list)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.Contains(string(b), `"TZ": "UTC"`) || !strings.Contains(string(b), `"X-Key": "k"`) {
		t.Fatalf("the file: %s", b)
	}
	for _, n := range []string{"flags", "dashes", "web"} {
		if out, errOut, code = runArgs("remove", n); code != 0 || !strings.Contains(out, "removed server") {
			t.Fatalf("remove %s: exit %d: %s %s", n, code, out, errOut)
		}
	}
	if _, errOut, code = runArgs("remove", "web"); code != 1 || !strings.Contains(errOut, `no server "web"`) {
		t.Fatalf("remove twice: exit %d: %s", code, errOut)
	}
	if out, _, _ = runArgs("list", "--names"); out != "notes\n" {
		t.Fatalf("list --names: %q", out)
	}

	// A sidecar running the file starts what add adds and stops what
	// remove removes.
	data := filepath.Join(project, ".mcpvisor")
	startSidecar(t, "--config", cfg, "--data", data)
	if _, errOut, code = runArgs("add", "--data", data, "second", notesBin); code != 0 || !strings.Contains(errOut, "reads the file again now") {
		t.Fatalf("add beside the sidecar: exit %d: %s", code, errOut)
	}
	waitList(t, data, func(states map[string]string) bool { return states["second"] == "ready" })
	if _, errOut, code = runArgs("remove", "--data", data, "second"); code != 0 {
		t.Fatalf("remove beside the sidecar: exit %d: %s", code, errOut)
	}
	waitList(t, data, func(states map[string]string) bool { _, ok := states["second"]; return !ok })
}

// waitList waits until the states list shows satisfy ok.
func waitList(t *testing.T, data string, ok func(map[string]string) bool) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		out, _, _ := cliExec("", "status", "--data", data, "--json", "--wait", "0s")
		var sts []struct{ Name, State string }
		if json.Unmarshal([]byte(out), &sts) != nil {
			continue
		}
		states := map[string]string{}
		for _, st := range sts {
			states[st.Name] = st.State
		}
		if ok(states) {
			return
		}
		last = out
	}
	t.Fatalf("the sidecar's servers did not change as expected: %s", last)
}
