package sidecar_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/testenv"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/hosttest"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// A live host whose disk fills up under a flood of events: no crash (it
// used to die of SIGBUS in Badger), the journal turns read-only and says
// so, calls go on, what could not be journaled is counted, and once the
// space returns the journal takes writes again and journals the count.
func TestDiskFullUnderLiveHost(t *testing.T) {
	mnt := testenv.MountTmpfs(t, 96<<20)
	const reserve = 24 << 20
	m := sidecar.NewMetrics(sidecar.MetricsOptions{})
	a := openAPIHost(t, mcpvisor.Options{DataDir: filepath.Join(mnt, "data"), Journal: mcpvisor.JournalOptions{DiskReserve: reserve}},
		sidecar.Options{Metrics: m.Handler()}, mcptest("t"))
	m.Watch(a.h)
	j := a.h.Journal()

	filler := testenv.FillDisk(t, mnt, reserve+1<<20)
	for i := 0; !j.Disk().ReadOnly; i++ {
		if i == 50 {
			t.Fatalf("the journal is still writable after %d flooded events; disk: %+v", i*20000, j.Disk())
		}
		if r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__flood", "arguments": map[string]any{"n": 20000}}); r.status != http.StatusOK {
			t.Fatalf("flood: %d %s", r.status, r.body)
		}
	}
	// Someone else takes the rest of the disk: the journal writes nothing now.
	rest := testenv.FillDisk(t, mnt, 0)

	var health map[string]string
	r := a.do("GET", "/healthz", nil)
	if r.status != http.StatusOK {
		t.Fatalf("/healthz on a full disk: %d %s", r.status, r.body)
	}
	if r.json(t, &health); health["journal"] != mcpvisor.JournalReadOnlyDiskFull {
		t.Fatalf("/healthz on a full disk = %v, want journal %q", health, mcpvisor.JournalReadOnlyDiskFull)
	}
	if r := a.do("GET", "/readyz", nil); r.status != http.StatusOK {
		t.Fatalf("/readyz on a full disk: %d %s (calls still work)", r.status, r.body)
	}
	before, _ := j.Stats()
	if before.ReadOnly != mcpvisor.JournalReadOnlyDiskFull {
		t.Fatalf("JournalStats.ReadOnly = %q", before.ReadOnly)
	}
	for range 5 {
		if r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__echo", "arguments": map[string]any{"text": "hi"}}); r.status != http.StatusOK {
			t.Fatalf("a call on a full disk: %d %s", r.status, r.body)
		}
	}
	eventually(t, "the calls' history counted as dropped", func() bool {
		w, _ := j.Stats()
		return w.Dropped >= before.Dropped+5
	})
	fams := metricsScrape(t, m)
	if v := metricValue(t, fams, "mcpvisor_journal_read_only"); v != 1 {
		t.Fatalf("mcpvisor_journal_read_only = %v on a full disk", v)
	}
	if v := metricValue(t, fams, "mcpvisor_events_dropped_total"); v < float64(before.Dropped+5) {
		t.Fatalf("mcpvisor_events_dropped_total = %v, want at least %d", v, before.Dropped+5)
	}

	// The space returns: the journal is writable again by itself.
	for _, f := range []string{rest, filler} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the journal writable again", func() bool { return !j.Disk().ReadOnly })
	if r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__echo", "arguments": map[string]any{"text": "back"}}); r.status != http.StatusOK {
		t.Fatalf("a call once the space returned: %d %s", r.status, r.body)
	}
	eventually(t, "the drops journaled", func() bool {
		evs, err := j.Events(mcpvisor.EventFilter{Server: "t", Method: mcpvisor.MethodEventsDrops})
		return err == nil && len(evs) > 0
	})
	health = nil
	a.do("GET", "/healthz", nil).json(t, &health)
	if health["status"] != "ok" || health["journal"] != "" {
		t.Fatalf("/healthz after recovery = %v", health)
	}
}

// A host started on a full disk starts, read-only, instead of dying at
// every start (a crash loop under systemd), and its servers answer.
func TestHostStartsOnFullDisk(t *testing.T) {
	mnt := testenv.MountTmpfs(t, 64<<20)
	data := filepath.Join(mnt, "data")
	hopts := mcpvisor.Options{DataDir: data, Journal: mcpvisor.JournalOptions{DiskReserve: 16 << 20}}
	first := hosttest.Open(t, hopts, mcptest("t"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := first.WaitReady(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.FillDisk(t, mnt, 0)

	// A server added to the file while the disk is full is started too,
	// though the registry cannot journal it.
	a := openAPIHost(t, hopts, sidecar.Options{}, mcptest("t"), mcptest("u"))
	if !a.h.Journal().Disk().ReadOnly {
		t.Fatal("the journal opened writable on a full disk")
	}
	for _, tool := range []string{"mcp__t__echo", "mcp__u__echo"} {
		if r := a.do("POST", "/v1/call", map[string]any{"tool": tool, "arguments": map[string]any{"text": "hi"}}); r.status != http.StatusOK {
			t.Fatalf("%s on a full disk: %d %s", tool, r.status, r.body)
		}
	}
	var health map[string]string
	a.do("GET", "/healthz", nil).json(t, &health)
	if health["journal"] != mcpvisor.JournalReadOnlyDiskFull {
		t.Fatalf("/healthz = %v", health)
	}
}

// A stalled journal (its writer blocked, as on a frozen disk) delays
// journal writes, never /healthz, /metrics or a call.
func TestStalledJournalBlocksNoCall(t *testing.T) {
	m := sidecar.NewMetrics(sidecar.MetricsOptions{})
	a := openAPI(t, sidecar.Options{Metrics: m.Handler()}, mcptest("t"))
	m.Watch(a.h)
	j := a.h.Journal()

	// done runs on the journal's writer goroutine: blocking in it stalls
	// every commit after this one, as a write stuck on the disk would.
	stalled, release := make(chan struct{}), make(chan struct{})
	j.WriteAsync(nil, func(error) {
		close(stalled)
		<-release
	})
	<-stalled
	defer close(release)
	before, _ := j.Stats()

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := j.Ack(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a durable write while the journal is stalled = %v, want it still waiting at its deadline", err)
	}
	for range 3 {
		if r := a.do("GET", "/healthz", nil); r.status != http.StatusOK {
			t.Fatalf("/healthz while the journal is stalled: %d", r.status)
		}
		if r := a.do("GET", "/metrics", nil); r.status != http.StatusOK {
			t.Fatalf("/metrics while the journal is stalled: %d", r.status)
		}
		if r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__echo", "arguments": map[string]any{"text": "hi"}}); r.status != http.StatusOK {
			t.Fatalf("a call while the journal is stalled: %d %s", r.status, r.body)
		}
	}
	if after, _ := j.Stats(); after.Commits != before.Commits || after.Queued < 3 {
		t.Fatalf("the journal was not stalled: commits %d -> %d, %d queued", before.Commits, after.Commits, after.Queued)
	}
}
