package gateway_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// sdkPlan is what testdata/sdk-client.mjs is asked to do (see its header).
type sdkPlan struct {
	SDK          string          `json:"sdk"`
	Transport    string          `json:"transport"`
	URL          string          `json:"url,omitempty"`
	Token        string          `json:"token,omitempty"`
	Group        string          `json:"group"`
	EchoText     string          `json:"echoText"`
	AskArgs      json.RawMessage `json:"askArgs"`
	ElicitAnswer json.RawMessage `json:"elicitAnswer"`
	SilentAbort  bool            `json:"silentAbort"`
	TimeoutMS    int64           `json:"timeoutMs"`
}

// sdkStep is one line the script prints; each step fills its own fields.
type sdkStep struct {
	Step   string `json:"step"`
	Server *struct {
		Name string `json:"name"`
	} `json:"server"` // initialize
	ProtocolVersion  string   `json:"protocolVersion"`
	ToolsListChanged bool     `json:"toolsListChanged"`
	Tools            []string `json:"tools"`       // list-before, list-after
	ListChanged      int      `json:"listChanged"` // list-after: list_changed seen after activate_tools
	IsError          bool     `json:"isError"`
	Text             string   `json:"text"`
	Progress         []struct {
		Progress float64 `json:"progress"`
		Total    float64 `json:"total"`
		Message  string  `json:"message"`
	} `json:"progress"`
	StructuredContent json.RawMessage `json:"structuredContent"` // elicit
	Asked             []struct {
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	} `json:"asked"` // elicit: the elicitation requests the client got
	Rejected *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"rejected"` // abort-*: how the aborted call's promise failed
	Answer *struct {
		Status      int    `json:"status"`
		ContentType string `json:"contentType"`
		Body        string `json:"body"`
		ReadError   string `json:"readError"`
		FetchError  string `json:"fetchError"`
	} `json:"answer"` // abort-* over HTTP: the gateway's whole answer to the call's POST
	Errors         []string `json:"errors"`         // errors, closed: what the SDK reported to onerror
	SessionID      string   `json:"sessionId"`      // terminate
	SessionIDAfter *string  `json:"sessionIdAfter"` // terminate
	Streams        []struct {
		Status      int     `json:"status"`
		ContentType string  `json:"contentType"`
		Error       *string `json:"error"`
	} `json:"streams"` // terminate: the session's GET streams, all ended
}

// runSDKClient runs testdata/sdk-client.mjs with plan and returns its
// steps by name; onStep is as for peers.RunSteps.
func runSDKClient(t *testing.T, node string, plan sdkPlan, onStep func(sdkStep, io.Writer)) map[string]sdkStep {
	t.Helper()
	return runScript(t, node, "sdk-client.mjs", plan, func(s peers.Step) sdkStep {
		var st sdkStep
		s.Decode(t, &st)
		return st
	}, onStep)
}

// runScript runs testdata/<script> with plan (as JSON, its one argument)
// and returns its steps by name, each decoded; onStep, if not nil, sees
// each step as it comes and may write to the script's stdin (see
// peers.RunSteps).
func runScript[S any](t *testing.T, node, script string, plan any, decode func(peers.Step) S, onStep func(S, io.Writer)) map[string]S {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]S{}
	for name, s := range peers.RunSteps(t, 2*waitFor, node, path, []string{string(raw)}, func(s peers.Step, stdin io.Writer) {
		if onStep != nil {
			onStep(decode(s), stdin)
		}
	}) {
		steps[name] = decode(s)
	}
	return steps
}

// step returns the named step, failing the test when the script never
// reached it.
func step[S any](t *testing.T, steps map[string]S, name string) S {
	t.Helper()
	s, ok := steps[name]
	if !ok {
		t.Fatalf("no step %q", name)
	}
	return s
}

// bearerLog guards an HTTP handler with a bearer token, as mcpvisor serve
// does, and counts the requests by method and the ones it refused.
type bearerLog struct {
	mu      sync.Mutex
	methods map[string]int
	refused int
}

func (l *bearerLog) wrap(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		ok := r.Header.Get("Authorization") == "Bearer "+token
		l.methods[r.Method]++
		if !ok {
			l.refused++
		}
		l.mu.Unlock()
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// TestSDKClientHTTP drives the gateway's Streamable HTTP transport with the
// official TypeScript SDK client: its list_changed handling, progress,
// elicitation, cancellation by AbortSignal and DELETE at the end must all
// work as that client expects, with no error reported on its side.
func TestSDKClientHTTP(t *testing.T) {
	node, sdk := peers.SDKClient(t)
	f := newFixture(t, gateway.Options{}, withInbox)
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	reqs := &bearerLog{methods: map[string]int{}}
	srv := httptest.NewServer(reqs.wrap(token, f.g.Handler()))
	t.Cleanup(func() {
		// The gateway first: it ends the streams the server's Close waits for.
		if err := f.g.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
		srv.Close()
	})

	plan := sdkPlan{
		SDK: sdk, Transport: "http", URL: srv.URL + "/mcp", Token: token,
		Group: "a", EchoText: "hello from the TypeScript SDK",
		AskArgs:      decode[struct{ Arguments json.RawMessage }](t, json.RawMessage(askArgs)).Arguments,
		ElicitAnswer: json.RawMessage(`{"name":"Ada"}`),
		SilentAbort:  true,
		TimeoutMS:    (2 * waitFor).Milliseconds(),
	}
	steps := runSDKClient(t, node, plan, func(s sdkStep, stdin io.Writer) {
		if s.Step == "waiting" {
			// The call is tracked before it reaches the server: a cancel
			// from now on finds it.
			f.waitNotification(t, "a", "event/started")
			if _, err := io.WriteString(stdin, "started\n"); err != nil {
				t.Fatal(err)
			}
		}
	})

	checkSDKSession(t, steps, plan)

	// The streaming call's answer: an SSE stream that carried the one
	// progress notification and ended without a response.
	as := step(t, steps, "abort-streaming")
	if as.Answer == nil || as.Answer.ContentType != "text/event-stream" || as.Answer.ReadError != "" {
		t.Fatalf("the aborted streaming call was answered %+v, want an SSE stream", as.Answer)
	}
	var events []frame
	for ev := range sseEvents(strings.NewReader(as.Answer.Body)) {
		events = append(events, ev)
	}
	if len(events) != 1 || events[0].Method != "notifications/progress" {
		t.Fatalf("the aborted streaming call's stream carried %+v, want one progress notification and no response:\n%s", events, as.Answer.Body)
	}

	// The call cancelled before anything was streamed gets no response
	// either (the spec's cancellation: the receiver SHOULD NOT respond):
	// its stream ends with nothing but the priming event.
	sa := step(t, steps, "abort-silent")
	if sa.Rejected == nil {
		t.Fatal("the aborted silent call did not fail on the client")
	}
	if sa.Answer == nil || sa.Answer.Status != http.StatusOK || sa.Answer.ContentType != "text/event-stream" || sa.Answer.ReadError != "" ||
		!regexp.MustCompile(`^id: \d+-0\nretry: \d+\ndata: \n\n$`).MatchString(sa.Answer.Body) {
		t.Fatalf("the aborted silent call was answered %+v, want an SSE stream of the priming event alone", sa.Answer)
	}
	waitHistory(t, f.h, "mcp__a__slow", "cancelled")
	waitHistory(t, f.h, "mcp__a__progress", "cancelled")

	// DELETE ended the session: its id is unknown now.
	term := step(t, steps, "terminate")
	if term.SessionID == "" || term.SessionIDAfter != nil {
		t.Fatalf("terminateSession: session %q, after %v", term.SessionID, term.SessionIDAfter)
	}
	// The SDK's GET stream carried the list_changed; DELETE ended it.
	if len(term.Streams) != 1 || term.Streams[0].Status != http.StatusOK || term.Streams[0].ContentType != "text/event-stream" || term.Streams[0].Error != nil {
		t.Fatalf("GET streams %+v, want one SSE stream, ended without error", term.Streams)
	}
	c := &httpClient{t: t, url: plan.URL, sid: term.SessionID}
	if resp := c.do(http.MethodPost, request(99, "ping", ""), map[string]string{"Authorization": "Bearer " + token}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the session after DELETE: status %d, want 404", resp.StatusCode)
	}
	reqs.mu.Lock()
	defer reqs.mu.Unlock()
	if reqs.refused != 0 || reqs.methods[http.MethodGet] != 1 || reqs.methods[http.MethodDelete] != 1 {
		t.Fatalf("requests %v, %d without the token: want every one with it, one GET and one DELETE", reqs.methods, reqs.refused)
	}
}

// checkSDKSession checks the steps of the script's session.
func checkSDKSession(t *testing.T, steps map[string]sdkStep, plan sdkPlan) {
	t.Helper()
	init := step(t, steps, "initialize")
	if init.Server == nil || init.Server.Name != "mcpvisor" || !init.ToolsListChanged {
		t.Fatalf("initialize: %+v", init)
	}
	if init.ProtocolVersion != "2025-11-25" {
		t.Fatalf("negotiated %q, want 2025-11-25", init.ProtocolVersion)
	}
	if tools := step(t, steps, "list-before").Tools; len(tools) != 1 || tools[0] != gateway.ActivateTool {
		t.Fatalf("tools before activation: %v", tools)
	}
	if act := step(t, steps, "activate"); act.IsError || !strings.Contains(act.Text, "Active groups: a") {
		t.Fatalf("activate_tools: %+v", act)
	}
	after := step(t, steps, "list-after")
	if after.ListChanged < 1 {
		t.Fatal("no notifications/tools/list_changed after activate_tools")
	}
	for _, want := range []string{gateway.ActivateTool, "mcp__a__echo", "mcp__a__progress", "mcp__a__ask", "mcp__a__slow"} {
		if !contains(after.Tools, want) {
			t.Fatalf("tools after activation lack %s: %v", want, after.Tools)
		}
	}
	for _, tool := range after.Tools {
		if tool != gateway.ActivateTool && !strings.HasPrefix(tool, "mcp__a__") {
			t.Fatalf("tool %s listed: only group a was activated", tool)
		}
	}
	for _, name := range []string{"echo", "echo-again"} {
		want := plan.EchoText
		if name == "echo-again" {
			want += " again"
		}
		if e := step(t, steps, name); e.IsError || !strings.Contains(e.Text, `"text":"`+want+`"`) {
			t.Fatalf("%s: %+v, want the arguments echoed", name, e)
		}
	}

	prog := step(t, steps, "progress")
	if prog.IsError || prog.Text != "done after 3 steps" {
		t.Fatalf("progress result: %+v", prog)
	}
	if len(prog.Progress) != 3 {
		t.Fatalf("progress notifications %+v, want 3", prog.Progress)
	}
	for i, p := range prog.Progress {
		if p.Total != 3 || (i > 0 && p.Progress <= prog.Progress[i-1].Progress) || p.Message != "step "+itoa(int(p.Progress))+" of 3" {
			t.Fatalf("progress notifications %+v", prog.Progress)
		}
	}

	el := step(t, steps, "elicit")
	if len(el.Asked) != 1 || el.Asked[0].Message != "Your name?" || !strings.Contains(string(el.Asked[0].RequestedSchema), `"name"`) {
		t.Fatalf("the client was asked %+v, want the server's one question", el.Asked)
	}
	// The server got the client's answer, with the schema's default
	// filled in by the host.
	var got askAnswer
	if err := json.Unmarshal(el.StructuredContent, &got); err != nil || el.IsError {
		t.Fatalf("elicit result %s (isError %v): %v", el.StructuredContent, el.IsError, err)
	}
	if got.Action != "accept" || got.Content["name"] != "Ada" || got.Content["n"] != float64(7) {
		t.Fatalf("the server received %+v", got)
	}

	as := step(t, steps, "abort-streaming")
	if len(as.Progress) != 1 || as.Rejected == nil || !strings.Contains(as.Rejected.Message, "aborts the streaming call") {
		t.Fatalf("the aborted streaming call: %+v", as)
	}
	step(t, steps, "ping")
	if errs := step(t, steps, "errors").Errors; len(errs) != 0 {
		t.Fatalf("the SDK reported errors during the session: %q", errs)
	}
	if errs := step(t, steps, "closed").Errors; len(errs) != 0 {
		t.Fatalf("the SDK reported errors while closing: %q", errs)
	}
}
