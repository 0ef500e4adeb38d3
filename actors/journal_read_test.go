package actors

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// A journal opened alone reads and acknowledges what a writer journaled,
// delivers new events to its subscribers, holds its directory against a
// second journal until Close, and closes its store, once.
func TestOpenJournalReadsAcksAndCloses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	j, err := OpenJournal(dir, JournalOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	event := func(i int) persistence.Op {
		return persistence.AppendEvent(persistence.EventRecord{Server: "s", Method: "event/x",
			Params: []byte(strconv.Itoa(i)), Received: time.Now()})
	}
	if err := j.Write(ctx, event(0), event(1),
		persistence.PutServer(persistence.ServerRecord{Name: "s", Origin: persistence.OriginAPI, Enabled: true})); err != nil {
		t.Fatal(err)
	}

	// Subscribe starts from f.After and follows the commits.
	live := j.Subscribe(ctx, persistence.EventFilter{Server: "s"})
	if !j.IngestPaced("s", event(2)) {
		t.Fatal("ingest dropped with room in the queue")
	}
	for i := range 3 {
		ev, ok := <-live
		if !ok || string(ev.Params) != strconv.Itoa(i) {
			t.Fatalf("subscription's event %d = %+v (open %v)", i, ev, ok)
		}
	}

	evs, err := j.Events(persistence.EventFilter{Status: persistence.EventPending})
	if err != nil || len(evs) != 3 {
		t.Fatalf("pending events = %d, %v; want 3", len(evs), err)
	}
	if err := j.Ack(ctx); err != nil {
		t.Errorf("Ack of nothing: %v", err)
	}
	err = j.Ack(ctx, evs[0].Seq, 999999)
	if !errors.Is(err, persistence.ErrUnknownEvent) || !strings.Contains(err.Error(), "999999") {
		t.Errorf("Ack of an unknown id = %v, want ErrUnknownEvent naming it", err)
	}
	if pending, _ := j.Events(persistence.EventFilter{Status: persistence.EventPending}); len(pending) != 2 {
		t.Errorf("%d pending after acking one of 3, want 2 (the known id is acked all the same)", len(pending))
	}
	if rows, err := j.Servers(); err != nil || len(rows) != 1 || rows[0].Name != "s" {
		t.Errorf("Servers = %+v, %v", rows, err)
	}
	if w, s := j.Stats(); w.Events != 3 || s.LastEventSeq != 3 {
		t.Errorf("Stats = %+v, %+v; want 3 events committed, the last seq 3", w, s)
	}

	if _, err := OpenJournal(dir, JournalOptions{}, nil); !errors.Is(err, persistence.ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Errorf("a second OpenJournal on %s = %v, want ErrLocked naming it", dir, err)
	}

	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-live; ok {
		t.Error("the subscription is open after Close")
	}
	if err := j.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := j.Write(ctx, event(3)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}

	// Close closed the store: the directory opens again, with all three.
	j, err = OpenJournal(dir, JournalOptions{}, nil)
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	defer j.Close()
	if evs, err := j.Events(persistence.EventFilter{}); err != nil || len(evs) != 3 {
		t.Errorf("events after reopening = %d, %v; want 3", len(evs), err)
	}
}

// The journal's retention settings reach its store: over EventLimit the
// oldest events go, and a page lists what is left from the oldest.
func TestOpenJournalKeepsEventLimit(t *testing.T) {
	j, err := OpenJournal(filepath.Join(t.TempDir(), "journal"), JournalOptions{EventLimit: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ops := make([]persistence.Op, 0, 30)
	for range 30 {
		ops = append(ops, persistence.AppendEvent(persistence.EventRecord{Server: "a", Method: "m"}))
	}
	if err := j.Write(context.Background(), ops...); err != nil {
		t.Fatal(err)
	}
	res, err := j.Store().Prune()
	if err != nil || res.PendingEvents != 20 {
		t.Fatalf("Prune = %+v, %v; want 20 pending events over the limit", res, err)
	}
	page, err := j.EventsPage(persistence.EventFilter{})
	if err != nil || len(page.Events) != 10 || page.Events[0].Seq != 21 || page.Next != 0 {
		t.Errorf("page after prune: %d events from %v, next %d, %v; want 21..30, no cursor", len(page.Events), page.Events, page.Next, err)
	}
}
