package peers_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// modernMeta is the _meta every 2026-07-28 request carries.
var modernMeta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "0"},
}

const legacyInitialize = `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"0"}}`

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int
	Message string
	Data    json.RawMessage
}

// message is any JSON-RPC message from the server.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// toolResult is the part of a tools/call result (complete or
// input_required) the tests read.
type toolResult struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string
		Params struct {
			Mode            string
			Message         string
			RequestedSchema struct {
				Properties map[string]struct{ Type string }
			}
		}
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
	Content      []struct{ Type, Text string }
	IsError      bool `json:"isError"`
}

func (r toolResult) text() string {
	var s []string
	for _, c := range r.Content {
		s = append(s, c.Text)
	}
	return strings.Join(s, "")
}

// stdioPeer is gosdkpeer over stdio, spoken to line by line.
type stdioPeer struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan []byte
	nextID int
	notes  []message // notifications read while waiting for responses
	// onRequest answers a server-to-client request; nil fails the test.
	onRequest func(message) any
}

func startGoSDK(t *testing.T, era string, extraArgs ...string) *stdioPeer {
	t.Helper()
	bin, args := peers.GoSDK(t, era, extraArgs...)
	if !filepath.IsAbs(bin) {
		t.Fatalf("GoSDK path %q not absolute", bin)
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer // read only after Wait
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &stdioPeer{t: t, stdin: stdin, lines: make(chan []byte, 64)}
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(p.lines)
		done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		stdin.Close() // the server exits at EOF on stdin
		// Drain, so that the reader reaches EOF and Wait.
		go func() {
			for range p.lines {
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Error("gosdkpeer did not exit at EOF on stdin")
		}
		want := fmt.Sprintf("gosdkpeer %s stdio pid %d\n", era, cmd.Process.Pid)
		if !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("stderr does not start with %q", want)
		}
		if t.Failed() {
			t.Logf("gosdkpeer %s stderr:\n%s", strings.Join(args, " "), stderr.String())
		}
	})
	return p
}

func (p *stdioPeer) send(v any) {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

// next returns the next message on stdout, failing on a line that is not
// JSON-RPC.
func (p *stdioPeer) next() message {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("gosdkpeer closed stdout")
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			p.t.Fatalf("non-JSON line on stdout: %q", line)
		}
		return m
	case <-time.After(30 * time.Second):
		p.t.Fatal("nothing on stdout for 30s")
	}
	return message{}
}

// request sends a request and returns its response, keeping notifications
// in p.notes and answering server requests with p.onRequest.
func (p *stdioPeer) request(method string, params any) message {
	p.t.Helper()
	p.nextID++
	id := p.nextID
	p.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return p.await(id)
}

func (p *stdioPeer) await(id int) message {
	p.t.Helper()
	want := fmt.Sprint(id)
	for {
		m := p.next()
		switch {
		case m.Method != "" && m.ID == nil:
			p.notes = append(p.notes, m)
		case m.Method != "":
			if p.onRequest == nil {
				p.t.Fatalf("unexpected request from the server: %s %s", m.Method, m.Params)
			}
			p.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": p.onRequest(m)})
		case string(m.ID) == want:
			return m
		default:
			p.t.Fatalf("response to an unknown id %s", m.ID)
		}
	}
}

// call sends tools/call with extra params (inputResponses, requestState)
// and, if meta, the modern _meta; it returns the result or the error.
func (p *stdioPeer) call(name string, args any, meta bool, extra map[string]any) (toolResult, *rpcError) {
	p.t.Helper()
	params := map[string]any{"name": name, "arguments": args}
	if meta {
		params["_meta"] = modernMeta
	}
	for k, v := range extra {
		params[k] = v
	}
	m := p.request("tools/call", params)
	if m.Error != nil {
		return toolResult{}, m.Error
	}
	var r toolResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		p.t.Fatalf("tools/call %s: %v: %s", name, err, m.Result)
	}
	return r, nil
}

func accept(key, value string) map[string]any {
	return map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{key: value}}}
}

func discover(t *testing.T, p *stdioPeer) []string {
	t.Helper()
	m := p.request("server/discover", map[string]any{"_meta": modernMeta})
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
		t.Fatalf("server/discover: %+v %s", m.Error, m.Result)
	}
	if _, ok := res.Capabilities["tools"]; !ok {
		t.Errorf("server/discover: no tools capability: %s", m.Result)
	}
	return res.SupportedVersions
}

// TestGoSDKModernStdio: the modern-only server answers server/discover,
// refuses initialize, and runs ask's three rounds, checking requestState.
func TestGoSDKModernStdio(t *testing.T) {
	t.Parallel()
	p := startGoSDK(t, "modern")

	// Before any modern request, a request without _meta is refused by the
	// SDK with code 0 (not a JSON-RPC code), message `method "tools/list"
	// is invalid during session initialization`.
	if m := p.request("tools/list", map[string]any{}); m.Error == nil || !strings.Contains(m.Error.Message, "invalid during session initialization") {
		t.Errorf("tools/list before discover: %+v %s", m.Error, m.Result)
	}
	if v := discover(t, p); !slices.Equal(v, []string{"2026-07-28"}) {
		t.Errorf("supportedVersions %v, want [2026-07-28]", v)
	}

	// Round 1: input_required, one form elicitation for "name", a state.
	r, e := p.call("ask", map[string]any{}, true, nil)
	if e != nil {
		t.Fatalf("ask round 1: %+v", e)
	}
	ir, ok := r.InputRequests["name"]
	if r.ResultType != "input_required" || !ok || len(r.InputRequests) != 1 || r.RequestState == "" ||
		ir.Method != "elicitation/create" || ir.Params.Mode != "form" || ir.Params.RequestedSchema.Properties["name"].Type != "string" {
		t.Fatalf("ask round 1: %+v", r)
	}
	state1 := r.RequestState

	// Round 2 with a tampered state, and with none: invalid params.
	for _, extra := range []map[string]any{
		{"inputResponses": accept("name", "Ada"), "requestState": state1 + "x"},
		{"inputResponses": accept("name", "Ada"), "requestState": "x" + state1[1:]},
		{"inputResponses": accept("name", "Ada")},
	} {
		if _, e := p.call("ask", map[string]any{}, true, extra); e == nil || e.Code != -32602 {
			t.Errorf("ask with requestState %q: error %+v, want -32602", extra["requestState"], e)
		}
	}

	// Round 2: asks for "color", with a new state.
	r, e = p.call("ask", map[string]any{}, true, map[string]any{"inputResponses": accept("name", "Ada"), "requestState": state1})
	if e != nil || r.ResultType != "input_required" || r.InputRequests["color"].Method != "elicitation/create" || r.RequestState == "" || r.RequestState == state1 {
		t.Fatalf("ask round 2: %+v %+v", r, e)
	}
	state2 := r.RequestState
	if _, e := p.call("ask", map[string]any{}, true, map[string]any{"inputResponses": accept("color", "red"), "requestState": state2 + "="}); e == nil || e.Code != -32602 {
		t.Errorf("ask round 3 with a tampered state: %+v, want -32602", e)
	}

	// Round 3: complete.
	r, e = p.call("ask", map[string]any{}, true, map[string]any{"inputResponses": accept("color", "red"), "requestState": state2})
	if e != nil || r.ResultType != "complete" || r.IsError || r.text() != "name=Ada color=red" {
		t.Fatalf("ask round 3: %+v %+v", r, e)
	}

	// An ask from a client without the elicitation capability: -32021.
	m := p.request("tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}})
	if m.Error == nil || m.Error.Code != -32021 {
		t.Errorf("ask without elicitation: %+v %s", m.Error, m.Result)
	}

	r, e = p.call("add", map[string]any{"a": 2, "b": 40}, true, nil)
	if e != nil || r.text() != "2+40=42" {
		t.Errorf("add: %+v %+v", r, e)
	}
}

// TestGoSDKModernInitialize: what the modern-only server does with the
// legacy handshake.
func TestGoSDKModernInitialize(t *testing.T) {
	t.Parallel()
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		// gosdkpeer refuses it: error -32022 (UnsupportedProtocolVersion),
		// data {"supported":["2026-07-28"],"requested":"2025-11-25"}.
		p := startGoSDK(t, "modern")
		m := p.request("initialize", json.RawMessage(legacyInitialize))
		if m.Error == nil || m.Error.Code != -32022 || !strings.Contains(string(m.Error.Data), `"supported":["2026-07-28"]`) {
			t.Fatalf("initialize: %+v %s", m.Error, m.Result)
		}
		// The session stays uninitialized; modern requests still work.
		if v := discover(t, p); !slices.Contains(v, "2026-07-28") {
			t.Errorf("supportedVersions %v", v)
		}
	})
	t.Run("sdk", func(t *testing.T) {
		t.Parallel()
		// By itself (-sdk-initialize) go-sdk v1.8.0 does not refuse: with
		// SupportedProtocolVersions ["2026-07-28"] it answers initialize
		// with protocolVersion "2025-11-25", a version it does not list,
		// and then serves the session as a 2025-11-25 one.
		p := startGoSDK(t, "modern", "-sdk-initialize")
		m := p.request("initialize", json.RawMessage(legacyInitialize))
		var res struct{ ProtocolVersion string }
		if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.ProtocolVersion != "2025-11-25" {
			t.Fatalf("initialize: %+v %s", m.Error, m.Result)
		}
		p.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
		if r, e := p.call("echo", map[string]any{"text": "legacy"}, false, nil); e != nil || r.text() != "legacy" {
			t.Errorf("legacy echo: %+v %+v", r, e)
		}
	})
}

// TestGoSDKDualStdio: the dual-era server answers both handshakes; a legacy
// ask goes out as two elicitation/create requests to the client.
func TestGoSDKDualStdio(t *testing.T) {
	t.Parallel()
	legacy := startGoSDK(t, "dual")
	m := legacy.request("initialize", json.RawMessage(legacyInitialize))
	var res struct{ ProtocolVersion string }
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.ProtocolVersion != "2025-11-25" {
		t.Fatalf("initialize: %+v %s", m.Error, m.Result)
	}
	legacy.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	var asked []string
	legacy.onRequest = func(m message) any {
		var p struct {
			RequestedSchema struct{ Properties map[string]any }
		}
		json.Unmarshal(m.Params, &p)
		for key := range p.RequestedSchema.Properties {
			asked = append(asked, m.Method+" "+key)
			return map[string]any{"action": "accept", "content": map[string]any{key: map[string]string{"name": "Bo", "color": "blue"}[key]}}
		}
		return map[string]any{"action": "decline"}
	}
	r, e := legacy.call("ask", map[string]any{}, false, nil)
	if e != nil || r.ResultType != "" || r.text() != "name=Bo color=blue" {
		t.Fatalf("legacy ask: %+v %+v", r, e)
	}
	if strings.Join(asked, ",") != "elicitation/create name,elicitation/create color" {
		t.Errorf("legacy ask sent %v", asked)
	}

	modern := startGoSDK(t, "dual")
	if v := discover(t, modern); !slices.Contains(v, "2026-07-28") || !slices.Contains(v, "2025-11-25") {
		t.Errorf("supportedVersions %v, want both eras", v)
	}
	r, e = modern.call("ask", map[string]any{}, true, nil)
	if e != nil || r.ResultType != "input_required" || r.RequestState == "" {
		t.Fatalf("modern ask: %+v %+v", r, e)
	}
}

// TestGoSDKListen: subscriptions/listen over stdio, then add_tool: the
// stream is notifications on stdout tagged with the listen request's id.
func TestGoSDKListen(t *testing.T) {
	t.Parallel()
	p := startGoSDK(t, "modern")
	p.nextID++
	listen := p.nextID
	p.send(map[string]any{"jsonrpc": "2.0", "id": listen, "method": "subscriptions/listen", "params": map[string]any{
		"_meta": modernMeta, "notifications": map[string]any{"toolsListChanged": true},
	}})
	ack := p.next()
	if ack.Method != "notifications/subscriptions/acknowledged" || !strings.Contains(string(ack.Params), fmt.Sprintf(`"io.modelcontextprotocol/subscriptionId":%d`, listen)) {
		t.Fatalf("first message %+v %s", ack, ack.Params)
	}
	if r, e := p.call("add_tool", map[string]any{"name": "late"}, true, nil); e != nil || r.IsError {
		t.Fatalf("add_tool: %+v %+v", r, e)
	}
	// The change is sent after a 10ms debounce, so probably after the
	// add_tool response.
	for len(p.notes) == 0 {
		p.notes = append(p.notes, p.next())
	}
	n := p.notes[0]
	if n.Method != "notifications/tools/list_changed" || !strings.Contains(string(n.Params), fmt.Sprintf(`"io.modelcontextprotocol/subscriptionId":%d`, listen)) {
		t.Fatalf("notification %+v %s", n, n.Params)
	}
	if r, e := p.call("late", map[string]any{"text": "x"}, true, nil); e != nil || r.text() != "x" {
		t.Errorf("added tool: %+v %+v", r, e)
	}
	// Cancelling the listen ends it with a result.
	p.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": listen}})
	if m := p.await(listen); m.Error != nil {
		t.Errorf("listen ended with %+v", m.Error)
	}
}

// TestGoSDKHTTP calls echo and region over Streamable HTTP with the
// 2026-07-28 headers, on two servers.
func TestGoSDKHTTP(t *testing.T) {
	t.Parallel()
	url := peers.GoSDKHTTP(t, "modern")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("url %q", url)
	}
	post := func(name string, args map[string]any, header map[string]string) (int, string, []byte) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": name, "arguments": args, "_meta": modernMeta}})
		req, err := http.NewRequest("POST", url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", name)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		msg := b
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			msg = nil
			for _, line := range strings.Split(string(b), "\n") {
				if data, ok := strings.CutPrefix(line, "data: "); ok {
					msg = []byte(data)
				}
			}
		}
		return resp.StatusCode, resp.Header.Get("Content-Type"), msg
	}
	result := func(msg []byte) toolResult {
		t.Helper()
		var m message
		var r toolResult
		if json.Unmarshal(msg, &m) != nil || m.Error != nil || json.Unmarshal(m.Result, &r) != nil {
			t.Fatalf("answer %s", msg)
		}
		return r
	}

	status, ctype, msg := post("echo", map[string]any{"text": "over http"}, nil)
	if r := result(msg); status != http.StatusOK || r.ResultType != "complete" || r.text() != "over http" {
		t.Fatalf("echo: %d %s %s", status, ctype, msg)
	}
	status, _, msg = post("region", map[string]any{"region": "eu-west", "query": "q"}, map[string]string{"Mcp-Param-Region": "eu-west"})
	if r := result(msg); status != http.StatusOK || r.text() != "region=eu-west" {
		t.Errorf("region: %d %s", status, msg)
	}
	// The SDK checks Mcp-Param-* against the arguments: 400, -32020.
	status, _, msg = post("region", map[string]any{"region": "eu-west"}, map[string]string{"Mcp-Param-Region": "us"})
	if status != http.StatusBadRequest || !strings.Contains(string(msg), "-32020") {
		t.Errorf("region with a wrong header: %d %s", status, msg)
	}

	// Another server, on a port of its own, in the other era.
	if other := peers.GoSDKHTTP(t, "dual", "-ttl-ms", "1000"); other == url {
		t.Fatalf("two servers on %s", url)
	}
}

// TestGoSDKPeerOnce: the binary is built once per test process.
func TestGoSDKPeerOnce(t *testing.T) {
	t.Parallel()
	a, b := peers.GoSDKPeer(t), peers.GoSDKPeer(t)
	if a != b || !filepath.IsAbs(a) {
		t.Fatalf("paths %q, %q", a, b)
	}
}
