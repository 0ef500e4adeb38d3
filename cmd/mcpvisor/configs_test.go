package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
)

// --config given twice merges the files: the later file's server replaces
// the earlier one's of the same name, and the collision is said.
func TestConfigRepeated(t *testing.T) {
	first := writeConfig(t, `{"mcpServers": {"notes": {"command": "NOTES"}, "keep": {"command": "NOTES"}}}`)
	second := writeConfig(t, `{"servers": {"notes": {"type": "stdio", "command": "MCPTEST", "args": ["-name", "second"]}}}`)
	out, errOut, code := runCLI(t, "tools", "--config", first, "--config", second, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Name] = true
	}
	// mcptest has echo, the notes server has not; keep's notes tools stay.
	if !names["mcp__notes__echo"] || !names["mcp__keep__note_put"] {
		t.Errorf("tools %v: want notes from the second file and keep from the first", names)
	}
	if !strings.Contains(errOut, first) || !strings.Contains(errOut, second) || !strings.Contains(errOut, `"notes"`) {
		t.Errorf("stderr does not name the collision and both files:\n%s", errOut)
	}
}

// The warnings of a file that fails to load are printed with its errors:
// an unknown field is often why an entry is incomplete.
func TestConfigWarningsOnFailure(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"a": {"comand": "NOTES"}}}`)
	_, errOut, code := runCLI(t, "tools", "--config", cfg)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(errOut, `unknown field "comand"`) || !strings.Contains(errOut, `field "command": required`) {
		t.Errorf("stderr lacks the warning or the error:\n%s", errOut)
	}
}

// A VS Code input with no answer and no terminal to ask on is a config
// error (exit 2) naming the server, the field and the input, and saying
// which variable gives it; with the variable set the server starts.
func TestConfigInputFromEnvironment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "proj", ".vscode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mcp.json")
	body := `{"inputs": [{"type": "promptString", "id": "srv-name", "description": "Name"}],
	  "servers": {"in": {"type": "stdio", "command": "` + mcptestBin + `", "args": ["-name", "${input:srv-name}"]}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "status", "--config", cfg)
	want := `server "in": field "args[1]": input "srv-name" has no answer`
	if code != 2 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "set MCPVISOR_INPUT_SRV_NAME") {
		t.Errorf("unanswered input: exit %d, stderr %q; want 2 and %q, naming MCPVISOR_INPUT_SRV_NAME", code, errOut, want)
	}
	t.Setenv("MCPVISOR_INPUT_SRV_NAME", "from-env")
	out, errOut, code := runCLI(t, "status", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var sts []mcpvisor.ServerStatus
	if err := json.Unmarshal([]byte(out), &sts); err != nil || len(sts) != 1 || sts[0].ServerInfo.Name != "from-env" {
		t.Errorf("status %s (%v): want the server named from-env", out, err)
	}
}

func TestPromptInput(t *testing.T) {
	in := bufio.NewReader(strings.NewReader("\nred\nblue\n"))
	var w strings.Builder
	ask := promptInput(in, &w, nil)
	got, err := ask(context.Background(), mcpvisor.InputRequest{Server: "s", ID: "colour", Options: []string{"blue", "green"}})
	if err != nil || got != "blue" {
		t.Fatalf("= %q, %v; want blue after an empty line and a wrong one", got, err)
	}
	if !strings.Contains(w.String(), "an answer is needed") || !strings.Contains(w.String(), "want one of blue, green") ||
		!strings.Contains(w.String(), "MCPVISOR_INPUT_COLOUR") {
		t.Errorf("prompt:\n%s", w.String())
	}
	got, err = promptInput(bufio.NewReader(strings.NewReader("\n")), &w, nil)(context.Background(),
		mcpvisor.InputRequest{Server: "s", ID: "dir", Default: "/tmp"})
	if err != nil || got != "/tmp" {
		t.Errorf("empty line with a default = %q, %v; want /tmp", got, err)
	}
	got, err = promptInput(bufio.NewReader(strings.NewReader("")), &w, func() (string, error) { return "s3cret\n", nil })(context.Background(),
		mcpvisor.InputRequest{Server: "s", ID: "token", Password: true})
	if err != nil || got != "s3cret" {
		t.Errorf("password = %q, %v", got, err)
	}
}

// A tool name models would refuse is listed under its mapped name, with
// the server's own beside it.
func TestToolsShowsMappedName(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"w": {"command": "MCPTEST", "args": ["-tool-name", "get weather"]}}}`)
	out, errOut, code := runCLI(t, "tools", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var line string
	for l := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(l, "mcp__w__get_weather ") {
			line = l
		}
	}
	if !strings.Contains(line, `[server's name: "get weather"]`) {
		t.Errorf("no mapped line with the server's name in:\n%s", out)
	}
}

// call --detach without a sidecar says that a stdio server's task stops
// with the command, and how to keep it.
func TestDetachWithoutSidecarWarns(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"t": {"command": "MCPTEST"}}}`)
	_, errOut, code := runCLI(t, "call", "--config", cfg, "--detach", "mcp__t__sleep_task", `{"ms":10}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "no sidecar runs on") || !strings.Contains(errOut, "mcpvisor serve --data") {
		t.Errorf("stderr does not warn that the task stops with the command:\n%s", errOut)
	}
}
