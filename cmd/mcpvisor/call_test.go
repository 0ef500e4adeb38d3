package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/sidecar"
)

// cliExec runs the mcpvisor binary with stdin as its input; it never
// fails the test, so goroutines may call it (code -1: it did not run).
func cliExec(stdin string, args ...string) (stdout, stderr string, code int) {
	cmd := exec.Command(cliBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return runCmd(cmd)
}

// runCmd runs cmd and returns what it wrote and its exit status; code -1
// and the error as stderr when it did not run.
func runCmd(cmd *exec.Cmd) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return "", err.Error(), -1
	}
	return out.String(), errb.String(), code
}

// bigArguments is a JSON object of about n bytes, compact, its keys
// sorted: as mcptest's echo answers it.
func bigArguments(n int) string {
	b, _ := json.Marshal(map[string]any{"blob": strings.Repeat("x", n), "n": []int{1, 2, 3}})
	return string(b)
}

func indented(t *testing.T, compact string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(compact), "", "  "); err != nil {
		t.Fatal(err)
	}
	return b.String() + "\n"
}

// Arguments over the 128 KiB a command-line argument holds come from
// stdin (-) or a file (@FILE), through a real server and back.
func TestCallArgumentsFromStdinAndFile(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"t": {"command": "MCPTEST"}}}`)
	args := bigArguments(300 << 10)
	file := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(file, []byte(args), 0o600); err != nil {
		t.Fatal(err)
	}
	want := indented(t, args)
	for _, tc := range []struct {
		name, stdin, arg string
	}{
		{"stdin", args, "-"},
		{"file", "", "@" + file},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := cliExec(tc.stdin, "call", "--config", cfg, "--data", t.TempDir(), "mcp__t__echo", tc.arg)
			if code != 0 || out != want {
				t.Errorf("exit %d, %d bytes out (want %d, indented), stderr %q", code, len(out), len(want), errOut)
			}
		})
	}
}

// A result prints as the model is given it, JSON indented; --raw as it
// is; --json the whole result.
func TestCallOutput(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"t": {"command": "MCPTEST"}, "notes": {"command": "NOTES"}}}`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"structuredContent", []string{"mcp__t__structured"}, "{\n  \"x\": 1\n}\n"},
		{"structuredContent --raw", []string{"mcp__t__structured", "--raw"}, "{\"x\":1}\n"},
		{"text that is JSON", []string{"mcp__t__echo", `{"a":[1,{"b":"c"}]}`}, "{\n  \"a\": [\n    1,\n    {\n      \"b\": \"c\"\n    }\n  ]\n}\n"},
		{"text that is JSON --raw", []string{"mcp__t__echo", `{"a":[1,{"b":"c"}]}`, "--raw"}, "{\"a\":[1,{\"b\":\"c\"}]}\n"},
		{"text", []string{"mcp__t__slow", `{"ms":0}`}, "slept 0 ms\n"},
		{"a number", []string{"mcp__notes__add", `{"a":2,"b":40}`}, "42\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, append([]string{"call", "--config", cfg}, tc.args...)...)
			if code != 0 || out != tc.want {
				t.Errorf("exit %d, stdout %q, want %q (stderr %q)", code, out, tc.want, errOut)
			}
		})
	}
	out, _, code := runCLI(t, "call", "--config", cfg, "mcp__t__structured", "--json")
	var res sidecar.ResultView
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Wire != `{"x":1}` || !strings.HasPrefix(out, "{\n  \"type\": \"json\",") {
		t.Errorf("--json: exit %d, %q (%v)", code, out, err)
	}
}

// Arguments that are not a JSON object are a usage error (exit 2), and
// invalid JSON is said with its line and column.
func TestCallArgumentErrors(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"t": {"command": "MCPTEST"}}}`)
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"argument", "", []string{`{bad`}, "arguments from ARGS_JSON: not valid JSON: line 1, column 2: invalid character 'b'"},
		{"stdin", "{\n  \"a\": 1,\n}", []string{"-"}, "arguments from stdin: not valid JSON: line 3, column 1: invalid character '}'"},
		{"cut short", "{\"a\":", []string{"-"}, "line 1, column 6: unexpected end of JSON input"},
		{"empty stdin", "", []string{"-"}, "line 1, column 1: unexpected end of JSON input"},
		{"not an object", "", []string{`[1]`}, "arguments from ARGS_JSON: want a JSON object, not an array"},
		{"no file", "", []string{"@/nonexistent/args.json"}, "/nonexistent/args.json"},
		{"--json and --raw", "", []string{"{}", "--json", "--raw"}, "pass one"},
		{"no tool", "", nil, "want TOOL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"call", "--config", cfg, "--data", t.TempDir()}, tc.args...)
			if tc.args != nil {
				args = append([]string{"call", "--config", cfg, "--data", t.TempDir(), "mcp__t__echo"}, tc.args...)
			}
			out, errOut, code := cliExec(tc.stdin, args...)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, tc.want)
			}
		})
	}
}

// A standalone call's image is written under the data directory and
// linked by its path there (no sidecar serves /v1/media), a file that
// holds the image.
func TestCallMediaLinksArePaths(t *testing.T) {
	data := t.TempDir()
	cfg := writeConfig(t, `{"mcpServers": {"m": {"command": "MCPTEST"}}}`)
	out, errOut, code := runCLIData(t, data, "call", "--config", cfg, "mcp__m__image")
	if code != 0 {
		t.Fatalf("call: exit %d: %s", code, errOut)
	}
	media, err := filepath.Abs(filepath.Join(data, "media"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\]\(([^)]+)\)`).FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(m[1], media+string(filepath.Separator)) || strings.Contains(out, "/v1/media/") {
		t.Fatalf("the image's link is not a path under %s: %q", media, out)
	}
	if b, err := os.ReadFile(m[1]); err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Fatalf("the linked file: %v (%d bytes)", err, len(b))
	}
}
