package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
)

const askServer = `{"mcpServers": {"t": {"command": "MCPTEST"}}}`

// Through a sidecar, a call waiting on an elicitation says on stderr,
// once, what is asked and where to answer: the inbox page (and the
// command that prints its signed-in address, never a token) or
// `mcpvisor elicitations resolve`, whose answer the call then returns.
func TestCallThroughSidecarSaysElicitation(t *testing.T) {
	cfg := writeConfig(t, askServer)
	data := t.TempDir()
	startSidecar(t, "--config", cfg, "--data", data)

	cmd := exec.Command(cliBin, "call", "--data", data, "mcp__t__ask", `{"message":"Which colour?"}`)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var said strings.Builder
	resolve := regexp.MustCompile(`mcpvisor elicitations resolve (\S+) accept`)
	sc := bufio.NewScanner(pipe)
	var id string
	for id == "" && sc.Scan() {
		said.WriteString(sc.Text() + "\n")
		if m := resolve.FindStringSubmatch(sc.Text()); m != nil {
			id = m[1]
		}
	}
	if id == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the call never said how to answer its elicitation; stderr:\n%s", said.String())
	}
	if out, errOut, code := cliExec("", "elicitations", "resolve", id, "accept", `{"answer":"blue"}`, "--data", data); code != 0 {
		t.Fatalf("resolve: exit %d: %s %s", code, out, errOut)
	}
	for sc.Scan() {
		said.WriteString(sc.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("call: %v; stderr:\n%s", err, said.String())
	}
	if !strings.Contains(stdout.String(), `"blue"`) {
		t.Errorf("call printed %q, want the accepted answer", stdout.String())
	}
	got := said.String()
	for _, want := range []string{"mcp__t__ask waits for a person's answer: Which colour?", "answer (string, required)",
		"/ui/ (its signed-in address: mcpvisor token --url --data ", `accept '{"answer":"…"}'`} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "waits for a person's answer"); n != 1 {
		t.Errorf("the elicitation was said %d times, want once:\n%s", n, got)
	}
	for _, name := range []string{"token", "admin-token"} {
		if tok, err := os.ReadFile(filepath.Join(data, name)); err == nil && len(bytes.TrimSpace(tok)) > 0 &&
			strings.Contains(got, string(bytes.TrimSpace(tok))) {
			t.Errorf("stderr shows the %s", name)
		}
	}
}

// Standalone with no terminal, an elicitation is said on stderr with
// what could answer it, and the call is told cancel; the server's start
// is said apart from the call.
func TestCallStandaloneElicitationWithoutTerminal(t *testing.T) {
	cfg := writeConfig(t, askServer)
	out, errOut, code := cliExec("", "call", "--config", cfg, "--data", t.TempDir(), "mcp__t__ask", `{"message":"Which colour?"}`)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, `"cancel"`) {
		t.Errorf("stdout %q, want the server told cancel", out)
	}
	for _, want := range []string{"mcp__t__ask waits for a person's answer: Which colour?", "nobody can answer it here",
		"mcpvisor serve", "mcpvisor token --url"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !regexp.MustCompile(`server "t" started in \d+(\.\d)? m?s\n`).MatchString(errOut) {
		t.Errorf("stderr does not say the server's start:\n%s", errOut)
	}
}

// At a terminal, each field is asked on its own line, typed and checked;
// an answer of the wrong type is asked again, end of input declines.
func TestPromptElicitation(t *testing.T) {
	req := &mcpvisor.ElicitationRequest{Server: "t", Mode: mcpvisor.ElicitForm, Message: "Who?", Fields: []mcpvisor.ElicitationField{
		{Name: "name", Type: "string", Required: true},
		{Name: "age", Type: "integer"},
		{Name: "ok", Type: "boolean", Required: true},
		{Name: "pin", Type: "string", Sensitive: true, Required: true},
	}}
	for _, tc := range []struct {
		name, input string
		want        mcpvisor.ElicitationResponse
	}{
		{"accept", "Ada\nforty\n36\ny\n", mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept,
			Content: map[string]any{"name": "Ada", "age": int64(36), "ok": true, "pin": "1234"}}},
		{"optional left unset", "Ada\n\nno\n", mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept,
			Content: map[string]any{"name": "Ada", "ok": false, "pin": "1234"}}},
		{"end of input", "Ada\n", mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitDecline}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			secret := func() (string, error) { return "1234", nil }
			got, err := promptElicitation(req, bufio.NewReader(strings.NewReader(tc.input)), secret, callReporter{w: &w})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s\nprompts:\n%s", diff, w.String())
			}
		})
	}
}
