package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// modernMeta is the _meta of a modern request from a client that takes
// elicitation requests.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}`

// response reads the next line, which must be a response, and decodes it.
func response(t *testing.T, out *bufio.Scanner) (result map[string]any, rpcErr *Error) {
	t.Helper()
	if !out.Scan() {
		t.Fatalf("no output line (%v)", out.Err())
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result map[string]any  `json:"result"`
		Error  *Error          `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || m.Method != "" {
		t.Fatalf("not a response: %s (%v)", out.Text(), err)
	}
	return m.Result, m.Error
}

func TestLegacyServerRefusesDiscover(t *testing.T) {
	send, out, stop := pipeServer(t, New(Options{}))
	defer stop()
	send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
	if !out.Scan() {
		t.Fatal("no answer")
	}
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: server/discover"}}`
	if got := out.Text(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestDiscover(t *testing.T) {
	s := New(Options{Name: "demo", Version: "1.2.3", Instructions: "Be kind.", Modern: true})
	send, out, stop := pipeServer(t, s)
	defer stop()

	send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
	res, rpcErr := response(t, out)
	if rpcErr != nil {
		t.Fatalf("server/discover: %v", rpcErr)
	}
	want := map[string]any{
		"resultType":        "complete",
		"supportedVersions": []any{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"},
		"capabilities":      map[string]any{"tools": map[string]any{"listChanged": true}, "logging": map[string]any{}},
		"instructions":      "Be kind.",
		"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "demo", "version": "1.2.3"}},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("server/discover (-want +got):\n%s", diff)
	}

	send(`{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}`)
	_, rpcErr = response(t, out)
	if rpcErr == nil || rpcErr.Code != CodeUnsupportedProtocolVersion {
		t.Fatalf("an unknown version: %v, want %d", rpcErr, CodeUnsupportedProtocolVersion)
	}
	data, _ := json.Marshal(rpcErr.Data)
	if want := `{"requested":"2099-01-01","supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]}`; string(data) != want {
		t.Errorf("error data %s, want %s", data, want)
	}
}

func TestModernToolCall(t *testing.T) {
	s := New(Options{Modern: true})
	type seen struct{ version, caps string }
	calls := make(chan seen, 2)
	s.AddTool(Tool{Name: "who", Handler: func(_ context.Context, c *ToolCall) (*CallToolResult, error) {
		calls <- seen{c.ProtocolVersion, string(c.ClientCapabilities)}
		return TextResult("me"), nil
	}})
	send, out, stop := pipeServer(t, s)
	defer stop()

	send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`)
	if res, rpcErr := response(t, out); rpcErr != nil || len(res["tools"].([]any)) != 1 {
		t.Fatalf("tools/list: %v %v", res, rpcErr)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"who",` + modernMeta + `}}`)
	res, rpcErr := response(t, out)
	if rpcErr != nil || res["resultType"] != "complete" {
		t.Fatalf("modern tools/call: %v %v, want a complete result", res, rpcErr)
	}
	if got := <-calls; got != (seen{"2026-07-28", `{"elicitation":{}}`}) {
		t.Errorf("the handler saw %+v", got)
	}

	// The same server is dual-era: initialize opens the legacy one.
	send(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"old","version":"1"}}}`)
	if res, rpcErr := response(t, out); rpcErr != nil || res["protocolVersion"] != "2025-11-25" {
		t.Fatalf("initialize: %v %v", res, rpcErr)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"who"}}`)
	res, rpcErr = response(t, out)
	if _, ok := res["resultType"]; rpcErr != nil || ok {
		t.Fatalf("legacy tools/call: %v %v, want a result without resultType", res, rpcErr)
	}
	if got := <-calls; got != (seen{"", `{"roots":{}}`}) {
		t.Errorf("the legacy handler saw %+v", got)
	}
}

// A handler that asks twice is run three times: each run gets one more
// answer, the earlier ones from the sealed requestState.
func TestMRTRTwoAsks(t *testing.T) {
	s := New(Options{Modern: true})
	var runs atomic.Int32
	s.AddTool(Tool{Name: "login", Handler: func(ctx context.Context, c *ToolCall) (*CallToolResult, error) {
		runs.Add(1)
		var got []string
		for _, q := range []string{"user?", "password?"} {
			raw, err := c.Call(ctx, "elicitation/create", map[string]any{"message": q, "requestedSchema": map[string]any{"type": "object"}})
			if err != nil {
				return ErrorResult("asking %s: %v", q, err), nil // overridden by the framework
			}
			var a struct {
				Content struct{ V string } `json:"content"`
			}
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil, err
			}
			got = append(got, a.Content.V)
		}
		return TextResult(strings.Join(got, "/")), nil
	}})
	send, out, stop := pipeServer(t, s)
	defer stop()

	call := func(id int, input string) (map[string]any, *Error) {
		t.Helper()
		send(`{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"tools/call","params":{"name":"login","arguments":{"host":"h"},` + modernMeta + input + `}}`)
		return response(t, out)
	}
	// ask checks an input_required result with one elicitation for message
	// and returns its key and requestState.
	ask := func(res map[string]any, message string) (key, state string) {
		t.Helper()
		reqs, _ := res["inputRequests"].(map[string]any)
		if res["resultType"] != "input_required" || len(reqs) != 1 {
			t.Fatalf("result %v, want input_required with one request", res)
		}
		for k, v := range reqs {
			r := v.(map[string]any)
			if r["method"] != "elicitation/create" || r["params"].(map[string]any)["message"] != message {
				t.Fatalf("input request %v, want elicitation/create %q", r, message)
			}
			key = k
		}
		state, _ = res["requestState"].(string)
		if state == "" {
			t.Fatalf("no requestState in %v", res)
		}
		return key, state
	}
	input := func(key, value, state string) string {
		return `,"inputResponses":{"` + key + `":{"action":"accept","content":{"v":"` + value + `"}}},"requestState":"` + state + `"`
	}

	res, rpcErr := call(1, "")
	if rpcErr != nil {
		t.Fatal(rpcErr)
	}
	k1, st1 := ask(res, "user?")
	res, rpcErr = call(2, input(k1, "alice", st1))
	if rpcErr != nil {
		t.Fatal(rpcErr)
	}
	k2, st2 := ask(res, "password?")
	if k2 == k1 {
		t.Fatalf("both asks have key %q", k1)
	}
	if plain, _ := base64.RawURLEncoding.DecodeString(st2); strings.Contains(st2, "alice") || bytes.Contains(plain, []byte("alice")) {
		t.Fatalf("requestState %q carries an answer in clear", st2)
	}

	// The retry carries only its own round's answer; the first comes from
	// requestState.
	res, rpcErr = call(3, input(k2, "s3cret", st2))
	if rpcErr != nil {
		t.Fatal(rpcErr)
	}
	if res["resultType"] != "complete" || res["content"].([]any)[0].(map[string]any)["text"] != "alice/s3cret" {
		t.Fatalf("last round: %v, want alice/s3cret", res)
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("%d runs, want 3", n)
	}

	// A forged or altered state is refused, and so is one of other arguments.
	for name, state := range map[string]string{"forged": "bm90IGEgc3RhdGU", "altered": st2[:len(st2)-2] + "AA"} {
		if _, rpcErr := call(4, input(k2, "x", state)); rpcErr == nil || rpcErr.Code != CodeInvalidParams {
			t.Errorf("%s requestState: %v, want -32602", name, rpcErr)
		}
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"login","arguments":{"host":"other"},` + modernMeta + input(k2, "x", st2) + `}}`)
	if _, rpcErr := response(t, out); rpcErr == nil || rpcErr.Code != CodeInvalidParams {
		t.Errorf("requestState of other arguments: %v, want -32602", rpcErr)
	}
}

func TestMRTRNeedsTheCapability(t *testing.T) {
	s := New(Options{Modern: true})
	errs := make(chan error, 1)
	s.AddTool(Tool{Name: "ask", Handler: func(ctx context.Context, c *ToolCall) (*CallToolResult, error) {
		_, err := c.Call(ctx, "elicitation/create", map[string]any{"message": "?"})
		errs <- err
		return ErrorResult("no"), nil
	}})
	send, out, stop := pipeServer(t, s)
	defer stop()
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	res, rpcErr := response(t, out)
	if rpcErr != nil || res["isError"] != true {
		t.Fatalf("%v %v, want the handler's error result", res, rpcErr)
	}
	if err := <-errs; !errors.Is(err, ErrMissingClientCapability) {
		t.Errorf("Call without the elicitation capability: %v", err)
	}
}

func TestSubscriptionsListen(t *testing.T) {
	send, out, stop := pipeServer(t, New(Options{Modern: true}))
	defer stop()
	send(`{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`)
	if !out.Scan() {
		t.Fatal("no acknowledgement")
	}
	if want := `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true}}}`; out.Text() != want {
		t.Errorf("got  %s\nwant %s", out.Text(), want)
	}
	// The listen request stays open: the next line answers the ping.
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"l"}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{` + modernMeta + `}}`)
	if !out.Scan() || out.Text() != `{"jsonrpc":"2.0","id":2,"result":{}}` {
		t.Errorf("after cancelling the listen: %s, want the ping's answer", out.Text())
	}
}
