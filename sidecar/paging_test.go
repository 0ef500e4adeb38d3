package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

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
