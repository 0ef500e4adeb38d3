package persistence

import (
	"fmt"
	"testing"
)

// Compress changes how tables are written, not what they hold: a journal
// written with one setting reads and grows with the other, and compressed
// tables of events are far smaller.
func TestCompressOption(t *testing.T) {
	const events = 20_000
	lsm := map[bool]int64{}
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("written compress=%v", compress), func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, Options{Compress: compress, MaintenanceInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			for n := 0; n < events; n += 1000 {
				ops := make([]Op, 1000)
				for i := range ops {
					ops[i] = smallEvent(n + i)
				}
				if _, err := s.Apply(ops); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil { // flushes the memtable into a table
				t.Fatal(err)
			}
			lsm[compress], _ = dirSizes(dir)

			// Reopened with the other setting: the old tables read as they
			// were written, new ones are written the other way.
			s = openStore(t, dir, Options{Compress: !compress})
			if _, err := s.Apply([]Op{smallEvent(events)}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Events(EventFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != events+1 {
				t.Fatalf("%d events after reopening, want %d", len(got), events+1)
			}
			for i, e := range got {
				if want := fmt.Sprintf(`{"level":"info","data":"line %d"}`, i); string(e.Params) != want || e.Seq != uint64(i+1) {
					t.Fatalf("event %d: seq %d, params %s; want seq %d, %s", i, e.Seq, e.Params, i+1, want)
				}
			}
		})
	}
	t.Logf("tables of %d events: %d bytes raw, %d compressed", events, lsm[false], lsm[true])
	if lsm[false] == 0 || lsm[true]*2 > lsm[false] {
		t.Errorf("tables of %d events: %d bytes raw, %d compressed: want compressed under half", events, lsm[false], lsm[true])
	}
}
