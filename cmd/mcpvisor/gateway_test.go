package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mcpvisor stdio: an MCP client on the other end of the pipes sees the
// host tool activate_tools, activates a server's group and calls its tool.
func TestStdioGateway(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers":{"a":{"command":"MCPTEST","args":["-name","a"]}}}`)
	c := startStdioCLI(t, "--config", cfg, "--data", t.TempDir(), "--lazy")
	// answer reads until the response with id, counting the list_changed
	// notifications it skips.
	changes := 0
	answer := func(id string) string {
		t.Helper()
		return c.answer(id, func(line string) {
			if strings.Contains(line, `"notifications/tools/list_changed"`) {
				changes++
			}
		})
	}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if a := answer("1"); !strings.Contains(a, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %s", a)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if a := answer("2"); !strings.Contains(a, `"activate_tools"`) || strings.Contains(a, "mcp__a__echo") {
		t.Fatalf("tools/list before activation: %s", a)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"activate_tools","arguments":{"groups":["a"]}}}`)
	// The server may still be starting: its tools then arrive with a
	// notifications/tools/list_changed, and tools/list shows them.
	listed := answer("3")
	for id := 100; !strings.Contains(listed, "mcp__a__echo"); id++ {
		if id > 105 {
			t.Fatalf("mcp__a__echo never listed: %s", listed)
		}
		if changes == 0 {
			waitListChanged(t, c.out)
		}
		changes = 0
		c.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/list"}`)
		listed = answer(strconv.Itoa(id))
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp__a__echo","arguments":{"said":"through the gateway"}}}`)
	if a := answer("4"); !strings.Contains(a, "through the gateway") || strings.Contains(a, `"isError":true`) {
		t.Fatalf("echo: %s", a)
	}
}

// stdioCLI is mcpvisor stdio with an MCP client's pipes; the process must
// exit 0 once its input closes at the end of the test.
type stdioCLI struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

func startStdioCLI(t *testing.T, args ...string) *stdioCLI {
	t.Helper()
	cmd := exec.Command(cliBin, append([]string{"stdio"}, args...)...)
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("mcpvisor stdio exited with %v at the end of its input", err)
		}
	})
	out := bufio.NewScanner(outPipe)
	out.Buffer(make([]byte, 1<<20), 1<<20)
	return &stdioCLI{t: t, in: in, out: out}
}

func (c *stdioCLI) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// answer reads stdout until the response with id, handing every other
// line to other (nil: skipped).
func (c *stdioCLI) answer(id string, other func(line string)) string {
	c.t.Helper()
	for c.out.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(c.out.Bytes(), &m); err != nil {
			c.t.Fatalf("not JSON-RPC on stdout: %s", c.out.Text())
		}
		if string(m.ID) == id && m.Method == "" {
			return c.out.Text()
		}
		if other != nil {
			other(c.out.Text())
		}
	}
	c.t.Fatalf("no answer to %s: %v", id, c.out.Err())
	return ""
}

// waitListChanged reads stdout until a notifications/tools/list_changed.
func waitListChanged(t *testing.T, out *bufio.Scanner) {
	t.Helper()
	for out.Scan() {
		if strings.Contains(out.Text(), `"notifications/tools/list_changed"`) {
			return
		}
	}
	t.Fatalf("no list_changed: %v", out.Err())
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

// With a sidecar holding the journal, events, elicitations and servers go
// through its API; without one, they say so.
func TestCLIThroughTheSidecar(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"t": {"command": "MCPTEST", "args": ["-name", "t"]}}}`)
	data := filepath.Join(t.TempDir(), "data")
	if _, errOut, code := runCLIData(t, data, "elicitations"); code != 1 || !strings.Contains(errOut, "no sidecar is running") {
		t.Fatalf("elicitations without a sidecar: code %d: %s", code, errOut)
	}
	s := startServe(t, "--config", cfg, "--data", data)
	if out, errOut, code := runCLIData(t, data, "elicitations"); code != 0 || out != "" {
		t.Fatalf("elicitations: code %d: %s %s", code, out, errOut)
	}
	// The server pushes an event (event/test) when its notify tool runs.
	raw, _ := os.ReadFile(s.tokenPath)
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/call", strings.NewReader(`{"tool":"mcp__t__notify","arguments":{}}`))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(raw)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("notify through the API: %v %v", resp, err)
	}
	resp.Body.Close()
	// The event commits shortly after the call's answer: look until it has.
	var out, errOut string
	var code int
	for try := 0; try < 100; try++ {
		out, errOut, code = runCLIData(t, data, "events", "--json", "--method", "event/test")
		if code != 0 || strings.Contains(out, `"event/test"`) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != 0 || !strings.Contains(out, `"event/test"`) {
		t.Fatalf("events through the sidecar: code %d: %s %s", code, out, errOut)
	}
	if out, errOut, code := runCLIData(t, data, "servers", "disable", "t"); code != 0 || !strings.Contains(out, "server t: disabled") {
		t.Fatalf("servers disable: code %d: %s %s", code, out, errOut)
	}
	if _, errOut, code := runCLIData(t, data, "events", "ack", "999999"); code != 1 || !strings.Contains(errOut, "sidecar") {
		t.Fatalf("ack of an unknown event through the sidecar: code %d: %s", code, errOut)
	}
	if err := s.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, "sidecar.json")); !os.IsNotExist(err) {
		t.Fatalf("the sidecar note outlived the sidecar: %v", err)
	}
}

// --log-format json makes every log record one JSON object per line.
func TestLogFormatJSON(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers":{"a":{"command":"MCPTEST","args":["-name","a"]}}}`)
	_, errOut, code := runCLI(t, "tools", "--config", cfg, "--log-level", "debug", "--log-format", "json")
	if code != 0 {
		t.Fatalf("tools: code %d: %s", code, errOut)
	}
	records := 0
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Level == "" {
			t.Fatalf("not a JSON log record: %q", line)
		}
		records++
	}
	if records == 0 {
		t.Fatal("no log records at debug level")
	}
	if _, errOut, code := runCLI(t, "tools", "--config", cfg, "--log-format", "xml"); code != 2 || !strings.Contains(errOut, "--log-format") {
		t.Fatalf("--log-format xml: code %d: %s", code, errOut)
	}
}

// --activate all: a one-shot client sees and calls every server's tools
// without activate_tools (the config group stays off).
func TestStdioActivateAll(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers":{"a":{"command":"MCPTEST","args":["-name","a"]},"b":{"command":"MCPTEST","args":["-name","b"]}}}`)
	c := startStdioCLI(t, "--config", cfg, "--data", t.TempDir(), "--activate", "all")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.answer("1", nil)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// A call needs no activation; it waits for a server still starting.
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp__b__echo","arguments":{"said":"no activation"}}}`)
	if a := c.answer("2", nil); !strings.Contains(a, "no activation") || strings.Contains(a, `"isError":true`) {
		t.Fatalf("call without activation: %s", a)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	listed := c.answer("3", nil)
	for id := 100; !strings.Contains(listed, "mcp__a__echo"); id++ {
		if id > 105 {
			t.Fatalf("mcp__a__echo never listed: %s", listed)
		}
		waitListChanged(t, c.out)
		c.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/list"}`)
		listed = c.answer(strconv.Itoa(id), nil)
	}
	if !strings.Contains(listed, "mcp__b__echo") || strings.Contains(listed, "register_mcp") {
		t.Errorf("tools/list with --activate all: %s", listed)
	}
}

// Without --lazy, a session sees every server's tools while the catalog
// is small (at most 40 tools): a one-shot client lists and calls them with
// no activate_tools. Past 40, it activates what it needs, and search_tools
// is listed to find it.
func TestStdioSmallCatalogNeedsNoActivation(t *testing.T) {
	initialize := func(c *stdioCLI) {
		c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		c.answer("1", nil)
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	small := writeConfig(t, `{"mcpServers":{"a":{"command":"MCPTEST","args":["-name","a"]}}}`)
	c := startStdioCLI(t, "--config", small, "--data", t.TempDir())
	initialize(c)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp__a__echo","arguments":{"said":"no activation"}}}`)
	if a := c.answer("2", nil); !strings.Contains(a, "no activation") || strings.Contains(a, `"isError":true`) {
		t.Fatalf("a call with no activation, small catalog: %s", a)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if a := c.answer("3", nil); !strings.Contains(a, `"mcp__a__echo"`) || strings.Contains(a, `"search_tools"`) {
		t.Fatalf("tools/list, small catalog: %s", a)
	}

	// 12 tools of its own and 38 more: 50.
	large := writeConfig(t, `{"mcpServers":{"a":{"command":"MCPTEST","args":["-name","a","-tools","38"]}}}`)
	c = startStdioCLI(t, "--config", large, "--data", t.TempDir())
	initialize(c)
	for id := 10; ; id++ {
		if id > 20 {
			t.Fatal("search_tools never listed with a catalog of 50 tools")
		}
		c.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/list"}`)
		if a := c.answer(strconv.Itoa(id), nil); strings.Contains(a, `"search_tools"`) {
			if strings.Contains(a, `"mcp__a__echo"`) {
				t.Fatalf("tools/list, large catalog, before activation: %s", a)
			}
			break
		}
		waitListChanged(t, c.out) // the server is still starting
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp__a__echo","arguments":{"said":"x"}}}`)
	if a := c.answer("4", nil); !strings.Contains(a, "activate") {
		t.Fatalf("a call with no activation, large catalog: %s", a)
	}
}
