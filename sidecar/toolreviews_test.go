package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// waitHost waits, without polling, until cond holds of the host. It wakes
// on the tool reviews and on the servers' status: a review is announced as
// the server's catalog is rebuilt, and the catalog (its tools, its
// reviews) is in place by the status change that follows.
func waitHost(t *testing.T, ctx context.Context, h *mcpvisor.Host, what string, cond func() bool) {
	t.Helper()
	for {
		reviews, status := h.ToolReviewsChanged(), h.StatusChanged()
		if cond() {
			return
		}
		select {
		case <-reviews:
		case <-status:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s (reviews %+v)", what, h.ToolReviews())
		}
	}
}

// reviewOf is the host's review of a server's tool, if it has one.
func reviewOf(h *mcpvisor.Host, server, tool string) (mcpvisor.ToolReview, bool) {
	for _, rv := range h.ToolReviews() {
		if rv.Server == server && rv.Tool == tool {
			return rv, true
		}
	}
	return mcpvisor.ToolReview{}, false
}

// waitReview waits until the host's review of a server's tool satisfies
// cond, and returns it.
func waitReview(t *testing.T, ctx context.Context, h *mcpvisor.Host, server, tool string, cond func(mcpvisor.ToolReview) bool) mcpvisor.ToolReview {
	t.Helper()
	var got mcpvisor.ToolReview
	waitHost(t, ctx, h, "the review of "+server+"/"+tool, func() bool {
		rv, ok := reviewOf(h, server, tool)
		got = rv
		return ok && cond(rv)
	})
	return got
}

// exposes reports whether the host's catalog holds the tool.
func exposes(h *mcpvisor.Host, name string) bool {
	return slices.ContainsFunc(h.Tools(), func(t mcpvisor.Tool) bool { return t.Name == name })
}

// listReviews is GET /v1/tools/reviews, checked to be exactly json.Marshal
// of Host.ToolReviews, camelCase throughout.
func (a *api) listReviews() []mcpvisor.ToolReview {
	a.t.Helper()
	want, err := json.Marshal(map[string]any{"reviews": a.h.ToolReviews()})
	if err != nil {
		a.t.Fatal(err)
	}
	r := a.do("GET", "/v1/tools/reviews", nil)
	if r.status != http.StatusOK {
		a.t.Fatalf("GET /v1/tools/reviews: %d %s", r.status, r.body)
	}
	if diff := cmp.Diff(string(want), string(bytes.TrimSpace(r.body))); diff != "" {
		a.t.Errorf("GET /v1/tools/reviews (-Host.ToolReviews +got):\n%s", diff)
	}
	var v any
	r.json(a.t, &v)
	if bad := snakeKeys("", v); len(bad) > 0 {
		a.t.Errorf("GET /v1/tools/reviews: keys not camelCase: %v", bad)
	}
	var l struct {
		Reviews []mcpvisor.ToolReview `json:"reviews"`
	}
	r.json(a.t, &l)
	return l.Reviews
}

func decision(server, tool, hash, decide, by string) map[string]any {
	body := map[string]any{"server": server, "tool": tool, "hash": hash, "decision": decide}
	if by != "" {
		body["by"] = by
	}
	return body
}

// Under hold, the API lists the withheld tools, refuses a call to one with
// 409 tool_withheld, and decides on exactly the definition shown: an
// approval exposes the tool at once, a stale hash is 409 stale_review, a
// rejection keeps a changed definition withheld, and the journal names who
// decided.
func TestToolReviewsAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := openAPIHost(t, mcpvisor.Options{ToolPolicy: mcpvisor.ToolPolicyHold}, sidecar.Options{}, mcptest("rp"))
	held := func(rv mcpvisor.ToolReview) bool { return rv.Held }
	waitReview(t, ctx, a.h, "rp", "echo", held)
	waitReview(t, ctx, a.h, "rp", "rug_pull", held)

	reviews := a.listReviews()
	i := slices.IndexFunc(reviews, func(rv mcpvisor.ToolReview) bool { return rv.Tool == "echo" })
	if i < 0 {
		t.Fatalf("GET /v1/tools/reviews lacks echo: %+v", reviews)
	}
	echo := reviews[i]
	if echo.Server != "rp" || echo.Name != "mcp__rp__echo" || echo.State != "new" || !echo.Held || echo.Rejected ||
		!strings.HasPrefix(echo.Hash, "sha256:") || echo.Definition.Description == "" || len(echo.Definition.InputSchema) == 0 {
		t.Errorf("echo's review: %+v", echo)
	}
	if exposes(a.h, "mcp__rp__echo") {
		t.Fatal("echo is exposed before any approval")
	}
	call := func(tool string) response {
		t.Helper()
		return a.do("POST", "/v1/call", map[string]any{"tool": tool, "arguments": map[string]any{}})
	}
	if r := call("mcp__rp__echo"); r.status != http.StatusConflict || r.errorCode(t) != sidecar.CodeToolWithheld {
		t.Errorf("calling the held echo: %d %s, want 409 %s", r.status, r.body, sidecar.CodeToolWithheld)
	}

	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"no body", nil, 400, sidecar.CodeInvalidRequest},
		{"not JSON", `{"server":`, 400, sidecar.CodeInvalidRequest},
		{"decision twice", `{"server":"rp","tool":"echo","hash":"` + echo.Hash + `","decision":"reject","decision":"approve"}`,
			400, sidecar.CodeInvalidRequest},
		{"no server", decision("", "echo", echo.Hash, "approve", ""), 400, sidecar.CodeInvalidRequest},
		{"no tool", decision("rp", "", echo.Hash, "approve", ""), 400, sidecar.CodeInvalidRequest},
		{"no hash", decision("rp", "echo", "", "approve", ""), 400, sidecar.CodeInvalidRequest},
		{"no decision", decision("rp", "echo", echo.Hash, "", ""), 400, sidecar.CodeInvalidRequest},
		{"allow is not a decision", decision("rp", "echo", echo.Hash, "allow", ""), 400, sidecar.CodeInvalidRequest},
		{"unknown server", decision("nope", "echo", echo.Hash, "approve", ""), 404, sidecar.CodeUnknownServer},
		{"unknown tool", decision("rp", "nope", echo.Hash, "approve", ""), 409, sidecar.CodeStaleReview},
		{"another hash", decision("rp", "echo", "sha256:0000", "approve", ""), 409, sidecar.CodeStaleReview},
		{"another tool's hash", decision("rp", "rug_pull", echo.Hash, "reject", ""), 409, sidecar.CodeStaleReview},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do("POST", "/v1/tools/reviews/decide", tc.body)
			if r.status != tc.status || r.errorCode(t) != tc.code {
				t.Errorf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	if rv, ok := reviewOf(a.h, "rp", "echo"); !ok || !rv.Held || rv.Rejected || rv.Hash != echo.Hash || exposes(a.h, "mcp__rp__echo") {
		t.Fatalf("a refused decision changed echo: %+v (listed %v)", rv, ok)
	}

	// Approved: exposed and callable once the answer is in.
	if r := a.do("POST", "/v1/tools/reviews/decide", decision("rp", "echo", echo.Hash, "approve", "alice")); r.status != http.StatusNoContent {
		t.Fatalf("approving echo: %d %s", r.status, r.body)
	}
	if !exposes(a.h, "mcp__rp__echo") {
		t.Fatal("echo is not exposed when its approval has answered")
	}
	if rv, ok := reviewOf(a.h, "rp", "echo"); ok {
		t.Errorf("echo is still to review after its approval: %+v", rv)
	}
	if r := call("mcp__rp__echo"); r.status != http.StatusOK {
		t.Fatalf("calling the approved echo: %d %s", r.status, r.body)
	}
	rug, _ := reviewOf(a.h, "rp", "rug_pull")
	if r := a.do("POST", "/v1/tools/reviews/decide", decision("rp", "rug_pull", rug.Hash, "approve", "")); r.status != http.StatusNoContent {
		t.Fatalf("approving rug_pull: %d %s", r.status, r.body)
	}

	// The rug pull: echo's new description is withheld, and what was
	// approved before cannot be approved for it.
	if r := call("mcp__rp__rug_pull"); r.status != http.StatusOK {
		t.Fatalf("calling rug_pull: %d %s", r.status, r.body)
	}
	changed := waitReview(t, ctx, a.h, "rp", "echo", func(rv mcpvisor.ToolReview) bool { return rv.State == "changed" })
	reviews = a.listReviews()
	i = slices.IndexFunc(reviews, func(rv mcpvisor.ToolReview) bool { return rv.Tool == "echo" })
	if i < 0 || reviews[i].Hash != changed.Hash || !reviews[i].Held || reviews[i].Approved != echo.Hash ||
		!strings.Contains(reviews[i].Diff, "id_rsa") || len(reviews[i].Findings) == 0 {
		t.Fatalf("the changed echo as listed: %+v", reviews)
	}
	if r := call("mcp__rp__echo"); r.status != http.StatusConflict || r.errorCode(t) != sidecar.CodeToolWithheld {
		t.Errorf("calling the changed echo: %d %s, want 409 %s", r.status, r.body, sidecar.CodeToolWithheld)
	}
	if r := a.do("POST", "/v1/tools/reviews/decide", decision("rp", "echo", echo.Hash, "approve", "alice")); r.status != http.StatusConflict ||
		r.errorCode(t) != sidecar.CodeStaleReview {
		t.Errorf("approving echo's old definition: %d %s, want 409 %s", r.status, r.body, sidecar.CodeStaleReview)
	}

	// Rejected: it stays withheld, marked.
	if r := a.do("POST", "/v1/tools/reviews/decide", decision("rp", "echo", changed.Hash, "reject", "bob")); r.status != http.StatusNoContent {
		t.Fatalf("rejecting the changed echo: %d %s", r.status, r.body)
	}
	if rv, ok := reviewOf(a.h, "rp", "echo"); !ok || !rv.Rejected || !rv.Held || rv.Hash != changed.Hash {
		t.Errorf("echo after the rejection: %+v (listed %v)", rv, ok)
	}
	if r := call("mcp__rp__echo"); r.status != http.StatusConflict || r.errorCode(t) != sidecar.CodeToolWithheld {
		t.Errorf("calling the rejected echo: %d %s, want 409 %s", r.status, r.body, sidecar.CodeToolWithheld)
	}

	// The journal: each definition first listed, each decision and who
	// made it, as the API says it.
	var hist struct {
		History []mcpvisor.HistoryRecord `json:"history"`
	}
	r := a.do("GET", "/v1/history?kind=tool&server=rp", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/history?kind=tool: %d %s", r.status, r.body)
	}
	r.json(t, &hist)
	trail := map[string][]string{}
	for _, rec := range hist.History {
		if rec.Kind != mcpvisor.HistoryTool {
			t.Errorf("kind=tool lists a %s record: %+v", rec.Kind, rec)
		}
		trail[rec.Tool] = append(trail[rec.Tool], rec.Transition+"/"+rec.By)
	}
	want := map[string][]string{
		"mcp__rp__echo":     {"new/", "approved/api:alice", "changed/", "rejected/api:bob"},
		"mcp__rp__rug_pull": {"new/", "approved/api"},
	}
	for tool, w := range want {
		if !slices.Equal(trail[tool], w) {
			t.Errorf("history of %s: %v, want %v", tool, trail[tool], w)
		}
	}
}

// Without a tool policy nothing is held, and the list is empty, not null.
func TestToolReviewsEmpty(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	r := a.do("GET", "/v1/tools/reviews", nil)
	if r.status != http.StatusOK || string(bytes.TrimSpace(r.body)) != `{"reviews":[]}` {
		t.Errorf("GET /v1/tools/reviews without a policy: %d %s", r.status, r.body)
	}
	if r := a.do("POST", "/v1/tools/reviews/decide", decision("t", "echo", "sha256:00", "approve", "")); r.status != http.StatusConflict ||
		r.errorCode(t) != sidecar.CodeStaleReview {
		t.Errorf("deciding a tool nothing holds: %d %s, want 409 %s", r.status, r.body, sidecar.CodeStaleReview)
	}
}

// The inbox stream carries the tool reviews, an empty list when there are
// none, and follows a decision and a rug pull.
func TestInboxStreamCarriesToolReviews(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := openAPIHost(t, mcpvisor.Options{ToolPolicy: mcpvisor.ToolPolicyHold}, sidecar.Options{}, mcptest("rp"))
	// Every tool but echo approved through the host before the stream
	// starts (one listing brings every review): it then shows echo alone.
	waitReview(t, ctx, a.h, "rp", "echo", func(mcpvisor.ToolReview) bool { return true })
	for _, rv := range a.h.ToolReviews() {
		if rv.Tool != "echo" {
			if err := a.h.ApproveTool(ctx, rv.Server, rv.Tool, rv.Hash, "test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	evs := followInbox(t, ctx, a)
	first := nextInbox(t, ctx, evs, "the first snapshot", func(inboxEvent) bool { return true })
	echo, ok := first.review("rp", "echo")
	if !ok || len(first.ToolReviews) != 1 || !echo.Held || echo.State != "new" || echo.Definition.Description == "" {
		t.Fatalf("first snapshot's reviews %+v, want echo alone, held and new", first.ToolReviews)
	}

	if err := a.h.ApproveTool(ctx, "rp", "echo", echo.Hash, "test"); err != nil {
		t.Fatal(err)
	}
	empty := nextInbox(t, ctx, evs, "no review", func(ev inboxEvent) bool { return len(ev.ToolReviews) == 0 })
	if !strings.Contains(empty.raw, `"toolReviews":[]`) {
		t.Errorf("an inbox event without reviews: %s, want an empty list", empty.raw)
	}

	if _, err := a.h.Call(ctx, "mcp__rp__rug_pull", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	ev := nextInbox(t, ctx, evs, "echo changed", func(ev inboxEvent) bool {
		rv, ok := ev.review("rp", "echo")
		return ok && rv.State == "changed"
	})
	if rv, _ := ev.review("rp", "echo"); !rv.Held || rv.Approved != echo.Hash || !strings.Contains(rv.Diff, "id_rsa") {
		t.Errorf("the changed echo in the inbox stream: %+v", rv)
	}
}
