package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// tsStep is a line of testdata/ts-client.mjs.
type tsStep struct {
	Era             string `json:"era"`
	ProtocolVersion string `json:"protocolVersion"`
	Server          *struct {
		Name string `json:"name"`
	} `json:"server"`

	Tools       []string `json:"tools"`
	Lists       int      `json:"lists"`
	ListChanged int      `json:"listChanged"`

	Rejected *struct {
		Code    any    `json:"code"`
		Message string `json:"message"`
	} `json:"rejected"` // a call that failed
	IsError           bool           `json:"isError"`
	Text              string         `json:"text"`
	StructuredContent map[string]any `json:"structuredContent"`
	Asked             []struct {
		Message string   `json:"message"`
		Fields  []string `json:"fields"`
	} `json:"asked"`
	Wire  []tsWire `json:"wire"`
	Posts []tsPost `json:"posts"`

	Errors []string `json:"errors"`
	Exit   *struct {
		Code   *int    `json:"code"`
		Signal *string `json:"signal"`
	} `json:"exit"`
}

// tsWire is a message the client sent ("out") or received ("in").
type tsWire struct {
	Dir                 string          `json:"dir"`
	ID                  json.RawMessage `json:"id"`
	Method              string          `json:"method"`
	ProtocolVersionMeta *string         `json:"protocolVersionMeta"`
	SubscriptionID      any             `json:"subscriptionId"`  // a notification's _meta
	ProtocolVersion     string          `json:"protocolVersion"` // initialize's result
	Name                string          `json:"name"`            // tools/call
	RequestState        bool            `json:"requestState"`    // tools/call
	InputResponses      []string        `json:"inputResponses"`  // tools/call
	ResultType          *string         `json:"resultType"`
	InputRequests       []string        `json:"inputRequests"`
	Error               *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// tsPost is the MCP headers of a POST the client made.
type tsPost struct {
	ProtocolVersion *string `json:"protocolVersion"`
	Method          *string `json:"method"`
	Name            *string `json:"name"`
	Session         bool    `json:"session"`
}

// tsClient is one of the official TypeScript clients in one era.
type tsClient struct {
	name string
	sdk  string // "v1": @modelcontextprotocol/sdk; "v2": @modelcontextprotocol/client
	era  string // "legacy" or "modern"
}

func (c tsClient) modern() bool { return c.era == "modern" }

// locate returns node and the client's package directory, or skips.
func (c tsClient) locate(t *testing.T) (node, dir string) {
	t.Helper()
	if c.sdk == "v1" {
		return peers.SDKClient(t)
	}
	return peers.ClientV2(t)
}

var (
	sdkLegacy    = tsClient{name: "sdk-" + peers.SDKVersion, sdk: "v1", era: "legacy"}
	clientLegacy = tsClient{name: "client-" + peers.ClientVersion + "-legacy", sdk: "v2", era: "legacy"}
	clientModern = tsClient{name: "client-" + peers.ClientVersion + "-modern", sdk: "v2", era: "modern"}
	tsClients    = []tsClient{sdkLegacy, clientLegacy, clientModern}
)

// runTSClient runs testdata/ts-client.mjs with plan (to which it adds the
// client's sdk, dir, era and the run's bound) and returns its steps.
func runTSClient(t *testing.T, c tsClient, plan map[string]any) func(name string) tsStep {
	t.Helper()
	node, dir := c.locate(t)
	script, err := filepath.Abs(filepath.Join("testdata", "ts-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	plan["sdk"], plan["dir"], plan["era"] = c.sdk, dir, c.era
	plan["timeoutMs"] = (90 * time.Second).Milliseconds()
	plan["callTimeoutMs"] = (30 * time.Second).Milliseconds()
	raw, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	steps := peers.RunSteps(t, 2*time.Minute, node, script, []string{string(raw)}, nil)
	return func(name string) tsStep {
		t.Helper()
		s, ok := steps[name]
		if !ok {
			t.Fatalf("no step %q", name)
		}
		var v tsStep
		s.Decode(t, &v)
		return v
	}
}

// TestTSClients has the official TypeScript clients, the v1 SDK (legacy
// only) and the v2 client in each era, drive `mcpvisor serve` (/mcp with
// the bearer token) and `mcpvisor stdio`, with no flag beyond the README's
// (a small catalog is every session's from the start), in front of two gosdkpeer servers: "peer" (2026-07-28, "prefix": false, so
// its tools are add and ask) and "old" (pinned to 2025-11-25, so the host
// speaks the legacy era to it, namespaced: mcp__old__ask). Each client
// waits for the tools to be listed, calls add, then ask on both servers:
// two elicitations (name, then color) its elicitation handler answers.
//
// What the client sees of ask depends on its era alone: a legacy client
// gets elicitation/create requests (from a modern server the host turns
// its input_required rounds into them), a modern client gets input_required
// results and retries with inputResponses and requestState (from a legacy
// server the gateway bridges: its requestState is the gateway's).
func TestTSClients(t *testing.T) {
	peer := peers.GoSDKPeer(t)
	cfg := writeConfig(t, `{"mcpServers":{
		"peer":{"command":"`+peer+`","args":["-transport","stdio","-era","modern"],"prefix":false,"protocolVersion":"2026-07-28"},
		"old":{"command":"`+peer+`","args":["-transport","stdio","-era","dual"],"protocolVersion":"2025-11-25"}
	}}`)
	for _, c := range tsClients {
		for _, transport := range []string{"serve", "stdio"} {
			t.Run(c.name+"/"+transport, func(t *testing.T) {
				t.Parallel()
				plan := map[string]any{
					"tools": []string{"add", "ask", "mcp__old__ask"},
					"calls": []map[string]any{
						{"step": "add", "name": "add", "arguments": map[string]any{"a": 2, "b": 40}},
						{"step": "ask", "name": "ask"},
						{"step": "ask-old", "name": "mcp__old__ask"},
					},
					"answers": map[string]string{"name": "Ada", "color": "teal"},
				}
				if transport == "serve" {
					s := startServe(t, "--config", cfg, "--data", t.TempDir())
					plan["transport"], plan["url"], plan["token"] = "http", s.url+"/mcp", s.token(t)
				} else {
					plan["transport"], plan["command"] = "stdio", cliBin
					plan["args"] = []string{"stdio", "--config", cfg, "--data", t.TempDir()}
				}
				step := runTSClient(t, c, plan)
				checkTSClient(t, c, transport == "serve", step)
			})
		}
	}
}

// checkTSClient checks the steps of a TestTSClients run.
func checkTSClient(t *testing.T, c tsClient, overHTTP bool, step func(string) tsStep) {
	t.Helper()
	conn := step("connect")
	if conn.Server == nil || conn.Server.Name != "mcpvisor" {
		t.Errorf("connected to %+v, want mcpvisor", conn.Server)
	}
	sent := methods(conn.Wire, "out")
	if c.modern() {
		if conn.Era != "modern" || conn.ProtocolVersion != "2026-07-28" {
			t.Errorf("connect: era %q, version %q; want modern 2026-07-28", conn.Era, conn.ProtocolVersion)
		}
		// Over stdio the v2 client sends server/discover to a sibling
		// process it starts and ends first, not on the session's pipes.
		if (overHTTP && !slices.Contains(sent, "server/discover")) || slices.Contains(sent, "initialize") {
			t.Errorf("a modern client sent %v at connect; want server/discover (over HTTP) and no initialize", sent)
		}
	} else {
		if conn.Era != "legacy" || conn.ProtocolVersion != "2025-11-25" {
			t.Errorf("connect: era %q, version %q; want legacy 2025-11-25", conn.Era, conn.ProtocolVersion)
		}
		if !slices.Contains(sent, "initialize") || slices.Contains(sent, "server/discover") {
			t.Errorf("a legacy client sent %v at connect; want initialize and no server/discover", sent)
		}
	}

	// activate_tools stays listed; with --activate all nothing needs it.
	if tools := step("tools").Tools; !slices.Contains(tools, "add") || !slices.Contains(tools, "ask") ||
		!slices.Contains(tools, "mcp__old__ask") || slices.Contains(tools, "mcp__peer__ask") {
		t.Errorf("tools/list: %v", tools)
	}

	add := step("add")
	if add.Rejected != nil || add.IsError || add.Text != "2+40=42" || add.StructuredContent["sum"] != float64(42) {
		t.Errorf("add: %+v", add)
	}
	checkCallWire(t, c, overHTTP, "add", add, 0)

	for _, name := range []string{"ask", "ask-old"} {
		ask := step(name)
		if ask.Rejected != nil || ask.IsError || ask.Text != "name=Ada color=teal" {
			t.Errorf("%s: rejected %+v, isError %v, text %q; want name=Ada color=teal", name, ask.Rejected, ask.IsError, ask.Text)
		}
		var fields [][]string
		for _, a := range ask.Asked {
			fields = append(fields, a.Fields)
		}
		if len(fields) != 2 || !slices.Equal(fields[0], []string{"name"}) || !slices.Equal(fields[1], []string{"color"}) {
			t.Errorf("%s: the elicitation handler was asked for %v; want [name] then [color]", name, fields)
		}
		checkCallWire(t, c, overHTTP, name, ask, 2)
	}

	// 2026-07-28: "The server MUST NOT send notification types the client
	// has not explicitly requested" (subscriptions/listen): every change
	// notification a modern client gets is on its listen stream, tagged
	// with the stream's id.
	if c.modern() {
		for _, name := range []string{"connect", "tools", "add", "ask", "ask-old"} {
			for _, w := range step(name).Wire {
				if w.Dir == "in" && isChangeNotification(w.Method) && w.SubscriptionID == nil {
					t.Errorf("%s: a modern client got %s outside any subscriptions/listen stream", name, w.Method)
				}
			}
		}
	}

	if errs := step("errors").Errors; len(errs) > 0 {
		t.Errorf("the client reported errors: %q", errs)
	}
	if exit := step("closed").Exit; !overHTTP && (exit == nil || exit.Code == nil || *exit.Code != 0 || exit.Signal != nil) {
		t.Errorf("mcpvisor stdio exited %+v, want code 0 at the end of its input", exit)
	}
}

// checkCallWire checks the messages of one tools/call that asked for input
// rounds times, one question a round. A modern client sends the call
// rounds+1 times, each retry with the answer to the previous input_required
// result (under the key the server chose) and its requestState, and takes
// no request; a legacy client sends it once and answers rounds
// elicitation/create requests.
func checkCallWire(t *testing.T, c tsClient, overHTTP bool, step string, s tsStep, rounds int) {
	t.Helper()
	var calls []tsWire
	var elicits int
	var inputRequired [][]string
	for _, w := range s.Wire {
		switch {
		case w.Dir == "out" && w.Method == "tools/call":
			calls = append(calls, w)
		case w.Dir == "in" && w.Method == "elicitation/create":
			elicits++
		case w.Dir == "in" && w.ResultType != nil && *w.ResultType == "input_required":
			inputRequired = append(inputRequired, w.InputRequests)
		case w.Dir == "in" && w.Error != nil:
			t.Errorf("%s: an error response %+v", step, w.Error)
		}
	}
	if !c.modern() {
		if len(calls) != 1 || calls[0].RequestState || elicits != rounds || len(inputRequired) != 0 {
			t.Errorf("%s: a legacy client sent %d tools/call (%+v), got %d elicitation/create and %d input_required results; want 1, %d and 0",
				step, len(calls), calls, elicits, len(inputRequired), rounds)
		}
		if overHTTP {
			for _, p := range s.Posts {
				if !p.Session || p.Method != nil {
					t.Errorf("%s: a legacy POST %+v; want Mcp-Session-Id and no Mcp-Method", step, p)
				}
			}
		}
		return
	}
	if len(calls) != rounds+1 || elicits != 0 || len(inputRequired) != rounds {
		t.Errorf("%s: a modern client sent %d tools/call, got %d elicitation/create and %d input_required results; want %d, 0 and %d",
			step, len(calls), elicits, len(inputRequired), rounds+1, rounds)
		return
	}
	for i, call := range calls {
		if call.ProtocolVersionMeta == nil || *call.ProtocolVersionMeta != "2026-07-28" {
			t.Errorf("%s: call %d without _meta protocolVersion 2026-07-28", step, i)
		}
		if i == 0 {
			if call.RequestState || len(call.InputResponses) > 0 {
				t.Errorf("%s: the first call carries input: %+v", step, call)
			}
			continue
		}
		if asked := inputRequired[i-1]; len(asked) != 1 || !call.RequestState || !slices.Equal(call.InputResponses, asked) {
			t.Errorf("%s: round %d asked for %v, the retry answered %v (requestState %v); want one question, answered with the state",
				step, i, asked, call.InputResponses, call.RequestState)
		}
	}
	if overHTTP {
		if len(s.Posts) != len(calls) {
			t.Errorf("%s: %d POSTs for %d calls", step, len(s.Posts), len(calls))
		}
		for _, p := range s.Posts {
			if p.Session || p.ProtocolVersion == nil || *p.ProtocolVersion != "2026-07-28" ||
				p.Method == nil || *p.Method != "tools/call" || p.Name == nil || *p.Name != calls[0].Name {
				t.Errorf("%s: a modern POST's headers %s; want MCP-Protocol-Version 2026-07-28, Mcp-Method tools/call, Mcp-Name %s, no session",
					step, jsonString(p), calls[0].Name)
			}
		}
	}
}

// isChangeNotification reports whether method is a notification a
// subscriptions/listen filter selects.
func isChangeNotification(method string) bool {
	return method == "notifications/resources/updated" ||
		strings.HasPrefix(method, "notifications/") && strings.HasSuffix(method, "/list_changed")
}

// methods lists the methods of the requests and notifications in dir.
func methods(wire []tsWire, dir string) []string {
	var m []string
	for _, w := range wire {
		if w.Dir == dir && w.Method != "" {
			m = append(m, w.Method)
		}
	}
	return m
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return strings.TrimSpace(string(b))
}
