package persistence

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// ageTables sets dir's table files an hour back and stamps them so in its
// clean marks: tables written long before the clean close, as in a journal
// that has run for a while.
func ageTables(t *testing.T, dir string) Marks {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	for _, name := range filesWith(t, dir, ".sst") {
		if err := os.Chtimes(name, old, old); err != nil {
			t.Fatal(err)
		}
	}
	m, err := readMarks(dir)
	if err != nil || !m.Clean {
		t.Fatalf("marks after a clean close: %+v, %v", m, err)
	}
	m.Tables = tableStamps(dir)
	if err := writeMarks(dir, m, false); err != nil {
		t.Fatal(err)
	}
	return m
}

// A clean close leaves a clean mark with the pending count and the tables;
// the next Open verifies no table's checksums, takes the count as written
// and takes the mark back while open; anything but a clean mark has the
// checksums verified and the pending events counted.
func TestCleanMark(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{MaintenanceInterval: -1})
	var ops []Op
	for i := range 10 {
		ops = append(ops, event(i))
	}
	a := mustApply(t, s, ops...)
	mustApply(t, s, AckEvents(a.Events[0].Seq, a.Events[4].Seq, a.Events[9].Seq))
	if !s.pendingCounted {
		t.Error("a new journal's pending events were not counted")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	m := ageTables(t, dir)
	if m.Pending != 7 || len(m.Tables) == 0 || m.Event != a.Events[9].Seq {
		t.Fatalf("clean marks %+v, want 7 pending, the tables and event mark %d", m, a.Events[9].Seq)
	}
	_, written, clean := readCleanMark(dir)
	quick, err := inspect(dir, m.Tables, written)
	if err != nil || !clean {
		t.Fatal(err, clean)
	}
	full, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if quick.Verified != 0 || full.Verified != full.Tables || full.Tables != len(m.Tables) || len(quick.Findings)+len(full.Findings) != 0 {
		t.Fatalf("verified %d tables after a clean close and %d of %d by Inspect (findings %v, %v); want none and all",
			quick.Verified, full.Verified, full.Tables, quick.Findings, full.Findings)
	}

	s = openStore(t, dir, Options{MaintenanceInterval: -1})
	if got := s.Stats().PendingEvents; got != 7 || s.pendingCounted {
		t.Errorf("after a clean close: %d pending, counted %v; want 7 taken from the mark", got, s.pendingCounted)
	}
	if open, err := readMarks(dir); err != nil || open.Clean {
		t.Errorf("marks while open: %+v, %v; want not clean", open, err)
	}
	mustApply(t, s, event(10))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// An unclean stop: the count in the marks is not trusted.
	m, _ = readMarks(dir)
	m.Clean, m.Pending = false, 999
	if err := writeMarks(dir, m, false); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{MaintenanceInterval: -1})
	if got := s.Stats().PendingEvents; got != 8 || !s.pendingCounted {
		t.Errorf("after an unclean stop: %d pending, counted %v; want 8 counted", got, s.pendingCounted)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// No marks file at all: unclean too.
	if err := os.Remove(filepath.Join(dir, marksFile)); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{MaintenanceInterval: -1})
	if got := s.Stats().PendingEvents; got != 8 || !s.pendingCounted {
		t.Errorf("without marks: %d pending, counted %v; want 8 counted", got, s.pendingCounted)
	}
	s.Close()
}

// A table changed after a clean close, whatever its times say, is
// verified in full at Open and the journal refused.
func TestCleanMarkTableChanged(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, name string, stamp TableStamp)
	}{
		{"garbled", func(t *testing.T, name string, _ TableStamp) {
			f, err := os.OpenFile(name, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(make([]byte, 4096), 8192); err != nil {
				t.Fatal(err)
			}
		}},
		{"cut short, its time put back", func(t *testing.T, name string, stamp TableStamp) {
			if err := os.Truncate(name, stamp.Size-4096); err != nil {
				t.Fatal(err)
			}
			mtime := time.Unix(0, stamp.ModTime)
			if err := os.Chtimes(name, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := makeJournal(t, t.TempDir(), 2000, 0)
			m := ageTables(t, j.dir)
			name := filesWith(t, j.dir, ".sst")[0]
			tc.damage(t, name, m.Tables[filepath.Base(name)])
			s, err := Open(j.dir, Options{MaintenanceInterval: -1})
			if err == nil {
				s.Close()
				t.Fatal("a journal whose table changed after a clean close opened")
			}
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), filepath.Base(name)+": damaged") {
				t.Fatalf("Open: %v; want %s reported damaged", err, filepath.Base(name))
			}
		})
	}
}

// Records dropped while the journal is read-only for want of space, and
// kept when the host stops so, are journaled by the first start that can
// write, once, on a real full filesystem.
func TestDropCountsKeptWhileDiskFull(t *testing.T) {
	mnt := testenv.MountTmpfs(t, 96<<20)
	dir := filepath.Join(mnt, "journal")
	const reserve = 24 << 20
	opts := Options{MaintenanceInterval: -1, DiskReserve: reserve}
	s := openStore(t, dir, opts)
	mustApply(t, s, event(1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	filler := testenv.FillDisk(t, mnt, reserve-1<<20)

	s = openStore(t, dir, opts)
	if !s.Disk().ReadOnly {
		t.Fatal("opened writable on a short disk")
	}
	s.KeepDropped(map[string]uint64{"a": 5, "b": 2})
	if m, err := readMarks(dir); err != nil || m.Clean || m.Dropped["a"] != 5 {
		t.Fatalf("marks of an open store after KeepDropped: %+v, %v; want a=5 kept and not clean", m, err)
	}
	s.KeepDropped(map[string]uint64{"a": 1})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Still short at the next start: kept again, not journaled.
	s = openStore(t, dir, opts)
	if !s.Disk().ReadOnly {
		t.Fatal("opened writable on a short disk")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if m, err := readMarks(dir); err != nil || m.Dropped["a"] != 6 || m.Dropped["b"] != 2 || !m.Clean {
		t.Fatalf("marks after two read-only runs: %+v, %v; want a clean mark keeping a=6, b=2", m, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second start finds them journaled, once
		s = openStore(t, dir, opts)
		evs, err := s.Events(EventFilter{Method: MethodEventsDropped})
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
		if len(evs) != 2 || got["a"] != 6 || got["b"] != 2 {
			t.Fatalf("%d dropped events counting %v; want two, a=6 and b=2", len(evs), got)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if m, _ := readMarks(dir); len(m.Dropped) != 0 {
			t.Fatalf("marks still keep %v once journaled", m.Dropped)
		}
	}
}
