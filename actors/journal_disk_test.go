package actors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// A host that stops while its journal is read-only for want of space
// keeps the count of the records it dropped, and the next start that can
// write journals it: on a real full filesystem. Before, the count was only
// logged at Close and lost with the process.
func TestDropsKeptWhenStoppedReadOnly(t *testing.T) {
	mnt := testenv.MountTmpfs(t, 96<<20)
	dir := filepath.Join(mnt, "journal")
	const reserve = 24 << 20
	opts := persistence.Options{MaintenanceInterval: -1, DiskReserve: reserve}
	store, err := persistence.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	filler := testenv.FillDisk(t, mnt, reserve-1<<20)

	store, err = persistence.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !store.Disk().ReadOnly {
		t.Fatal("opened writable on a short disk")
	}
	j := NewJournal(store, JournalOptions{}, nil)
	for i := range 7 {
		j.Ingest("flood", persistence.AppendEvent(persistence.EventRecord{Server: "flood", Method: "m"}))
		if i < 3 {
			j.Ingest("other", persistence.AppendEvent(persistence.EventRecord{Server: "other", Method: "m"}))
		}
	}
	// Before any Close, within about a second, the counts are in the
	// marks file: what a host killed now would leave behind.
	deadline := time.Now().Add(time.Minute)
	for {
		in, err := persistence.Inspect(dir)
		if err != nil {
			t.Fatal(err)
		}
		if in.Marks.Dropped["flood"] == 7 && in.Marks.Dropped["other"] == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("drop counts in the marks file a minute after the drops: %v, want flood=7, other=3", in.Marks.Dropped)
		}
		time.Sleep(50 * time.Millisecond) // polling a file the journal writes on its own schedule
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if st := writerStats(j); st.Dropped != 10 {
		t.Fatalf("%d records dropped on a read-only journal, want the 10 ingested", st.Dropped)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	store, err = persistence.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	evs, err := store.Events(persistence.EventFilter{Method: persistence.MethodEventsDropped})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, e := range evs {
		var p struct{ Dropped uint64 }
		if err := json.Unmarshal(e.Params, &p); err != nil {
			t.Fatal(err)
		}
		got[e.Server] += p.Dropped
	}
	if got["flood"] != 7 || got["other"] != 3 || len(got) != 2 {
		t.Fatalf("journaled drop counts %v after the space returned; want flood=7, other=3", got)
	}
}
