package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// secretValue is an env value given to register_mcp: it must never leave
// the host through the API.
const secretValue = "some-secret"

// registerArgs are register_mcp's arguments for an mcptest server named
// name, with an argument holding a space and a secret in its env; command
// is the command line they run.
func registerArgs(name string) (args map[string]any, command []string) {
	argv := []string{"-name", name + " server", "-tools", "2"}
	return map[string]any{"name": name, "transport": "stdio", "command": mcptestBin, "args": argv,
			"env": map[string]string{"TOKEN": secretValue}},
		append([]string{mcptestBin}, argv...)
}

// waitApprovals waits, without polling, until h has n pending approvals,
// and returns them.
func waitApprovals(t *testing.T, ctx context.Context, h *mcpvisor.Host, n int) []mcpvisor.ApprovalRequest {
	t.Helper()
	for {
		changed := h.ApprovalsChanged()
		if l := h.Approvals(); len(l) == n {
			return l
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("never %d pending approvals (now %d)", n, len(h.Approvals()))
		}
	}
}

// callInBackground POSTs body to /v1/call with the gateway token, as an
// MCP client calls, and returns a channel with the answer. The request is cancelled, and waited for, when the test ends,
// before the sidecar closes.
func (a *api) callInBackground(ctx context.Context, body any) <-chan response {
	a.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		a.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	a.t.Cleanup(func() { cancel(); wg.Wait() })
	done := make(chan response, 1)
	wg.Go(func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", a.ts.URL+"/v1/call", bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+testGatewayToken)
		resp, err := a.ts.Client().Do(req)
		if err != nil {
			done <- response{body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- response{status: resp.StatusCode, header: resp.Header, body: b}
	})
	return done
}

func awaitResponse(t *testing.T, ctx context.Context, done <-chan response, what string) response {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
		t.Fatalf("%s did not return", what)
		return response{}
	}
}

type approvalJSON struct {
	ID          string    `json:"id"`
	Session     string    `json:"session"`
	Stack       string    `json:"stack"`
	Tool        string    `json:"tool"`
	Server      string    `json:"server"`
	Summary     string    `json:"summary"`
	Command     []string  `json:"command"`
	Destructive bool      `json:"destructive"`
	Created     time.Time `json:"created"`
	Deadline    time.Time `json:"deadline"`
}

// listApprovals is GET /v1/approvals, checked to carry exactly the view's
// fields (never the arguments) and no secret.
func (a *api) listApprovals() []approvalJSON {
	a.t.Helper()
	r := a.do("GET", "/v1/approvals", nil)
	if r.status != http.StatusOK {
		a.t.Fatalf("GET /v1/approvals: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), secretValue) {
		a.t.Errorf("GET /v1/approvals shows the secret: %s", r.body)
	}
	var keys struct {
		Approvals []map[string]json.RawMessage `json:"approvals"`
	}
	r.json(a.t, &keys)
	want := []string{"command", "created", "deadline", "destructive", "id", "server", "session", "stack", "summary", "tool"}
	for _, m := range keys.Approvals {
		var got []string
		for k := range m {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			a.t.Errorf("an approval's fields are %v, want %v", got, want)
		}
	}
	var l struct {
		Approvals []approvalJSON `json:"approvals"`
	}
	r.json(a.t, &l)
	if l.Approvals == nil {
		a.t.Errorf("approvals is not a list: %s", r.body)
	}
	return l.Approvals
}

func TestApprovalsThroughTheAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := sidecar.NewMetrics(sidecar.MetricsOptions{})
	a := openAPIHost(t, mcpvisor.Options{ApprovalInbox: true, CallMiddleware: []mcpvisor.CallMiddleware{m.CallMiddleware}},
		sidecar.Options{}, mcptest("keep"))
	if r := a.do("POST", "/v1/sessions/s/activate", map[string]any{"groups": []string{"config"}}); r.status != http.StatusOK {
		t.Fatalf("activate config: %d %s", r.status, r.body)
	}
	if l := a.listApprovals(); len(l) != 0 {
		t.Fatalf("approvals before any call: %+v", l)
	}

	args, command := registerArgs("fresh")
	done := a.callInBackground(ctx, map[string]any{"session": "s", "tool": "register_mcp", "arguments": args})
	pending := waitApprovals(t, ctx, a.h, 1)[0]
	l := a.listApprovals()
	if len(l) != 1 {
		t.Fatalf("listed %d approvals, want 1", len(l))
	}
	got := l[0]
	if !got.Created.Equal(pending.Created) || !got.Deadline.After(got.Created) {
		t.Errorf("created %v, deadline %v; want created %v and a later deadline", got.Created, got.Deadline, pending.Created)
	}
	got.Created, got.Deadline = time.Time{}, time.Time{}
	want := approvalJSON{ID: pending.ID, Session: "s", Tool: "register_mcp", Server: "fresh",
		Summary: pending.Summary, Command: command}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the pending approval (-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Summary, "TOKEN") {
		t.Errorf("the summary does not name the env variable: %q", got.Summary)
	}

	// Refusals leave it pending.
	for _, tc := range []struct {
		name, id string
		body     any
		auth     string
		status   int
		code     string
	}{
		{"bad decision", pending.ID, map[string]any{"decision": "maybe"}, "Bearer " + testToken, 400, sidecar.CodeInvalidRequest},
		{"no decision", pending.ID, map[string]any{"reason": "why"}, "Bearer " + testToken, 400, sidecar.CodeInvalidRequest},
		{"empty body", pending.ID, nil, "Bearer " + testToken, 400, sidecar.CodeInvalidRequest},
		{"not JSON", pending.ID, "allow", "Bearer " + testToken, 400, sidecar.CodeInvalidRequest},
		{"unknown id", "no-such-id", map[string]any{"decision": "allow"}, "Bearer " + testToken, 404, sidecar.CodeUnknownApproval},
		{"no token", pending.ID, map[string]any{"decision": "allow"}, "", 401, sidecar.CodeUnauthorized},
		{"wrong token", pending.ID, map[string]any{"decision": "allow"}, "Bearer nope", 401, sidecar.CodeUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.doAuth("POST", "/v1/approvals/"+tc.id, tc.body, tc.auth, nil)
			if r.status != tc.status || r.errorCode(t) != tc.code {
				t.Errorf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	if r := a.doAuth("GET", "/v1/approvals", nil, "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("GET /v1/approvals without a token: %d", r.status)
	}
	if n := len(a.h.Approvals()); n != 1 {
		t.Fatalf("%d pending after the refusals, want 1", n)
	}

	if r := a.do("POST", "/v1/approvals/"+pending.ID, map[string]any{"decision": "allow"}); r.status != http.StatusNoContent {
		t.Fatalf("allow: %d %s", r.status, r.body)
	}
	r := awaitResponse(t, ctx, done, "the allowed register_mcp")
	var res callResult
	r.json(t, &res)
	if r.status != http.StatusOK || res.IsError || !strings.Contains(res.Result, "ready") {
		t.Fatalf("the allowed register_mcp: %d %s", r.status, r.body)
	}
	if st, ok := serverStatus(a.h, "fresh"); !ok || st.State != mcpvisor.StateReady {
		t.Errorf("fresh after the registration: %+v", st)
	}
	if r := a.do("GET", "/v1/servers", nil); strings.Contains(string(r.body), secretValue) {
		t.Errorf("GET /v1/servers shows the secret: %s", r.body)
	}
	if l := a.listApprovals(); len(l) != 0 {
		t.Errorf("still listed after the answer: %+v", l)
	}
	r = a.do("POST", "/v1/approvals/"+pending.ID, map[string]any{"decision": "allow"})
	if r.status != http.StatusNotFound || r.errorCode(t) != sidecar.CodeUnknownApproval {
		t.Errorf("allowing it again: %d %s", r.status, r.body)
	}

	// delete_mcp is destructive and runs no command; denied with a reason,
	// the model reads the reason and the server stays.
	done = a.callInBackground(ctx, map[string]any{"session": "s", "tool": "delete_mcp", "arguments": map[string]any{"name": "keep"}})
	pending = waitApprovals(t, ctx, a.h, 1)[0]
	l = a.listApprovals()
	if len(l) != 1 || l[0].Tool != "delete_mcp" || !l[0].Destructive || l[0].Server != "keep" || l[0].Command == nil || len(l[0].Command) != 0 {
		t.Fatalf("the pending delete_mcp: %+v", l)
	}
	const reason = "keep it, please"
	if r := a.do("POST", "/v1/approvals/"+pending.ID, map[string]any{"decision": "deny", "reason": reason}); r.status != http.StatusNoContent {
		t.Fatalf("deny: %d %s", r.status, r.body)
	}
	r = awaitResponse(t, ctx, done, "the denied delete_mcp")
	res = callResult{}
	r.json(t, &res)
	if r.status != http.StatusOK || !res.IsError || !strings.Contains(res.Result, reason) {
		t.Fatalf("the denied delete_mcp: %d %s, want a tool error with the reason", r.status, r.body)
	}
	if _, ok := serverStatus(a.h, "keep"); !ok {
		t.Error("the denied delete_mcp deleted keep")
	}

	fams := metricsScrape(t, m)
	for _, c := range []struct{ tool, outcome string }{{"register_mcp", "ok"}, {"delete_mcp", "tool_error"}} {
		if got := metricValue(t, fams, "mcpvisor_calls_total", "outcome="+c.outcome, "server=", "tool="+c.tool); got < 1 {
			t.Errorf("mcpvisor_calls_total{,%s,%s} = %v, want at least 1", c.tool, c.outcome, got)
		}
	}
}

func serverStatus(h *mcpvisor.Host, name string) (mcpvisor.ServerStatus, bool) {
	for _, st := range h.Status() {
		if st.Name == name {
			return st, true
		}
	}
	return mcpvisor.ServerStatus{}, false
}
