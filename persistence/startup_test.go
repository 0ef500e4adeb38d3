package persistence

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// TestStartupTime builds a journal of MCPVISOR_STARTUP events (pending,
// never pruned) and reports how long Open takes on it, after a clean Close
// and after a stop that left no clean mark. It measures and asserts
// nothing about speed, so it runs only when asked: MCPVISOR_STARTUP=1 for
// a million events, =N for N. MCPVISOR_STARTUP_DIR keeps the journal
// there, and reuses it when it holds one.
func TestStartupTime(t *testing.T) {
	total := 1_000_000
	switch v := os.Getenv("MCPVISOR_STARTUP"); v {
	case "":
		t.Skip("set MCPVISOR_STARTUP=1 to run")
	case "1":
	default:
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("MCPVISOR_STARTUP=%q", v)
		}
		total = n
	}
	dir := os.Getenv("MCPVISOR_STARTUP_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	opts := Options{MaintenanceInterval: -1}
	s := openStore(t, dir, opts)
	if have := s.Stats().PendingEvents; have < int64(total) {
		const batch = 10_000
		ops := make([]Op, batch)
		for i := have; i < int64(total); i += batch {
			for j := range ops {
				ops[j] = smallEvent(int(i) + j)
			}
			if _, err := s.Apply(ops); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := s.Stats().PendingEvents
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lsm, _ := dirSizes(dir)
	open := func(name string) {
		start := time.Now()
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if got := s.Stats().PendingEvents; got != want {
			t.Errorf("%s: %d pending events, want %d", name, got, want)
		}
		t.Logf("%s: Open took %v (%d events, %d MiB of tables)", name, took, want, lsm>>20)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		open("after a clean close")
	}
	for range 2 {
		m, _ := readMarks(dir)
		m.Clean = false
		if err := writeMarks(dir, m, false); err != nil {
			t.Fatal(err)
		}
		open("after an unclean stop")
	}
}
