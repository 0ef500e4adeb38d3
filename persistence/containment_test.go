package persistence

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestContainmentRecords(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := ContainmentRecord{ID: "a-1", Server: "fs", Mode: "cgroup", Cgroup: "/sys/fs/cgroup/mcpvisor-1/srv-fs-1",
		Marker: "a-1", BootID: "boot", HostPID: 42, Started: started}
	b := ContainmentRecord{ID: "b-2", Server: "git", Mode: "process-group", Marker: "b-2", Started: started}
	mustApply(t, s, PutContainment(a), PutContainment(b))
	// Completed once the process runs: the same key, more fields.
	a.PGID, a.LeaderStart, a.Session = 1234, 99, 1000
	mustApply(t, s, PutContainment(a))

	// They survive a restart: that is what they are for.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{})
	got, err := s.Containments()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ContainmentRecord{withV(a), withV(b)}, got); diff != "" {
		t.Errorf("Containments (-want +got):\n%s", diff)
	}
	mustApply(t, s, DeleteContainment("a-1"), DeleteContainment("never-stored"))
	if got, _ := s.Containments(); len(got) != 1 || got[0].ID != "b-2" {
		t.Errorf("after delete: %+v", got)
	}
	if _, err := s.Apply([]Op{PutContainment(ContainmentRecord{Server: "x"})}); !errors.Is(err, ErrInvalidRecord) {
		t.Errorf("empty id: %v, want ErrInvalidRecord", err)
	}
}
