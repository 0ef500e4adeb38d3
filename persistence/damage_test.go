package persistence

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// journalImage is a journal directory as the test left it, and what it
// holds.
type journalImage struct {
	dir            string
	events, grants int
}

// makeJournal writes events events and grants grants to a new journal in
// dir and closes it, so that they are in table files.
func makeJournal(t testing.TB, dir string, events, grants int) journalImage {
	t.Helper()
	s, err := Open(dir, Options{MaintenanceInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	fillJournal(t, s, 0, events, grants)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return journalImage{dir: dir, events: events, grants: grants}
}

// makeCrashImage writes events and grants to a journal in dir in two
// rounds, the first closed into tables, and copies the directory into
// image while the store is still open after the second: the image is the
// journal as a SIGKILL would leave it, with records in its WAL. The WALs'
// and value log's zeroed, preallocated tails are cut to 4 KiB, as Badger's own replay
// leaves them, to keep the image small.
func makeCrashImage(t testing.TB, dir, image string, events, grants int) journalImage {
	t.Helper()
	s, err := Open(dir, Options{MaintenanceInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	fillJournal(t, s, 0, events/2, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{MaintenanceInterval: -1}); err != nil {
		t.Fatal(err)
	}
	fillJournal(t, s, events/2, events-events/2, grants)
	s.writeMarks()
	if err := os.MkdirAll(image, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		b, err := readHead(filepath.Join(dir, e.Name()), 8<<20)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".mem") || strings.HasSuffix(e.Name(), ".vlog") {
			_, end := replayWAL(b)
			b = b[:min(len(b), end+4096)]
		}
		if err := os.WriteFile(filepath.Join(image, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return journalImage{dir: image, events: events, grants: grants}
}

// fillJournal appends events events numbered from first, and grants grants, in
// batches of 100.
func fillJournal(t testing.TB, s *Store, first, events, grants int) {
	t.Helper()
	var ops []Op
	flush := func() {
		if _, err := s.Apply(ops); err != nil {
			t.Fatal(err)
		}
		ops = ops[:0]
	}
	for i := range events {
		params := fmt.Sprintf(`{"n":%d,"pad":%q}`, first+i, strings.Repeat("x", 100))
		ops = append(ops, AppendEvent(EventRecord{Server: "s", Method: "notifications/message", Params: RawJSON(params)}))
		if len(ops) == 100 {
			flush()
		}
	}
	for i := range grants {
		ops = append(ops, PutGrant(GrantRecord{Scope: Scope{Session: fmt.Sprintf("session-%d", i)}, Group: "g"}))
		if len(ops) == 100 {
			flush()
		}
	}
	if len(ops) > 0 {
		flush()
	}
}

// snapshot reads every file of dir (not its subdirectories).
func snapshot(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// checkKept fails unless every file of before is, byte for byte, in dir
// or in one of its quarantine directories.
func checkKept(t testing.TB, dir string, before map[string][]byte) {
	t.Helper()
	places := []string{dir}
	qs, _ := filepath.Glob(filepath.Join(dir, "quarantine-*"))
	places = append(places, qs...)
	for name, want := range before {
		found := slices.ContainsFunc(places, func(p string) bool {
			got, err := os.ReadFile(filepath.Join(p, name))
			return err == nil && bytes.Equal(got, want)
		})
		if !found {
			t.Errorf("%s (%d bytes) is neither in %s nor in a quarantine directory (%v), as it was", name, len(want), dir, qs)
		}
	}
}

func filesWith(t testing.TB, dir, suffix string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
	if err != nil || len(names) == 0 {
		t.Fatalf("no %s file in %s", suffix, dir)
	}
	slices.Sort(names)
	return names
}

// TestDamagedJournal does to a real journal what a disk or a person does,
// and opens it: Open never panics, never starts it over, and either
// refuses with ErrDamaged or opens with the loss counted; either way the
// files it found are kept.
func TestDamagedJournal(t *testing.T) {
	const events, grants = 2000, 30
	refused := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string // in the error
	}{
		{"MANIFEST deleted", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "MANIFEST")); err != nil {
				t.Fatal(err)
			}
		}, "MANIFEST: missing"},
		{"MANIFEST truncated to 10 bytes", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, "MANIFEST"), 10); err != nil {
				t.Fatal(err)
			}
		}, "MANIFEST: does not name"},
		{"4 KiB garbled in a table", func(t *testing.T, dir string) {
			name := filesWith(t, dir, ".sst")[0]
			f, err := os.OpenFile(name, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			junk := make([]byte, 4096)
			rand.Read(junk)
			if _, err := f.WriteAt(junk, 8192); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}, ".sst: damaged"},
		{"table truncated to half", func(t *testing.T, dir string) {
			name := filesWith(t, dir, ".sst")[0]
			st, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(name, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, ".sst: damaged"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			j := makeJournal(t, t.TempDir(), events, grants)
			tc.damage(t, j.dir)
			before := snapshot(t, j.dir)
			s, err := Open(j.dir, Options{MaintenanceInterval: -1})
			if err == nil {
				s.Close()
				t.Fatal("Open opened a damaged journal")
			}
			var damaged *DamagedError
			if !errors.Is(err, ErrDamaged) || !errors.As(err, &damaged) {
				t.Fatalf("Open: %v, want a *DamagedError", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "quarantine-") {
				t.Errorf("error %q does not say %q and where the copy is", err, tc.want)
			}
			// Refused: the files are as they were, and copied too.
			if diff := slices.Compare(sortedKeys(snapshot(t, j.dir)), sortedKeys(before)); diff != 0 {
				t.Errorf("files changed: %v, were %v", sortedKeys(snapshot(t, j.dir)), sortedKeys(before))
			}
			checkKept(t, damaged.Quarantine, before)
			checkKept(t, j.dir, before)
			in, err := Inspect(j.dir)
			if err != nil || !in.Fatal() {
				t.Errorf("Inspect after the refusal: %+v, %v; want a fatal finding", in, err)
			}
		})
	}

	t.Run("table garbled: records counted", func(t *testing.T) {
		j := makeJournal(t, t.TempDir(), events, grants)
		name := filesWith(t, j.dir, ".sst")[0]
		b, _ := os.ReadFile(name)
		copy(b[4096:], bytes.Repeat([]byte{0xAA}, 4096))
		os.WriteFile(name, b, 0o600)
		in, err := Inspect(j.dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Findings) != 1 || in.Findings[0].Records < events {
			t.Fatalf("findings %+v, want one for %s counting at least %d records", in.Findings, filepath.Base(name), events)
		}
	})

	t.Run("WAL truncated", func(t *testing.T) {
		j := makeCrashImage(t, t.TempDir(), filepath.Join(t.TempDir(), "image"), events, grants)
		wal := filesWith(t, j.dir, ".mem")
		last := wal[len(wal)-1]
		b, err := os.ReadFile(last)
		if err != nil {
			t.Fatal(err)
		}
		_, end := replayWAL(b)
		if err := os.Truncate(last, int64(end/2)); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, j.dir)
		s, err := Open(j.dir, Options{MaintenanceInterval: -1})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		evs, err := s.Events(EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		gs, err := s.Grants()
		if err != nil {
			t.Fatal(err)
		}
		rec := s.Recovery()
		t.Logf("recovery: %s; %d events and %d grants of %d and %d", rec, len(evs), len(gs), events, grants)
		if len(evs) == events {
			t.Fatal("the truncation lost no event: the test damages nothing")
		}
		if got, want := rec.LostEvents, uint64(events-len(evs)); got != want {
			t.Errorf("LostEvents %d, want %d", got, want)
		}
		if got, want := rec.LostHistory, uint64(grants-len(gs)); got != want {
			t.Errorf("LostHistory %d, want %d (a history record per grant)", got, want)
		}
		if rec.Quarantine == "" {
			t.Fatal("no quarantine: the WAL's cut end was not copied before Badger truncated it")
		}
		checkKept(t, rec.Quarantine, before)
		// No new record takes a lost one's seq.
		applied, err := s.Apply([]Op{AppendEvent(EventRecord{Server: "s", Method: "m"})})
		if err != nil {
			t.Fatal(err)
		}
		if applied.Events[0].Seq <= uint64(events) {
			t.Errorf("new event got seq %d, taken by a lost one (<= %d)", applied.Events[0].Seq, events)
		}
	})

	t.Run("whole journal: nothing reported", func(t *testing.T) {
		j := makeCrashImage(t, t.TempDir(), filepath.Join(t.TempDir(), "image"), events, grants)
		s, err := Open(j.dir, Options{MaintenanceInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if rec := s.Recovery(); rec.Damaged() {
			t.Errorf("a whole journal reported %s", rec)
		}
		evs, _ := s.Events(EventFilter{})
		if len(evs) != events {
			t.Errorf("%d events, want %d", len(evs), events)
		}
		if qs, _ := filepath.Glob(filepath.Join(j.dir, "quarantine-*")); len(qs) > 0 {
			t.Errorf("quarantine made for a whole journal: %v", qs)
		}
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// readHead reads at most n bytes from the start of a file: the test's logs
// hold far less than their preallocated size.
func readHead(name string, n int) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(n)))
	return b, err
}
