package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// These tests drive the gateway as a 2026-07-28 ("modern") client does:
// no initialize, no session, _meta and the SEP-2243 headers on every
// request, against real go-sdk servers (internal/peers/gosdk) behind it.

const modernVersion = "2026-07-28"

// modernGateway is a host with the given servers (all always on) and a
// gateway over it, served on loopback.
func modernGateway(t *testing.T, opts gateway.Options, servers ...mcpvisor.ServerConfig) (*mcpvisor.Host, string) {
	t.Helper()
	h, g := modernHost(t, opts, servers...)
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	return h, srv.URL
}

// modernHost is a host with the given servers (all always on) and a
// gateway over it.
func modernHost(t *testing.T, opts gateway.Options, servers ...mcpvisor.ServerConfig) (*mcpvisor.Host, *gateway.Gateway) {
	t.Helper()
	names := []string{}
	for _, s := range servers {
		names = append(names, s.Name)
	}
	f := fixtureOf(t, opts, servers, func(o *mcpvisor.Options) {
		o.AlwaysOn, o.Inbox, o.CallSampling, o.CallRoots = names, true, true, true
	})
	return f.h, f.g
}

// modernClient sends modern requests with the headers a conforming client
// sends; each call can change them.
type modernClient struct {
	t    *testing.T
	urls []string // requests go to each in turn (replicas behind one address)
	next atomic.Int64
	caps string
}

// modernResponse is one answer: its HTTP status and its JSON-RPC frame
// (the last one of an SSE stream).
type modernResponse struct {
	status int
	frame
	notes []frame // what an SSE answer carried before the response
}

func (c *modernClient) send(method, params string, edit func(h http.Header)) modernResponse {
	c.t.Helper()
	url := c.urls[int(c.next.Add(1)-1)%len(c.urls)]
	var p map[string]json.RawMessage
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		c.t.Fatalf("params %s: %v", params, err)
	}
	if _, ok := p["_meta"]; !ok {
		caps := c.caps
		if caps == "" {
			caps = "{}"
		}
		p["_meta"] = json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"` + modernVersion +
			`","io.modelcontextprotocol/clientCapabilities":` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}`)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next.Load(), "method": method, "params": p})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", modernVersion)
	req.Header.Set("Mcp-Method", method)
	var named struct {
		Name   string `json:"name"`
		URI    string `json:"uri"`
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal([]byte(params), &named)
	if v := named.Name + named.URI + named.TaskID; v != "" {
		req.Header.Set("Mcp-Name", v)
	}
	if edit != nil {
		edit(req.Header)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	out := modernResponse{status: resp.StatusCode}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var f frame
			if err := json.Unmarshal([]byte(data), &f); err != nil {
				c.t.Fatalf("%s: SSE data %s: %v", method, data, err)
			}
			if f.Method != "" {
				out.notes = append(out.notes, f)
				continue
			}
			out.frame = f
			return out
		}
		c.t.Fatalf("%s: the stream ended without a response", method)
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out.frame); err != nil {
		c.t.Fatalf("%s: answer %q: %v", method, b, err)
	}
	return out
}

func (r modernResponse) wantError(t *testing.T, status int, code int64) {
	t.Helper()
	if r.status != status || r.Error == nil || r.Error.Code != code {
		t.Fatalf("got HTTP %d, error %+v, result %s; want HTTP %d and code %d", r.status, r.Error, r.Result, status, code)
	}
}

func (r modernResponse) result(t *testing.T, v any) {
	t.Helper()
	if r.status != http.StatusOK || r.Error != nil {
		t.Fatalf("got HTTP %d, error %+v; want a result", r.status, r.Error)
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		t.Fatalf("result %s: %v", r.Result, err)
	}
}

func TestModernRequestValidation(t *testing.T) {
	_, url := modernGateway(t, gateway.Options{}, mcpvisor.ServerConfig{Name: "p", Type: "http", URL: peers.GoSDKHTTP(t, "modern"), AllowPrivate: true, Enabled: true})
	c := &modernClient{t: t, urls: []string{url}}

	var d struct {
		SupportedVersions []string        `json:"supportedVersions"`
		ResultType        string          `json:"resultType"`
		TTL               *int64          `json:"ttlMs"`
		CacheScope        string          `json:"cacheScope"`
		Capabilities      json.RawMessage `json:"capabilities"`
		Meta              map[string]struct {
			Name string `json:"name"`
		} `json:"_meta"`
	}
	c.send("server/discover", `{}`, nil).result(t, &d)
	if d.SupportedVersions[0] != modernVersion || !strings.Contains(strings.Join(d.SupportedVersions, " "), "2025-11-25") {
		t.Errorf("supportedVersions %v: want the modern revision first, then the legacy ones", d.SupportedVersions)
	}
	if d.ResultType != "complete" || d.TTL == nil || d.CacheScope != "private" || d.Meta["io.modelcontextprotocol/serverInfo"].Name != "mcpvisor" {
		t.Errorf("discover: resultType %q ttlMs %v cacheScope %q _meta %v", d.ResultType, d.TTL, d.CacheScope, d.Meta)
	}

	cases := []struct {
		name           string
		method, params string
		edit           func(http.Header)
		status         int
		code           int64
	}{
		{"no _meta", "tools/list", `{"_meta":{}}`, nil, 400, -32602},
		{"no capabilities", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, nil, 400, -32602},
		{"version header missing", "tools/list", `{}`, func(h http.Header) { h.Del("MCP-Protocol-Version") }, 400, -32020},
		{"version header mismatch", "tools/list", `{}`, func(h http.Header) { h.Set("MCP-Protocol-Version", "2099-01-01") }, 400, -32020},
		{"unsupported version", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`,
			func(h http.Header) { h.Set("MCP-Protocol-Version", "2099-01-01") }, 400, -32022},
		{"method header missing", "tools/list", `{}`, func(h http.Header) { h.Del("Mcp-Method") }, 400, -32020},
		{"method header differs in case", "tools/list", `{}`, func(h http.Header) { h.Set("Mcp-Method", "TOOLS/LIST") }, 400, -32020},
		{"name header missing", "tools/call", `{"name":"mcp__p__echo","arguments":{"text":"x"}}`, func(h http.Header) { h.Del("Mcp-Name") }, 400, -32020},
		{"name header mismatch", "tools/call", `{"name":"mcp__p__echo","arguments":{"text":"x"}}`, func(h http.Header) { h.Set("Mcp-Name", "mcp__p__add") }, 400, -32020},
		{"param header missing", "tools/call", `{"name":"mcp__p__region","arguments":{"region":"eu"}}`, nil, 400, -32020},
		{"param header mismatch", "tools/call", `{"name":"mcp__p__region","arguments":{"region":"eu"}}`, func(h http.Header) { h.Set("Mcp-Param-Region", "us") }, 400, -32020},
		{"param header for an absent argument", "tools/call", `{"name":"mcp__p__region","arguments":{}}`, func(h http.Header) { h.Set("Mcp-Param-Region", "us") }, 400, -32020},
		{"param header bad Base64", "tools/call", `{"name":"mcp__p__region","arguments":{"region":"eu"}}`, func(h http.Header) { h.Set("Mcp-Param-Region", "=?base64?***?=") }, 400, -32020},
		{"initialize is legacy", "initialize", `{}`, nil, 404, -32601},
		{"ping is legacy", "ping", `{}`, nil, 404, -32601},
		{"logging/setLevel is gone", "logging/setLevel", `{"level":"info"}`, nil, 404, -32601},
		{"resources/subscribe is gone", "resources/subscribe", `{"uri":"peer://static"}`, nil, 404, -32601},
		{"unknown method", "unknown/method", `{}`, nil, 404, -32601},
		{"unknown tool", "tools/call", `{"name":"mcp__p__nope","arguments":{}}`, nil, 400, -32602},
		{"unknown resource", "resources/read", `{"uri":"peer://nope"}`, nil, 400, -32602},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &modernClient{t: t, urls: []string{url}}
			r := c.send(tc.method, tc.params, tc.edit)
			r.wantError(t, tc.status, tc.code)
			if !bytes.Equal(bytes.TrimSpace(r.ID), []byte("1")) {
				t.Errorf("error id %s, want the request's (1)", r.ID)
			}
		})
	}

	// A Base64 header equal to its argument passes, and the server sees
	// the header as the client sent it.
	var res callResult
	c.send("tools/call", `{"name":"mcp__p__region","arguments":{"region":"eu"}}`, func(h http.Header) {
		h.Set("Mcp-Param-Region", "=?base64?ZXU=?=")
	}).result(t, &res)
	if res.IsError || res.text() != "region=eu" {
		t.Errorf("region call: %+v", res)
	}

	// Lists carry resultType and cache hints; tools keep one order.
	var tools1, tools2 struct {
		toolsResult
		ResultType string `json:"resultType"`
		TTL        *int64 `json:"ttlMs"`
	}
	c.send("tools/list", `{}`, nil).result(t, &tools1)
	c.send("tools/list", `{}`, nil).result(t, &tools2)
	if tools1.ResultType != "complete" || tools1.TTL == nil || len(tools1.Tools) == 0 {
		t.Errorf("tools/list: resultType %q ttlMs %v, %d tools", tools1.ResultType, tools1.TTL, len(tools1.Tools))
	}
	for i := range tools1.Tools {
		if tools1.Tools[i].Name != tools2.Tools[i].Name {
			t.Fatalf("tools/list order differs at %d: %s, then %s", i, tools1.Tools[i].Name, tools2.Tools[i].Name)
		}
	}
}

// askAnswers are the answers to the peer's ask, by field.
var askAnswers = map[string]string{"name": "Ada", "color": "green"}

// inputRound is an input_required result as the tests read it.
type inputRound struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string `json:"method"`
		Params struct {
			RequestedSchema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"requestedSchema"`
		} `json:"params"`
	} `json:"inputRequests"`
	RequestState json.RawMessage `json:"requestState"`
}

// acceptAll answers every elicitation of the round, each field from
// answers; it fails on a round that asks nothing or asks for something
// else.
func (r inputRound) acceptAll(t *testing.T, answers map[string]string) map[string]any {
	t.Helper()
	if r.ResultType != "input_required" || len(r.InputRequests) == 0 {
		t.Fatalf("resultType %q with %d input requests", r.ResultType, len(r.InputRequests))
	}
	responses := map[string]any{}
	for key, ir := range r.InputRequests {
		if ir.Method != "elicitation/create" {
			t.Fatalf("input request %s is %s", key, ir.Method)
		}
		content := map[string]string{}
		for field := range ir.Params.RequestedSchema.Properties {
			content[field] = answers[field]
		}
		responses[key] = map[string]any{"action": "accept", "content": content}
	}
	return responses
}

// askRounds runs the peer's two-round "ask" tool through c, answering each
// round, and returns the final text. Each request may go to another
// replica.
func askRounds(t *testing.T, c *modernClient, tool string) string {
	t.Helper()
	params := `{"name":"` + tool + `","arguments":{}}`
	for round := 1; round <= 4; round++ {
		var r struct {
			inputRound
			callResult
		}
		c.send("tools/call", params, nil).result(t, &r)
		if r.ResultType == "complete" {
			return r.text()
		}
		responses := r.acceptAll(t, askAnswers)
		p, _ := json.Marshal(map[string]any{"name": tool, "arguments": map[string]any{}, "inputResponses": responses, "requestState": r.RequestState})
		params = string(p)
	}
	t.Fatal("the call still asked for input after 4 rounds")
	return ""
}

// A modern server's input_required result goes to the client as it is, and
// the retries may reach any replica: two gateways, each over a host of its
// own, in front of one stateless server, answer one client alternately.
func TestModernInputPassesThroughAnyReplica(t *testing.T) {
	peer := peers.GoSDKHTTP(t, "modern")
	server := mcpvisor.ServerConfig{Name: "p", Type: "http", URL: peer, AllowPrivate: true, Enabled: true}
	_, url1 := modernGateway(t, gateway.Options{}, server)
	_, url2 := modernGateway(t, gateway.Options{}, server)
	c := &modernClient{t: t, urls: []string{url1, url2}, caps: `{"elicitation":{"form":{}}}`}
	if got := askRounds(t, c, "mcp__p__ask"); got != "name=Ada color=green" {
		t.Errorf("ask through two replicas: %q", got)
	}
	if n := c.next.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (two rounds of input, then the result)", n)
	}
	// The server is told the client's capabilities, not the host's: a
	// client without elicitation gets the server's -32021 (HTTP 400).
	bare := &modernClient{t: t, urls: []string{url1}}
	bare.send("tools/call", `{"name":"mcp__p__ask","arguments":{}}`, nil).wantError(t, 400, -32021)
}

// A legacy server's elicitations during a modern client's call become
// input_required rounds with a sealed requestState; an altered state is
// refused, and a state sealed by another gateway is not found there.
func TestModernBridgesLegacyServer(t *testing.T) {
	bin, args := peers.GoSDK(t, "dual")
	server := mcpvisor.ServerConfig{Name: "p", Type: "stdio", Command: bin, Args: args, Enabled: true, ProtocolVersion: "2025-11-25"}
	h, url := modernGateway(t, gateway.Options{}, server)
	if st := h.Status()[0]; st.ProtocolVersion != "2025-11-25" {
		t.Fatalf("the peer speaks %q, want the pinned legacy revision", st.ProtocolVersion)
	}
	c := &modernClient{t: t, urls: []string{url}, caps: `{"elicitation":{"form":{}}}`}
	if got := askRounds(t, c, "mcp__p__ask"); got != "name=Ada color=green" {
		t.Errorf("ask bridged: %q", got)
	}

	var r struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	c.send("tools/call", `{"name":"mcp__p__ask","arguments":{}}`, nil).result(t, &r)
	if r.ResultType != "input_required" || !strings.HasPrefix(r.RequestState, "mcpvisor.bridge.") {
		t.Fatalf("first round: %+v", r)
	}
	tampered := r.RequestState[:len(r.RequestState)-2] + "xx"
	c.send("tools/call", `{"name":"mcp__p__ask","arguments":{},"inputResponses":{},"requestState":"`+tampered+`"}`, nil).wantError(t, 400, -32602)

	_, other := modernGateway(t, gateway.Options{}, server)
	o := &modernClient{t: t, urls: []string{other}, caps: c.caps}
	o.send("tools/call", `{"name":"mcp__p__ask","arguments":{},"inputResponses":{},"requestState":"`+r.RequestState+`"}`, nil).wantError(t, 400, -32602)
}

// A legacy server's roots/list during a modern client's call is a round
// of input, and the client's roots reach the server; the call's answer is
// complete and carries no inputRequests.
func TestModernBridgesRoots(t *testing.T) {
	server := mcpvisor.ServerConfig{Name: "a", Type: "stdio", Command: bin.mcptest, Args: []string{"-name", "a"}, Enabled: true}
	_, url := modernGateway(t, gateway.Options{}, server)
	rootsRound(t, &modernClient{t: t, urls: []string{url}, caps: `{"roots":{}}`})
}

// An input round a client abandons holds no other client's question: the
// server, blocked on the abandoned call's question, asks the next one for
// the call in flight that can still ask (flows.Askers.Pick), so a shared
// gateway serves the next client as a fresh one would.
func TestModernAbandonedRound(t *testing.T) {
	server := mcpvisor.ServerConfig{Name: "a", Type: "stdio", Command: bin.mcptest, Args: []string{"-name", "a"}, Enabled: true}
	_, url := modernGateway(t, gateway.Options{}, server)
	gone := &modernClient{t: t, urls: []string{url}, caps: `{"roots":{}}`}
	var r inputRound
	gone.send("tools/call", `{"name":"mcp__a__roots","arguments":{}}`, nil).result(t, &r)
	if r.ResultType != "input_required" {
		t.Fatalf("the first client's answer: %+v", r)
	}
	// It never retries. The next client's call asks it, not the host.
	for range 2 {
		rootsRound(t, &modernClient{t: t, urls: []string{url}, caps: `{"roots":{}}`})
	}
}

// rootsRound calls mcptest's roots tool as c, answers its one roots/list
// round with file:///client, and checks that the server received it.
func rootsRound(t *testing.T, c *modernClient) {
	t.Helper()
	var r inputRound
	c.send("tools/call", `{"name":"mcp__a__roots","arguments":{}}`, nil).result(t, &r)
	if r.ResultType != "input_required" || len(r.InputRequests) != 1 {
		t.Fatalf("first answer: %+v", r)
	}
	responses := map[string]any{}
	for key, ir := range r.InputRequests {
		if ir.Method != "roots/list" {
			t.Fatalf("input request %s is %s, want roots/list", key, ir.Method)
		}
		responses[key] = map[string]any{"roots": []map[string]string{{"uri": "file:///client", "name": "client"}}}
	}
	p, _ := json.Marshal(map[string]any{"name": "mcp__a__roots", "arguments": map[string]any{}, "inputResponses": responses, "requestState": r.RequestState})
	var done struct {
		ResultType        string          `json:"resultType"`
		InputRequests     json.RawMessage `json:"inputRequests"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	c.send("tools/call", string(p), nil).result(t, &done)
	if done.ResultType != "complete" || done.InputRequests != nil || !strings.Contains(string(done.StructuredContent), "file:///client") {
		t.Fatalf("the call's answer: %+v", done)
	}
}

// subscriptions/listen acknowledges first, then sends the notifications
// asked for, each tagged with the listen request's id.
func TestModernListen(t *testing.T) {
	_, url := modernGateway(t, gateway.Options{}, mcpvisor.ServerConfig{Name: "p", Type: "http", URL: peers.GoSDKHTTP(t, "modern"), AllowPrivate: true, Enabled: true})
	body := `{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", modernVersion)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	frames := make(chan frame, 16)
	go func() {
		defer close(frames)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var f frame
				if json.Unmarshal([]byte(data), &f) == nil {
					frames <- f
				}
			}
		}
	}()
	next := func() frame {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatal("the listen stream ended")
			}
			return f
		case <-ctx.Done():
			t.Fatal("no frame on the listen stream")
		}
		return frame{}
	}
	ack := next()
	if ack.Method != "notifications/subscriptions/acknowledged" || !strings.Contains(string(ack.Params), `"io.modelcontextprotocol/subscriptionId":"sub-1"`) ||
		!strings.Contains(string(ack.Params), `"toolsListChanged":true`) {
		t.Fatalf("first frame: %s %s", ack.Method, ack.Params)
	}
	c := &modernClient{t: t, urls: []string{url}}
	var res callResult
	c.send("tools/call", `{"name":"mcp__p__add_tool","arguments":{"name":"late"}}`, nil).result(t, &res)
	for {
		f := next()
		if f.Method == "notifications/tools/list_changed" {
			if !strings.Contains(string(f.Params), `"io.modelcontextprotocol/subscriptionId":"sub-1"`) {
				t.Errorf("list_changed without the subscription id: %s", f.Params)
			}
			return
		}
	}
}

// Over stdio a modern request is served on its own, beside any legacy
// session on the same connection: discover, tools, input_required rounds,
// and a listen stream that a notifications/cancelled ends.
func TestModernStdio(t *testing.T) {
	bin, args := peers.GoSDK(t, "modern")
	h, g := modernHost(t, gateway.Options{}, mcpvisor.ServerConfig{Name: "p", Type: "stdio", Command: bin, Args: args, Enabled: true})
	c, served := startStdio(t, &fixture{h: h, g: g})
	meta := func(caps string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	}

	c.send(request(1, "server/discover", "{"+meta("{}")+"}"))
	if d := c.await(1, nil); d.Error != nil || !bytes.Contains(d.Result, []byte(`"2026-07-28"`)) || !bytes.Contains(d.Result, []byte(`"resultType":"complete"`)) {
		t.Fatalf("discover: %+v %s", d.Error, d.Result)
	}
	c.send(request(2, "ping", "{"+meta("{}")+"}"))
	if p := c.await(2, nil); p.Error == nil || p.Error.Code != -32601 {
		t.Fatalf("modern ping: %+v %s", p.Error, p.Result)
	}
	c.send(request(3, "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`))
	if v := c.await(3, nil); v.Error == nil || v.Error.Code != -32022 {
		t.Fatalf("unsupported version: %+v %s", v.Error, v.Result)
	}

	// Two rounds of input, answered by the client and retried.
	caps := `{"elicitation":{"form":{}}}`
	c.send(request(4, "tools/call", `{"name":"mcp__p__ask","arguments":{},`+meta(caps)+"}"))
	var r struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  json.RawMessage            `json:"requestState"`
	}
	round := c.await(4, nil)
	if err := json.Unmarshal(round.Result, &r); err != nil || r.ResultType != "input_required" || r.InputRequests["name"] == nil {
		t.Fatalf("round 1: %+v %s", round.Error, round.Result)
	}
	c.send(request(5, "tools/call", `{"name":"mcp__p__ask","arguments":{},"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"requestState":`+string(r.RequestState)+`,`+meta(caps)+"}"))
	round = c.await(5, nil)
	if err := json.Unmarshal(round.Result, &r); err != nil || r.ResultType != "input_required" || r.InputRequests["color"] == nil {
		t.Fatalf("round 2: %+v %s", round.Error, round.Result)
	}
	c.send(request(6, "tools/call", `{"name":"mcp__p__ask","arguments":{},"inputResponses":{"color":{"action":"accept","content":{"color":"green"}}},"requestState":`+string(r.RequestState)+`,`+meta(caps)+"}"))
	if res := decode[callResult](t, c.await(6, nil).Result); res.text() != "name=Ada color=green" {
		t.Fatalf("round 3: %+v", res)
	}

	// A listen stream: acknowledged, then told of a new tool; cancelled.
	c.send(request(7, "subscriptions/listen", `{"notifications":{"toolsListChanged":true},`+meta("{}")+"}"))
	if ack := next(t, c.frames, "acknowledgement"); ack.Method != "notifications/subscriptions/acknowledged" || !bytes.Contains(ack.Params, []byte(`"io.modelcontextprotocol/subscriptionId":7`)) {
		t.Fatalf("first frame of the listen: %+v %s", ack, ack.Params)
	}
	c.send(request(8, "tools/call", `{"name":"mcp__p__add_tool","arguments":{"name":"late"},`+meta("{}")+"}"))
	changed := false
	c.await(8, func(f frame) {
		if f.Method == "notifications/tools/list_changed" && bytes.Contains(f.Params, []byte(`"io.modelcontextprotocol/subscriptionId":7`)) {
			changed = true
		}
	})
	for !changed {
		if f := next(t, c.frames, "list_changed"); f.Method == "notifications/tools/list_changed" {
			changed = true
		}
	}
	c.send(notification("notifications/cancelled", `{"requestId":7}`))
	c.send(request(9, "tools/list", "{"+meta("{}")+"}"))
	if l := c.await(9, func(frame) {}); l.Error != nil {
		t.Fatalf("tools/list after the listen: %+v", l.Error)
	}
	c.w.Close()
	if err := <-served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
}

// Over stdio too, a legacy server's questions become input_required
// rounds for a modern client.
func TestModernStdioBridge(t *testing.T) {
	bin, args := peers.GoSDK(t, "dual")
	h, g := modernHost(t, gateway.Options{}, mcpvisor.ServerConfig{Name: "p", Type: "stdio", Command: bin, Args: args, Enabled: true, ProtocolVersion: "2025-11-25"})
	c, _ := startStdio(t, &fixture{h: h, g: g})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	params := `{"name":"mcp__p__ask","arguments":{},` + meta + `}`
	for id := 1; id <= 4; id++ {
		c.send(request(id, "tools/call", params))
		var r inputRound
		f := c.await(id, nil)
		if err := json.Unmarshal(f.Result, &r); err != nil {
			t.Fatalf("round %d: %+v %s", id, f.Error, f.Result)
		}
		if r.ResultType == "complete" {
			if got := decode[callResult](t, f.Result).text(); got != "name=Ada color=green" {
				t.Fatalf("bridged over stdio: %q", got)
			}
			return
		}
		b, _ := json.Marshal(r.acceptAll(t, askAnswers))
		params = `{"name":"mcp__p__ask","arguments":{},"inputResponses":` + string(b) + `,"requestState":` + string(r.RequestState) + `,` + meta + `}`
	}
	t.Fatal("still asking after 4 rounds")
}

// A tool of a server without prefix is known by its own name only once
// the server has listed it: a call that comes while the server starts
// waits for the listing rather than being told the tool is unknown.
func TestUnprefixedCallWaitsForListing(t *testing.T) {
	noPrefix := false
	server := mcpvisor.ServerConfig{Name: "late", Type: "stdio", Command: "sh",
		Args: []string{"-c", `sleep 2; exec "$0" -name late`, bin.mcptest}, Enabled: true, Prefix: &noPrefix}
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{
		Config: &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{server}}, DataDir: t.TempDir(),
		Logger: slogDiscard(), AlwaysOn: []string{"late"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	g := gateway.New(h, gateway.Options{Logger: slogDiscard()})
	t.Cleanup(func() { _ = g.Close() })
	if st := h.Status()[0]; st.State == mcpvisor.StateReady {
		t.Fatalf("the server is ready before the call: state %s", st.State)
	}
	c, _ := startStdio(t, &fixture{h: h, g: g})
	c.send(request(1, "initialize", initParams))
	c.await(1, nil)
	c.send(request(2, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`))
	r := c.await(2, func(frame) {})
	if r.Error != nil || decode[callResult](t, r.Result).IsError {
		t.Fatalf("a call by the own name while the server started: %+v %s", r.Error, r.Result)
	}
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// A legacy server's question during prompts/get is bridged for a modern
// client as during tools/call: an input_required round, then the prompt.
func TestModernBridgesPromptGet(t *testing.T) {
	bin, args := peers.GoSDK(t, "dual")
	noPrefix := false
	_, url := modernGateway(t, gateway.Options{}, mcpvisor.ServerConfig{Name: "p", Type: "stdio", Command: bin, Args: args,
		Enabled: true, ProtocolVersion: "2025-11-25", Prefix: &noPrefix})
	c := &modernClient{t: t, urls: []string{url}, caps: `{"elicitation":{"form":{}}}`}
	var r inputRound
	c.send("prompts/get", `{"name":"topic"}`, nil).result(t, &r)
	if !strings.HasPrefix(string(r.RequestState), `"mcpvisor.bridge.`) {
		t.Fatalf("first round's requestState %s, want the gateway's", r.RequestState)
	}
	b, _ := json.Marshal(map[string]any{"name": "topic", "inputResponses": r.acceptAll(t, map[string]string{"topic": "tides"}), "requestState": r.RequestState})
	var prompt struct {
		ResultType string `json:"resultType"`
		Messages   []struct {
			Content struct{ Text string } `json:"content"`
		} `json:"messages"`
	}
	c.send("prompts/get", string(b), nil).result(t, &prompt)
	if prompt.ResultType != "complete" || len(prompt.Messages) != 1 || prompt.Messages[0].Content.Text != "Write about tides." {
		t.Fatalf("the prompt after the round: %+v", prompt)
	}
}

// A modern client over stdio that leaves during an input round: the call
// bridged for it ends with its connection, not at InputTimeout, as no
// retry can come any more.
func TestModernStdioClientGoneReleasesItsCall(t *testing.T) {
	server := mcpvisor.ServerConfig{Name: "a", Type: "stdio", Command: bin.mcptest, Args: []string{"-name", "a"}, Enabled: true}
	f := fixtureOf(t, gateway.Options{}, []mcpvisor.ServerConfig{server}, func(o *mcpvisor.Options) {
		o.AlwaysOn, o.Inbox, o.CallSampling, o.CallRoots = []string{"a"}, true, true, true
	})
	c, served := startStdio(t, f)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp__a__roots","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"` + modernVersion + `","io.modelcontextprotocol/clientCapabilities":{"roots":{}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}}}`)
	var r inputRound
	if fr := c.await(1, nil); fr.Error != nil || json.Unmarshal(fr.Result, &r) != nil || r.ResultType != "input_required" {
		t.Fatalf("the call's first answer: %+v %s", fr.Error, fr.Result)
	}
	if n := f.h.PendingCalls()["a"]; n != 1 {
		t.Fatalf("%d calls in flight on the server during the round, want the held one", n)
	}
	c.w.Close()
	if err := <-served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	// The release is the server's cancellation, on a goroutine of the
	// gateway's: each turn asks the server's connection again.
	deadline := time.After(waitFor)
	for f.h.PendingCalls()["a"] != 0 {
		select {
		case <-deadline:
			t.Fatal("the call bridged for a client that left is still held")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
