package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// An event stream whose client stops reading does not hold the journal
// up: every write commits while the stream is stuck, and the client, once
// it reads again, gets the events that were on their way, then a "lagged"
// event saying how many it missed and the id to resume after, then the end
// of the stream. Resuming there loses nothing.
func TestEventStreamLagsSlowClient(t *testing.T) {
	const (
		batches, perBatch = 30, 50
		n                 = batches * perBatch
	)
	a := openAPIHost(t, mcpvisor.Options{Journal: mcpvisor.JournalOptions{LiveBuffer: 64}}, sidecar.Options{})
	// A client of its own: a connection that is only this stream's. Its
	// receive buffer does not grow while nothing is read from it.
	client := &http.Client{Transport: &http.Transport{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.ts.URL+"/v1/events/stream?server=flood", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	stream, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", stream.StatusCode)
	}

	// 12 MiB of events, over twice what the two sockets may buffer
	// (tcp_wmem's 4 MiB at most, and tcp_rmem's initial 128 KiB), written
	// while the client reads nothing.
	pad := strings.Repeat("x", 8<<10)
	for b := range batches {
		ops := make([]persistence.Op, perBatch)
		for i := range ops {
			ops[i] = persistence.AppendEvent(persistence.EventRecord{Server: "flood", Method: "event/x",
				Params: []byte(fmt.Sprintf(`{"i":%d,"pad":%q}`, b*perBatch+i, pad))})
		}
		if err := a.h.Journal().Write(context.Background(), ops...); err != nil {
			t.Fatal(err)
		}
	}

	evs := readSSE(t, stream.Body)
	if len(evs) < 2 || evs[len(evs)-1].name != "lagged" {
		t.Fatalf("%d SSE events, the last %+v: want a lagged event at the end", len(evs), evs[len(evs)-1:])
	}
	var lag struct{ Skipped, After uint64 }
	if err := json.Unmarshal([]byte(evs[len(evs)-1].data), &lag); err != nil {
		t.Fatal(err)
	}
	got := evs[:len(evs)-1]
	var last uint64
	for i, e := range got {
		var ev struct {
			ID     uint64
			Params struct{ I int }
		}
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil || e.name != "event" || ev.Params.I != i {
			t.Fatalf("stream event %d: %s %.80s (%v)", i, e.name, e.data, err)
		}
		last = ev.ID
	}
	// Skipped counts the events committed past the stream when it lagged:
	// the writes that came after may have been later still.
	if len(got) >= n || lag.After != last || lag.Skipped == 0 || lag.Skipped > uint64(n-len(got)) {
		t.Fatalf("%d of %d events, then lagged %+v; want 1 to %d skipped after %d", len(got), n, lag, n-len(got), last)
	}

	// ?after=ID resumes where it lagged.
	var l struct {
		Events []struct{ Params struct{ I int } } `json:"events"`
	}
	a.do("GET", fmt.Sprintf("/v1/events?server=flood&after=%d&limit=1", lag.After), nil).json(t, &l)
	if len(l.Events) != 1 || l.Events[0].Params.I != len(got) {
		t.Fatalf("after %d: %+v, want event %d", lag.After, l.Events, len(got))
	}
}
