package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// GET /v1/history answers json.Marshal of the journal's records, filtered
// as Journal.History filters them.
func TestHistory(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"), mcptest("u"))
	for _, tool := range []string{"mcp__t__echo", "mcp__u__echo", "mcp__t__echo"} {
		if r := a.do("POST", "/v1/call", map[string]any{"tool": tool}); r.status != http.StatusOK {
			t.Fatalf("call %s: %d %s", tool, r.status, r.body)
		}
	}
	j := a.h.Journal()
	for _, tc := range []struct {
		query  string
		filter mcpvisor.HistoryFilter
	}{
		{"", mcpvisor.HistoryFilter{}},
		{"?kind=call", mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall}},
		{"?kind=call&server=t", mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall, Server: "t"}},
		{"?kind=call&limit=1&newest=1", mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall, Limit: 1, Newest: true}},
		{"?kind=lifecycle&server=u", mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryLifecycle, Server: "u"}},
		{"?tool=mcp__u__echo", mcpvisor.HistoryFilter{Tool: "mcp__u__echo"}},
	} {
		// The calls' records are written behind their answers: wait until
		// the journal has all three before comparing.
		eventually(t, "the call records", func() bool {
			recs, err := j.History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall})
			return err == nil && len(recs) == 3
		})
		recs, err := j.History(tc.filter)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]any{"history": recs})
		r := a.do("GET", "/v1/history"+tc.query, nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET /v1/history%s: %d %s", tc.query, r.status, r.body)
		}
		if diff := cmp.Diff(string(want), string(bytes.TrimSpace(r.body))); diff != "" || len(recs) == 0 {
			t.Errorf("GET /v1/history%s (%d records; -journal +got):\n%s", tc.query, len(recs), diff)
		}
	}
	// Not a member of a cluster: no view of one.
	if r := a.do("GET", "/v1/cluster", nil); r.status != http.StatusNotFound || r.errorCode(t) != sidecar.CodeNotFound {
		t.Errorf("GET /v1/cluster outside a cluster: %d %s", r.status, r.body)
	}
	for _, q := range []string{"?kind=nope", "?limit=-1", "?after=x", "?newest=maybe", "?cluster=maybe"} {
		if r := a.do("GET", "/v1/history"+q, nil); r.status != http.StatusBadRequest || r.errorCode(t) != sidecar.CodeInvalidRequest {
			t.Errorf("GET /v1/history%s: %d %s", q, r.status, r.body)
		}
	}
	// ?cluster=1 outside a cluster: this host's, as its one member.
	recs, err := j.History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(map[string]any{"members": []mcpvisor.MemberHistory{{Records: recs}}})
	if r := a.do("GET", "/v1/history?kind=call&cluster=1", nil); r.status != http.StatusOK || string(bytes.TrimSpace(r.body)) != string(want) {
		t.Errorf("GET /v1/history?cluster=1: %d %s\nwant %s", r.status, r.body, want)
	}
	// A cluster page of one record at a time: following next lists each
	// record once, in order, and the last page has no next.
	if len(recs) < 2 {
		t.Fatalf("%d call records: too few to page", len(recs))
	}
	var got []mcpvisor.HistoryRecord
	for path := "/v1/history?kind=call&cluster=1&limit=1"; ; {
		r := a.do("GET", path, nil)
		var page struct {
			Members []mcpvisor.MemberHistory `json:"members"`
			Next    string                   `json:"next"`
		}
		r.json(t, &page)
		if r.status != http.StatusOK || len(page.Members) != 1 || len(page.Members[0].Records) > 1 || len(got) > len(recs) {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		got = append(got, page.Members[0].Records...)
		if page.Next == "" {
			break
		}
		path = "/v1/history?kind=call&cluster=1&limit=1&after=" + page.Next
	}
	for i := range recs {
		recs[i].V = 0 // not in the JSON
	}
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Errorf("following a cluster page's next (-journal +got):\n%s", diff)
	}
	for _, q := range []string{"?cluster=1&after=nope", "?cluster=1&after=e30x"} {
		if r := a.do("GET", "/v1/history"+q, nil); r.status != http.StatusBadRequest || r.errorCode(t) != sidecar.CodeInvalidRequest {
			t.Errorf("GET /v1/history%s: %d %s", q, r.status, r.body)
		}
	}
}

// GET /v1/servers?wait=D and GET /v1/tools?wait=D answer once each enabled
// server has settled: a command that is not found in backoff, without
// waiting through its restarts (an hour apart here) or the whole D.
func TestWaitSettles(t *testing.T) {
	data := t.TempDir()
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: data, Logger: slog.New(slog.DiscardHandler),
		Config: &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{
			mcptest("good"), {Name: "missing", Type: "stdio", Command: "/nonexistent/server", Enabled: true}}},
		Restart: mcpvisor.RestartPolicy{InitialInterval: time.Hour, MaxInterval: time.Hour, RandomizationFactor: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ts := httptest.NewServer(sidecar.New(h, sidecar.Options{Token: testToken, DataDir: data, Logger: slog.New(slog.DiscardHandler)}).Handler())
	t.Cleanup(ts.Close)
	a := &api{t: t, h: h, ts: ts, data: data}

	var l serverList
	r := a.do("GET", "/v1/servers?wait=1h", nil)
	r.json(t, &l)
	states := map[string]string{}
	for _, s := range l.Servers {
		states[s.Name] = s.State
	}
	if want := map[string]string{"good": "ready", "missing": "backoff"}; !cmp.Equal(states, want) {
		t.Errorf("GET /v1/servers?wait=1h: states %v, want %v", states, want)
	}
	var tl struct {
		Tools []struct {
			Name      string `json:"name"`
			Available bool   `json:"available"`
		} `json:"tools"`
	}
	a.do("GET", "/v1/tools?wait=1h", nil).json(t, &tl)
	if len(tl.Tools) == 0 || !tl.Tools[0].Available {
		t.Errorf("GET /v1/tools?wait=1h: %+v, want good's tools, available", tl.Tools)
	}
	for _, path := range []string{"/v1/servers?wait=soon", "/v1/tools?wait=-1s"} {
		if r := a.do("GET", path, nil); r.status != http.StatusBadRequest || r.errorCode(t) != sidecar.CodeInvalidRequest {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}
}

// A streamed call that the server runs as a task says so with a task
// event before its result.
func TestCallSSETaskEvent(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	body, _ := json.Marshal(map[string]any{"tool": "mcp__t__sleep_task", "arguments": map[string]any{"ms": 10}})
	req, _ := http.NewRequest("POST", a.ts.URL+"/v1/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs := readSSE(t, resp.Body, "result", "error")
	var names []string
	for _, ev := range evs {
		if ev.name != "progress" {
			names = append(names, ev.name)
		}
	}
	if !cmp.Equal(names, []string{"task", "result"}) {
		t.Fatalf("events %+v, want a task event, then the result", evs)
	}
	var task sidecar.TaskView
	if err := json.Unmarshal([]byte(evs[0].data), &task); err != nil || task.ID == "" || task.Server != "t" || task.Done {
		t.Errorf("task event %s (%v)", evs[0].data, err)
	}
	var res callResult
	if json.Unmarshal([]byte(evs[len(evs)-1].data), &res) != nil || res.Result != "slept 10 ms" {
		t.Errorf("result event %s", evs[len(evs)-1].data)
	}
}
