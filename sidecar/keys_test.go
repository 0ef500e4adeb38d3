package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// foreignKeys hold JSON whose keys a server or a caller chose, not the API:
// schemas, structured results, notification params, a field's default, a
// call's arguments and MCP's _meta. The walk does not look inside them.
var foreignKeys = map[string]bool{
	"inputSchema": true, "outputSchema": true, "structuredContent": true, "params": true,
	"default": true, "arguments": true, "_meta": true,
}

// snakeKeys lists, as paths, the keys of a JSON document that hold an "_"
// (other than "_meta"), outside foreignKeys.
func snakeKeys(path string, v any) []string {
	var bad []string
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			if k != "_meta" && strings.Contains(k, "_") {
				bad = append(bad, path+"."+k)
			}
			if !foreignKeys[k] {
				bad = append(bad, snakeKeys(path+"."+k, sub)...)
			}
		}
	case []any:
		for i, sub := range v {
			bad = append(bad, snakeKeys(fmt.Sprintf("%s[%d]", path, i), sub)...)
		}
	}
	return bad
}

// keyChecker collects the JSON answers of one scenario and what they cover.
type keyChecker struct {
	t       *testing.T
	checked map[string]bool // "what" of each document walked
}

func (c *keyChecker) check(what string, body []byte) {
	c.t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		c.t.Fatalf("%s: not JSON: %v\n%s", what, err, body)
	}
	if bad := snakeKeys("", v); len(bad) > 0 {
		slices.Sort(bad)
		c.t.Errorf("%s: keys not camelCase: %v\n%s", what, bad, body)
	}
	c.checked[what] = true
}

// do sends a request and checks its JSON answer, which must have status.
func (c *keyChecker) do(a *api, what string, status int, method, path string, body any) response {
	c.t.Helper()
	r := a.do(method, path, body)
	if r.status != status {
		c.t.Fatalf("%s: %s %s: %d, want %d: %s", what, method, path, r.status, status, r.body)
	}
	c.check(what, r.body)
	return r
}

// TestEveryKeyIsCamelCase walks every JSON answer the API gives in one
// scenario (each route, the SSE events, the error bodies) and fails on any
// key with an underscore but MCP's "_meta": the API has one convention.
func TestEveryKeyIsCamelCase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := openAPIHost(t, mcpvisor.Options{ApprovalInbox: true}, sidecar.Options{}, mcptest("t"))
	c := &keyChecker{t: t, checked: map[string]bool{}}

	for _, p := range []string{"/healthz", "/readyz"} {
		c.do(a, p, http.StatusOK, "GET", p, nil)
	}
	c.do(a, "servers", 200, "GET", "/v1/servers", nil)
	c.do(a, "tools", 200, "GET", "/v1/tools", nil)
	c.do(a, "activate", 200, "POST", "/v1/sessions/s/activate", map[string]any{"groups": []string{"t", "config"}})
	c.do(a, "session tools", 200, "GET", "/v1/tools?session=s", nil)

	// Events: the stream's event, the list, the acknowledgement.
	sctx, stop := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(sctx, "GET", a.ts.URL+"/v1/events/stream?method=event/test", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	stream, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	c.do(a, "call notify", 200, "POST", "/v1/call", map[string]any{"tool": "mcp__t__notify"})
	evs := readSSE(t, stream.Body, "event")
	stop()
	stream.Body.Close()
	if len(evs) != 1 {
		t.Fatalf("event stream: %+v", evs)
	}
	c.check("event stream: event", []byte(evs[0].data))
	var events struct {
		Events []struct {
			ID uint64 `json:"id"`
		} `json:"events"`
	}
	c.do(a, "events", 200, "GET", "/v1/events?method=event/test", nil).json(t, &events)
	if len(events.Events) != 1 {
		t.Fatalf("events: %+v", events.Events)
	}
	c.do(a, "events ack", 200, "POST", "/v1/events/ack", map[string]any{"ids": []uint64{events.Events[0].ID}})
	c.do(a, "events after ack", 200, "GET", "/v1/events?method=event/test", nil) // now with processedAt

	// Calls: plain, structured, streamed with progress, streamed error.
	c.do(a, "call", 200, "POST", "/v1/call", map[string]any{"tool": "mcp__t__echo", "arguments": map[string]any{"a": 1}})
	c.do(a, "call structured", 200, "POST", "/v1/call", map[string]any{"tool": "mcp__t__structured"})
	r := a.doAuth("POST", "/v1/call", map[string]any{"tool": "mcp__t__progress", "arguments": map[string]any{"steps": 2, "delay_ms": 1}},
		"Bearer "+testToken, http.Header{"Accept": {"text/event-stream"}})
	for _, ev := range readSSE(t, strings.NewReader(string(r.body)), "result", "error") {
		c.check("call stream: "+ev.name, []byte(ev.data))
	}
	r = a.doAuth("POST", "/v1/call", map[string]any{"tool": "mcp__t__nope"}, "Bearer "+testToken,
		http.Header{"Accept": {"text/event-stream"}})
	for _, ev := range readSSE(t, strings.NewReader(string(r.body)), "error") {
		c.check("call stream: "+ev.name, []byte(ev.data))
	}

	// Tasks: a detached call, listed while it runs and once it has ended.
	var res callResult
	c.do(a, "call detached", 200, "POST", "/v1/call", map[string]any{"tool": "mcp__t__sleep_task",
		"arguments": map[string]any{"ms": 50}, "detached": true}).json(t, &res)
	if res.Task == nil {
		t.Fatalf("no task in the detached call's result")
	}
	c.do(a, "tasks", 200, "GET", "/v1/tasks", nil)
	var task struct {
		Done bool `json:"done"`
	}
	eventually(t, "the task to end", func() bool {
		a.do("GET", "/v1/tasks/"+res.Task.ID, nil).json(t, &task)
		return task.Done
	})
	c.do(a, "task", 200, "GET", "/v1/tasks/"+res.Task.ID, nil) // with its result
	c.do(a, "tasks ended", 200, "GET", "/v1/tasks", nil)

	// Servers: register, disable, enable, log.
	c.do(a, "put server", 200, "PUT", "/v1/servers/extra", map[string]any{"command": mcptestBin, "args": []string{"-name", "extra"}})
	c.do(a, "disable", 200, "POST", "/v1/servers/extra/disable", nil)
	c.do(a, "call unavailable", http.StatusServiceUnavailable, "POST", "/v1/call", map[string]any{"tool": "mcp__extra__echo"})
	c.do(a, "enable", 200, "POST", "/v1/servers/extra/enable", nil)
	c.do(a, "log", 200, "GET", "/v1/servers/t/log", nil)
	// A server that exits at once: readyz lists it; a call to it fails.
	c.do(a, "put broken server", 200, "PUT", "/v1/servers/broken", map[string]any{"command": mcptestBin, "args": []string{"-exit-at-start", "3"}})
	r = a.doAuth("GET", "/readyz", nil, "", nil)
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("readyz with a broken server: %d %s", r.status, r.body)
	}
	c.check("readyz not ready", r.body)
	r = a.do("POST", "/v1/call", map[string]any{"tool": "mcp__broken__echo"})
	if r.status < 400 {
		t.Fatalf("a call to a broken server: %d %s", r.status, r.body)
	}
	c.check("error broken server", r.body)
	if r := a.do("DELETE", "/v1/servers/broken", nil); r.status != http.StatusNoContent {
		t.Fatalf("delete broken: %d %s", r.status, r.body)
	}

	// An elicitation and an approval pending at once: their lists and the
	// inbox stream's snapshot with both.
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"user":     map[string]any{"type": "string", "title": "User", "default": "ada"},
		"role":     map[string]any{"type": "string", "enum": []string{"admin", "guest"}},
		"password": map[string]any{"type": "string", "format": "password"},
	}, "required": []string{"user"}}
	asked := a.callInBackground(ctx, map[string]any{"tool": "mcp__t__ask", "arguments": map[string]any{"message": "Log in", "schema": schema}})
	regArgs, _ := registerArgs("fresh")
	registered := a.callInBackground(ctx, map[string]any{"session": "s", "tool": "register_mcp", "arguments": regArgs})
	approval := waitApprovals(t, ctx, a.h, 1)[0]
	var asks struct {
		Elicitations []struct {
			ID string `json:"id"`
		} `json:"elicitations"`
	}
	eventually(t, "a pending elicitation", func() bool {
		a.do("GET", "/v1/elicitations", nil).json(t, &asks)
		return len(asks.Elicitations) == 1
	})
	c.do(a, "elicitations", 200, "GET", "/v1/elicitations", nil)
	c.do(a, "approvals", 200, "GET", "/v1/approvals", nil)
	ictx, istop := context.WithCancel(ctx)
	for ev := range followInbox(t, ictx, a) {
		if len(ev.Elicitations) == 1 && len(ev.Approvals) == 1 {
			c.check("inbox stream: inbox", []byte(ev.raw))
			break
		}
	}
	istop()
	if r := a.do("POST", "/v1/elicitations/"+asks.Elicitations[0].ID, map[string]any{"action": "accept",
		"content": map[string]any{"user": "ada", "role": "guest", "password": "hunter22"}}); r.status != http.StatusNoContent {
		t.Fatalf("accept: %d %s", r.status, r.body)
	}
	if r := a.do("POST", "/v1/approvals/"+approval.ID, map[string]any{"decision": "deny", "reason": "no"}); r.status != http.StatusNoContent {
		t.Fatalf("deny: %d %s", r.status, r.body)
	}
	for what, done := range map[string]<-chan response{"call ask": asked, "call register_mcp denied": registered} {
		r := awaitResponse(t, ctx, done, what)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", what, r.status, r.body)
		}
		c.check(what, r.body)
	}

	// Error bodies.
	c.do(a, "error unknown task", 404, "GET", "/v1/tasks/nope", nil)
	c.do(a, "error bad request", 400, "GET", "/v1/events?pending=maybe", nil)
	c.do(a, "error no route", 404, "GET", "/v1/nope", nil)
	r = a.doAuth("GET", "/v1/servers", nil, "", nil)
	if r.status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", r.status)
	}
	c.check("error unauthorized", r.body)
	if r := a.do("DELETE", "/v1/servers/extra", nil); r.status != http.StatusNoContent {
		t.Errorf("delete: %d %s", r.status, r.body)
	}

	for _, what := range []string{"event stream: event", "call stream: progress", "call stream: result", "call stream: error",
		"inbox stream: inbox", "task", "elicitations", "approvals", "call unavailable", "error unauthorized"} {
		if !c.checked[what] {
			t.Errorf("the scenario did not produce %q", what)
		}
	}
}

// TestViewTagsAreCamelCase checks the JSON names of every type the API
// serves, so a key that the scenario above leaves out (an omitempty field
// it never fills) cannot be snake_case either.
func TestViewTagsAreCamelCase(t *testing.T) {
	for _, v := range []any{
		mcpvisor.ServerStatus{}, mcpvisor.Tool{}, sidecar.ResultView{}, sidecar.TaskView{}, mcpvisor.JournalEvent{},
		mcpvisor.HistoryRecord{}, sidecar.ElicitationView{}, sidecar.ApprovalView{}, sidecar.ErrorBody{},
		mcpvisor.ToolReview{},
	} {
		typ := reflect.TypeOf(v)
		for _, name := range jsonNames(typ, map[reflect.Type]bool{}) {
			if name != "_meta" && strings.Contains(name, "_") {
				t.Errorf("%v: JSON key %q", typ, name)
			}
		}
	}
}

// jsonNames lists the JSON object keys of t and of the structs it holds.
func jsonNames(t reflect.Type, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t == reflect.TypeFor[time.Time]() {
		return nil
	}
	seen[t] = true
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			names = append(names, jsonNames(f.Type, seen)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
		names = append(names, jsonNames(f.Type, seen)...)
	}
	return names
}
