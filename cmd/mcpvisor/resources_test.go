package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// featureConfig is a config with server-everything as "everything" (it
// declares resources and prompts) and mcptest as "plain" (neither).
func featureConfig(t *testing.T) string {
	t.Helper()
	node, args := peers.Everything(t)
	servers := map[string]any{
		"everything": map[string]any{"command": node, "args": args},
		"plain":      map[string]any{"command": "MCPTEST"},
	}
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, string(b))
}

func TestResourcesCommand(t *testing.T) {
	cfg := featureConfig(t)
	const doc = "demo://resource/static/document/features.md"

	t.Run("all servers json", func(t *testing.T) {
		out, errOut, code := runCLI(t, "resources", "--config", cfg, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var rs []struct{ Server, URI, Name, MimeType string }
		if err := json.Unmarshal([]byte(out), &rs); err != nil {
			t.Fatalf("not a JSON array: %v\n%s", err, out)
		}
		found := false
		for _, r := range rs {
			if r.Server != "everything" {
				t.Errorf("resource of %q listed: it declared no resources", r.Server)
			}
			found = found || r.URI == doc && r.Name == "features.md" && r.MimeType == "text/markdown"
		}
		if !found {
			t.Errorf("no %s in %s", doc, out)
		}
	})

	t.Run("one server table", func(t *testing.T) {
		out, errOut, code := runCLI(t, "resources", "--config", cfg, "--server", "everything")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !regexp.MustCompile(`(?m)^SERVER +URI +NAME +MIME TYPE +TITLE$`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^everything +`+regexp.QuoteMeta(doc)+` +features\.md +text/markdown +-$`).MatchString(out) {
			t.Errorf("table:\n%s", out)
		}
		out, errOut, code = runCLI(t, "resources", "--templates", "--config", cfg, "--server", "everything")
		if code != 0 || !strings.Contains(out, "demo://resource/dynamic/blob/{resourceId}") || !strings.Contains(out, "URI TEMPLATE") {
			t.Errorf("--templates: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
		}
	})

	t.Run("read", func(t *testing.T) {
		out, errOut, code := runCLI(t, "resources", "read", "--config", cfg, "--server", "everything", "demo://resource/dynamic/text/1")
		if code != 0 || !strings.HasPrefix(out, "Resource 1: This is a plaintext resource") || !strings.HasSuffix(out, "\n") {
			t.Errorf("text: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		// Binary contents are described, never written out.
		out, errOut, code = runCLI(t, "resources", "read", "--config", cfg, "--server", "everything", "demo://resource/dynamic/blob/2")
		if code != 0 || !regexp.MustCompile(`^demo://resource/dynamic/blob/2: text/plain, \d+ bytes \(base64\)\n$`).MatchString(out) {
			t.Errorf("blob: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		out, errOut, code = runCLI(t, "resources", "read", "--config", cfg, "--server", "everything", "demo://nope")
		if code != 1 || out != "" || !strings.Contains(errOut, `server "everything": resources/read "demo://nope": code -32602`) {
			t.Errorf("unknown URI: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			args []string
			code int
			want string
		}{
			{[]string{"--server", "plain"}, 1, `server "plain": resources/list: not supported by the server`},
			{[]string{"--server", "nope"}, 1, `no server "nope"`},
			{[]string{"read", "demo://x"}, 2, "want --server NAME URI"},
			{[]string{"read", "--server", "everything"}, 2, "want --server NAME URI"},
			{[]string{"list"}, 2, `unexpected argument "list"`},
		}
		for _, tt := range tests {
			out, errOut, code := runCLI(t, append([]string{"resources", "--config", cfg}, tt.args...)...)
			if code != tt.code || out != "" || !strings.Contains(errOut, tt.want) {
				t.Errorf("resources %q: exit %d, stdout %q, stderr %q; want exit %d saying %q", tt.args, code, out, errOut, tt.code, tt.want)
			}
		}
	})
}

func TestPromptsCommand(t *testing.T) {
	cfg := featureConfig(t)

	out, errOut, code := runCLI(t, "prompts", "--config", cfg)
	if code != 0 || !regexp.MustCompile(`(?m)^everything +args-prompt +city \[state\] +Arguments Prompt: A prompt with two arguments`).MatchString(out) {
		t.Errorf("prompts: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "prompts", "--config", cfg, "--server", "everything", "--json")
	var ps []struct {
		Server, Name string
		Arguments    []struct {
			Name     string
			Required bool
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &ps) != nil || len(ps) == 0 || ps[0].Server != "everything" {
		t.Errorf("prompts --json: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	out, errOut, code = runCLI(t, "prompts", "get", "--config", cfg, "--server", "everything", "args-prompt", "city=Paris", "state=TX")
	if code != 0 || out != "user: What's weather in Paris, TX?\n" {
		t.Errorf("prompts get: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// A message embedding a binary resource: described, not printed.
	out, errOut, code = runCLI(t, "prompts", "get", "--config", cfg, "--server", "everything", "resource-prompt", "resourceType=Blob", "resourceId=3")
	if code != 0 || !regexp.MustCompile(`(?m)^user: \[resource demo://resource/dynamic/blob/3: text/plain, \d+ bytes \(base64\)\]$`).MatchString(out) {
		t.Errorf("prompts get resource-prompt: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"get", "--server", "everything", "args-prompt"}, 1, `prompts/get "args-prompt": code -32602`},
		{[]string{"get", "--server", "everything", "args-prompt", "city"}, 2, `"city" is not key=value`},
		{[]string{"get", "args-prompt"}, 2, "want --server NAME PROMPT"},
		{[]string{"--server", "plain"}, 1, "not supported by the server (no prompts capability"},
	}
	for _, tt := range tests {
		out, errOut, code := runCLI(t, append([]string{"prompts", "--config", cfg}, tt.args...)...)
		if code != tt.code || out != "" || !strings.Contains(errOut, tt.want) {
			t.Errorf("prompts %q: exit %d, stdout %q, stderr %q; want exit %d saying %q", tt.args, code, out, errOut, tt.code, tt.want)
		}
	}
}
