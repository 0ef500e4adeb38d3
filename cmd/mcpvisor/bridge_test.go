package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// stdioClient is an MCP client of a `mcpvisor stdio` process.
type stdioClient struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan string
	cmd   *exec.Cmd
}

func startStdio(t *testing.T, args ...string) *stdioClient {
	t.Helper()
	cmd := exec.Command(cliBin, append([]string{"stdio"}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &stdioClient{t: t, in: in, lines: make(chan string, 64), cmd: cmd}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("stdio exited with %v: %s", err, stderr)
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("stdio did not exit when its stdin closed: %s", stderr)
		}
	})
	return c
}

func (c *stdioClient) send(msg string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, msg+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// next is the next message the client gets.
func (c *stdioClient) next() map[string]json.RawMessage {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatal("stdio closed its stdout")
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			c.t.Fatalf("not JSON: %q", line)
		}
		return m
	case <-time.After(60 * time.Second):
		c.t.Fatal("no message from stdio")
		return nil
	}
}

// answer is the next response to request id, skipping notifications.
func (c *stdioClient) answer(id string) map[string]json.RawMessage {
	c.t.Helper()
	for {
		m := c.next()
		if string(m["id"]) == id && m["method"] == nil {
			return m
		}
	}
}

// stdio on a data directory a sidecar holds relays its client to the
// sidecar's /mcp: a legacy client initializes, lists, calls, and answers
// the sidecar's elicitation (which reaches it on the session's GET
// stream); a modern client calls without a handshake, the headers of its
// revision filled in from the body.
func TestStdioJoinsTheSidecar(t *testing.T) {
	data := t.TempDir()
	cfg := writeConfig(t, `{"mcpServers": {"mcptest": {"command": "MCPTEST"}}}`)
	startSidecar(t, "--config", cfg, "--data", data)

	c := startStdio(t, "--config", cfg, "--data", data)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"t","version":"1"}}}`)
	init := c.answer("1")
	if !strings.Contains(string(init["result"]), `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %s", init["result"])
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if list := c.answer("2"); !strings.Contains(string(list["result"]), `"mcp__mcptest__echo"`) {
		t.Fatalf("tools/list: %s", list["result"])
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp__mcptest__echo","arguments":{"text":"through the sidecar"}}}`)
	if res := c.answer("3"); !strings.Contains(string(res["result"]), "through the sidecar") {
		t.Fatalf("tools/call: %s %s", res["result"], res["error"])
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp__mcptest__ask","arguments":{"message":"your name?"}}}`)
	var ask map[string]json.RawMessage
	for ask == nil {
		m := c.next()
		if string(m["method"]) == `"elicitation/create"` {
			ask = m
		} else if string(m["id"]) == "4" {
			t.Fatalf("the call answered before it asked: %s %s", m["result"], m["error"])
		}
	}
	if !strings.Contains(string(ask["params"]), "your name?") {
		t.Fatalf("elicitation: %s", ask["params"])
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"answer":"Ada"}}}`, ask["id"]))
	if res := c.answer("4"); !strings.Contains(string(res["result"]), "Ada") {
		t.Fatalf("the call after the answer: %s %s", res["result"], res["error"])
	}

	m := startStdio(t, "--config", cfg, "--data", data)
	meta := protocol.ModernMeta(protocol.ModernVersion, protocol.ClientCapabilities{}, protocol.Implementation{Name: "t", Version: "1"}, "")
	m.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"mcp__mcptest__echo","arguments":{"text":"modern"},"_meta":%s}}`, meta))
	if res := m.answer(`"a"`); !strings.Contains(string(res["result"]), "modern") {
		t.Fatalf("a modern call: %s %s", res["result"], res["error"])
	}
}
