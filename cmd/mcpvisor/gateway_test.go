package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mcpvisor stdio: an MCP client on the other end of the pipes sees the
// host tool activate_tools, activates a server's group and calls its tool.
func TestStdioGateway(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers":{"a":{"command":"MCPTEST","args":["-name","a"]}}}`)
	cmd := exec.Command(cliBin, "stdio", "--config", cfg, "--data", t.TempDir())
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("mcpvisor stdio exited with %v at the end of its input", err)
		}
	}()
	out := bufio.NewScanner(outPipe)
	out.Buffer(make([]byte, 1<<20), 1<<20)
	send := func(s string) {
		if _, err := io.WriteString(in, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// answer reads until the response with id, skipping notifications.
	answer := func(id string) string {
		t.Helper()
		for out.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if err := json.Unmarshal(out.Bytes(), &m); err != nil {
				t.Fatalf("not JSON-RPC on stdout: %s", out.Text())
			}
			if string(m.ID) == id && m.Method == "" {
				return out.Text()
			}
		}
		t.Fatalf("no answer to %s: %v", id, out.Err())
		return ""
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if a := answer("1"); !strings.Contains(a, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %s", a)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if a := answer("2"); !strings.Contains(a, `"activate_tools"`) || strings.Contains(a, "mcp__a__echo") {
		t.Fatalf("tools/list before activation: %s", a)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"activate_tools","arguments":{"groups":["a"]}}}`)
	if a := answer("3"); !strings.Contains(a, "mcp__a__echo") {
		t.Fatalf("activate_tools: %s", a)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp__a__echo","arguments":{"said":"through the gateway"}}}`)
	if a := answer("4"); !strings.Contains(a, "through the gateway") || strings.Contains(a, `"isError":true`) {
		t.Fatalf("echo: %s", a)
	}
}

// mcpvisor serve mounts the gateway at /mcp, behind the same token.
func TestServeMountsTheGateway(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"t": {"command": "MCPTEST"}}}`)
	data := filepath.Join(t.TempDir(), "data")
	s := startServe(t, "--config", cfg, "--data", data)
	raw, _ := os.ReadFile(s.tokenPath)
	token := strings.TrimSpace(string(raw))
	post := func(token string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := post(""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/mcp without a token: %d", resp.StatusCode)
	}
	resp := post(token)
	if resp.StatusCode != http.StatusOK || len(resp.Header.Get("Mcp-Session-Id")) != 32 {
		t.Fatalf("/mcp initialize: %d, session %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}
	if err := s.shutdown(t); err != nil {
		t.Fatal(err)
	}
}
