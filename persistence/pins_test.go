package persistence

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPinRecords(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	a := PinRecord{Server: "fs", Tool: "read_file", Approved: "sha256:a", Definition: []byte(`{"name":"read_file"}`),
		At: at, By: "cli", Seen: "sha256:a"}
	b := PinRecord{Server: "fs", Tool: "write_file", Seen: "sha256:b"}
	// A server whose name is another's prefix keeps its pins when the
	// other is deleted: the key separator is NUL.
	c := PinRecord{Server: "fs2", Tool: "x", Rejected: "sha256:c"}
	mustApply(t, s, PutPin(a), PutPin(b), PutPin(c), PutServer(ServerRecord{Name: "fs"}))
	b.Rejected = "sha256:b"
	mustApply(t, s, PutPin(b))

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{})
	got, err := s.Pins()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]PinRecord{withV(a), withV(b), withV(c)}, got); diff != "" {
		t.Errorf("Pins (-want +got):\n%s", diff)
	}

	// Deleting a server deletes its pins: registered again, it is
	// approved afresh.
	mustApply(t, s, DeleteServer("fs"))
	if got, _ := s.Pins(); len(got) != 1 || got[0].Server != "fs2" {
		t.Errorf("after DeleteServer: %+v", got)
	}
	for _, bad := range []PinRecord{{Tool: "x"}, {Server: "x"}, {Server: "a\x00b", Tool: "x"}} {
		if _, err := s.Apply([]Op{PutPin(bad)}); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("PutPin(%+v): %v, want ErrInvalidRecord", bad, err)
		}
	}
}
