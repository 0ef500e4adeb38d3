package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// journalEvents writes n events straight into the host's journal, in
// batches, so a big journal is quick to make.
func journalEvents(t *testing.T, h *mcpvisor.Host, n int) {
	t.Helper()
	for done := 0; done < n; {
		batch := min(5000, n-done)
		ops := make([]persistence.Op, 0, batch)
		for range batch {
			ops = append(ops, persistence.AppendEvent(persistence.EventRecord{Server: "big", Method: "notifications/message", Params: []byte(`{"level":"info"}`)}))
		}
		if err := h.Journal().Write(context.Background(), ops...); err != nil {
			t.Fatal(err)
		}
		done += batch
	}
}

type eventPage struct {
	Events []mcpvisor.JournalEvent `json:"events"`
	Next   uint64                  `json:"next"`
}

func TestEventListingsPageABigJournal(t *testing.T) {
	a := openAPI(t, sidecar.Options{})
	const n = 20_000
	journalEvents(t, a.h, n)

	var p eventPage
	a.do("GET", "/v1/events", nil).json(t, &p)
	if len(p.Events) != mcpvisor.DefaultPageLimit || p.Next != uint64(mcpvisor.DefaultPageLimit) {
		t.Fatalf("GET /v1/events: %d events, next %d; want %d and a cursor", len(p.Events), p.Next, mcpvisor.DefaultPageLimit)
	}
	a.do("GET", "/v1/events?limit=50000", nil).json(t, &p)
	if len(p.Events) != mcpvisor.MaxPageLimit {
		t.Errorf("limit=50000 gave %d events, want the cap %d", len(p.Events), mcpvisor.MaxPageLimit)
	}

	seen, last, pages := 0, uint64(0), 0
	for path := "/v1/events?limit=1000"; ; {
		r := a.do("GET", path, nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		p = eventPage{}
		r.json(t, &p)
		pages++
		for _, e := range p.Events {
			if e.Seq != last+1 {
				t.Fatalf("event %d after %d: each once, in order, wanted", e.Seq, last)
			}
			last = e.Seq
			seen++
		}
		if p.Next == 0 {
			break
		}
		path = fmt.Sprintf("/v1/events?limit=1000&after=%d", p.Next)
	}
	if seen != n || pages != n/1000 {
		t.Errorf("following next: %d events in %d pages, want %d in %d", seen, pages, n, n/1000)
	}

	// A stream without ?after starts at the newest without reading the
	// journal: the first event it sends is the next one journaled.
	_, before := a.h.Journal().Stats()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.ts.URL+"/v1/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	stream, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	journalEvents(t, a.h, 1)
	evs := readSSE(t, stream.Body, "event")
	var first mcpvisor.JournalEvent
	if len(evs) == 0 || json.Unmarshal([]byte(evs[len(evs)-1].data), &first) != nil || first.Seq != n+1 {
		t.Fatalf("the stream's first event %+v, want event %d", evs, n+1)
	}
	_, after := a.h.Journal().Stats()
	if read := after.RecordsRead - before.RecordsRead; read > 10 {
		t.Errorf("opening the stream read %d records of the journal, want only what it sent", read)
	}
}

func TestHistoryListingPages(t *testing.T) {
	a := openAPI(t, sidecar.Options{})
	const n = 1_500
	ops := make([]persistence.Op, 0, n)
	for range n {
		ops = append(ops, persistence.AppendHistory(persistence.HistoryRecord{Kind: persistence.HistoryLifecycle, Server: "big"}))
	}
	if err := a.h.Journal().Write(context.Background(), ops...); err != nil {
		t.Fatal(err)
	}
	var p struct {
		History []mcpvisor.HistoryRecord `json:"history"`
		Next    uint64                   `json:"next"`
	}
	seen := 0
	for path := "/v1/history?server=big"; ; {
		p.History, p.Next = nil, 0
		a.do("GET", path, nil).json(t, &p)
		if len(p.History) > mcpvisor.DefaultPageLimit {
			t.Fatalf("a page of %d records, over the default %d", len(p.History), mcpvisor.DefaultPageLimit)
		}
		seen += len(p.History)
		if p.Next == 0 {
			break
		}
		path = fmt.Sprintf("/v1/history?server=big&after=%d", p.Next)
	}
	if seen != n {
		t.Errorf("following next: %d records of big, want %d", seen, n)
	}
}

// GET /v1/tasks pages as the other lists do: a default page, a cap, and
// a next that lists every task once, oldest created first, ties in
// (server, id) order; ?pending=1 pages the unfinished alone.
func TestTaskListingPages(t *testing.T) {
	a := openAPI(t, sidecar.Options{})
	const n = 2_345
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ops := make([]persistence.Op, 0, n)
	for i := range n {
		// Keys (server, id) out of created order, and created ties.
		ops = append(ops, persistence.PutTask(persistence.TaskRecord{
			Server: fmt.Sprintf("s%d", i%7), TaskID: fmt.Sprintf("t%05d", n-i), Tool: "mcp__s__slow",
			Created: base.Add(time.Duration(i/3) * time.Second), Status: mcpvisor.TaskWorking, Done: i%2 == 0,
		}))
	}
	if err := a.h.Journal().Write(context.Background(), ops...); err != nil {
		t.Fatal(err)
	}
	type taskPage struct {
		Tasks []sidecar.TaskView `json:"tasks"`
		Next  string             `json:"next"`
	}
	var p taskPage
	a.do("GET", "/v1/tasks", nil).json(t, &p)
	if len(p.Tasks) != mcpvisor.DefaultPageLimit || p.Next == "" {
		t.Fatalf("GET /v1/tasks: %d tasks, next %q; want %d and a cursor", len(p.Tasks), p.Next, mcpvisor.DefaultPageLimit)
	}
	p = taskPage{}
	a.do("GET", "/v1/tasks?limit=50000", nil).json(t, &p)
	if len(p.Tasks) != mcpvisor.MaxPageLimit {
		t.Errorf("limit=50000 gave %d tasks, want the cap %d", len(p.Tasks), mcpvisor.MaxPageLimit)
	}

	for _, tc := range []struct {
		query string
		want  int
	}{{"limit=300", n}, {"limit=1000", n}, {"limit=97&pending=1", n / 2}} {
		seen := map[string]bool{}
		var last sidecar.TaskView
		pages := 0
		for path := "/v1/tasks?" + tc.query; ; {
			r := a.do("GET", path, nil)
			if r.status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", path, r.status, r.body)
			}
			p = taskPage{}
			r.json(t, &p)
			pages++
			for _, ti := range p.Tasks {
				key := ti.Server + "/" + ti.ID
				if seen[key] {
					t.Fatalf("%s: task %s listed twice", tc.query, key)
				}
				seen[key] = true
				if c := ti.Created.Compare(last.Created); c < 0 || c == 0 && last.Server+"/"+last.ID > key {
					t.Fatalf("%s: task %s (%v) after %s/%s (%v): oldest first wanted", tc.query, key, ti.Created, last.Server, last.ID, last.Created)
				}
				if strings.Contains(tc.query, "pending") && ti.Done {
					t.Fatalf("%s: a finished task %s", tc.query, key)
				}
				last = ti
			}
			if p.Next == "" {
				break
			}
			path = "/v1/tasks?" + tc.query + "&after=" + p.Next
		}
		if len(seen) != tc.want {
			t.Errorf("%s: following next listed %d tasks in %d pages, want %d", tc.query, len(seen), pages, tc.want)
		}
	}
	for _, q := range []string{"?limit=-1", "?after=nope", "?pending=maybe"} {
		if r := a.do("GET", "/v1/tasks"+q, nil); r.status != http.StatusBadRequest || r.errorCode(t) != sidecar.CodeInvalidRequest {
			t.Errorf("GET /v1/tasks%s: %d %s", q, r.status, r.body)
		}
	}
}
