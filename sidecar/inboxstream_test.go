package sidecar_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

type inboxEvent struct {
	Servers []struct {
		Name  string `json:"name"`
		State string `json:"state"`
	} `json:"servers"`
	Elicitations []struct {
		ID      string `json:"id"`
		Server  string `json:"server"`
		Message string `json:"message"`
	} `json:"elicitations"`
	Approvals   []approvalJSON        `json:"approvals"`
	ToolReviews []mcpvisor.ToolReview `json:"toolReviews"`
	raw         string                // the event's data, as sent
}

// review is the event's review of a server's tool, if it has one.
func (e inboxEvent) review(server, tool string) (mcpvisor.ToolReview, bool) {
	for _, rv := range e.ToolReviews {
		if rv.Server == server && rv.Tool == tool {
			return rv, true
		}
	}
	return mcpvisor.ToolReview{}, false
}

func (e inboxEvent) state(name string) string {
	for _, s := range e.Servers {
		if s.Name == name {
			return s.State
		}
	}
	return ""
}

// followInbox opens GET /v1/inbox/stream and returns its events, in order,
// decoded; the channel closes when the stream ends.
func followInbox(t *testing.T, ctx context.Context, a *api) <-chan inboxEvent {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.ts.URL+"/v1/inbox/stream", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		resp.Body.Close()
		t.Fatalf("inbox stream: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan inboxEvent, 64)
	done := make(chan struct{})
	t.Cleanup(func() { resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && name == "inbox":
				var ev inboxEvent
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
					t.Errorf("inbox event: %v: %s", err, line)
					return
				}
				ev.raw = strings.TrimPrefix(line, "data: ")
				out <- ev
			}
		}
	}()
	return out
}

// nextInbox returns the first event from evs that satisfies cond.
func nextInbox(t *testing.T, ctx context.Context, evs <-chan inboxEvent, what string, cond func(inboxEvent) bool) inboxEvent {
	t.Helper()
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatalf("the inbox stream ended before %s", what)
			}
			if cond(ev) {
				return ev
			}
		case <-ctx.Done():
			t.Fatalf("no inbox event with %s", what)
		}
	}
}

func TestInboxStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := openAPI(t, sidecar.Options{}, mcptest("t"), mcptest("u"))
	evs := followInbox(t, ctx, a)

	first := nextInbox(t, ctx, evs, "the first snapshot", func(inboxEvent) bool { return true })
	if first.state("t") != "ready" || first.state("u") != "ready" || len(first.Elicitations) != 0 {
		t.Fatalf("first snapshot %+v, want t and u ready and no elicitation", first)
	}

	if r := a.do("POST", "/v1/servers/u/disable", nil); r.status/100 != 2 {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	nextInbox(t, ctx, evs, "u disabled", func(ev inboxEvent) bool { return ev.state("u") == "disabled" })

	args, _ := json.Marshal(map[string]any{"message": "Your name?", "schema": map[string]any{"type": "object",
		"properties": map[string]any{"name": map[string]any{"type": "string"}}}})
	done := make(chan error, 1)
	go func() {
		_, err := a.h.Call(ctx, "mcp__t__ask", args)
		done <- err
	}()
	ask := nextInbox(t, ctx, evs, "the pending question", func(ev inboxEvent) bool { return len(ev.Elicitations) == 1 })
	if e := ask.Elicitations[0]; e.Server != "t" || e.Message != "Your name?" {
		t.Fatalf("pending question %+v", e)
	}
	if r := a.do("POST", "/v1/elicitations/"+ask.Elicitations[0].ID, map[string]any{"action": "decline"}); r.status != http.StatusNoContent {
		t.Fatalf("decline: %d %s", r.status, r.body)
	}
	nextInbox(t, ctx, evs, "the question gone", func(ev inboxEvent) bool { return len(ev.Elicitations) == 0 })
	if err := <-done; err != nil {
		t.Fatalf("the declined call: %v", err)
	}

	if r := a.do("DELETE", "/v1/servers/u", nil); r.status/100 != 2 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	nextInbox(t, ctx, evs, "u removed", func(ev inboxEvent) bool { return ev.state("u") == "" && ev.state("t") == "ready" })
}

// The inbox stream carries a host-tool call waiting for approval, without
// its arguments, and its removal once answered.
func TestInboxStreamCarriesApprovals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := openAPIHost(t, mcpvisor.Options{ApprovalInbox: true, AlwaysOn: []string{mcpvisor.ConfigGroup}}, sidecar.Options{})
	evs := followInbox(t, ctx, a)
	first := nextInbox(t, ctx, evs, "the first snapshot", func(inboxEvent) bool { return true })
	if first.Approvals == nil || len(first.Approvals) != 0 || !strings.Contains(first.raw, `"approvals":[]`) {
		t.Fatalf("first snapshot %s, want an empty approvals list", first.raw)
	}

	args, command := registerArgs("fresh")
	raw, _ := json.Marshal(args)
	done := make(chan *mcpvisor.Result, 1)
	var calls sync.WaitGroup
	callCtx, cancelCall := context.WithCancel(ctx)
	t.Cleanup(func() { cancelCall(); calls.Wait() })
	calls.Go(func() {
		res, _ := a.h.Session("s", "k").Call(callCtx, "register_mcp", raw)
		done <- res
	})
	ev := nextInbox(t, ctx, evs, "the pending approval", func(ev inboxEvent) bool { return len(ev.Approvals) == 1 })
	got := ev.Approvals[0]
	if got.Tool != "register_mcp" || got.Session != "s" || got.Stack != "k" || got.Server != "fresh" ||
		!slices.Equal(got.Command, command) || got.ID == "" || got.Deadline.IsZero() {
		t.Errorf("the pending approval %+v, want register_mcp of fresh from s/k running %q", got, command)
	}
	if strings.Contains(ev.raw, secretValue) || strings.Contains(ev.raw, `"arguments"`) {
		t.Errorf("the inbox event shows the arguments: %s", ev.raw)
	}

	if r := a.do("POST", "/v1/approvals/"+got.ID, map[string]any{"decision": "deny"}); r.status != http.StatusNoContent {
		t.Fatalf("deny: %d %s", r.status, r.body)
	}
	nextInbox(t, ctx, evs, "the approval gone", func(ev inboxEvent) bool { return len(ev.Approvals) == 0 })
	select {
	case res := <-done:
		if res == nil || !res.IsError || !strings.Contains(res.Wire(), "not approved") {
			t.Errorf("the denied call returned %+v", res)
		}
	case <-ctx.Done():
		t.Fatal("the denied call did not return")
	}
}
