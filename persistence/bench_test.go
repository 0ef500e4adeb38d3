package persistence

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"
)

// smallEvent is the flood case: a list_changed-sized notification.
func smallEvent(i int) Op {
	return AppendEvent(EventRecord{
		Server: "flood", Method: "notifications/message",
		Params: fmt.Appendf(nil, `{"level":"info","data":"line %d"}`, i),
	})
}

// BenchmarkApplyEvents measures durable group commit: each op is one Apply
// of 1000 small events, returning once they are synced.
func BenchmarkApplyEvents(b *testing.B) {
	s := openStore(b, b.TempDir(), Options{})
	const batch = 1000
	ops := make([]Op, batch)
	for i := range ops {
		ops[i] = smallEvent(i)
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := s.Apply(ops); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(0, "ns/op") // per-batch time says less than events/s
}

// TestFloodMemoryBounded appends a million small events in durable batches
// of 1000 and checks the process's anonymous memory stays bounded, both
// when nothing consumes them (every event stays pending) and
// when each batch also acks the one before. Peak RSS is process-wide, so
// the second case is measured in a fresh process when run alone with
// -run 'TestFloodMemoryBounded/acked'. It takes about a minute, so it runs
// only with MCPVISOR_FLOOD=1 (or =N for N events).
func TestFloodMemoryBounded(t *testing.T) {
	total := 1_000_000
	switch v := os.Getenv("MCPVISOR_FLOOD"); v {
	case "":
		t.Skip("set MCPVISOR_FLOOD=1 to run")
	case "1":
	default:
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("MCPVISOR_FLOOD=%q", v)
		}
		total = n
	}
	if _, _, ok := readRSS(); !ok {
		t.Skip("no /proc/self/status")
	}
	for _, tt := range []struct {
		name string
		ack  bool
	}{
		{"pending", false},
		{"acked", true},
	} {
		t.Run(tt.name, func(t *testing.T) { flood(t, total, tt.ack) })
	}
}

func flood(t *testing.T, total int, ack bool) {
	s := openStore(t, t.TempDir(), Options{})
	const batch = 1000
	var peakAnon, peakFile, peakLive int64
	var prev []uint64
	start := time.Now()
	for n := 0; n < total; n += batch {
		ops := make([]Op, batch, batch+1)
		for i := range ops {
			ops[i] = smallEvent(n + i)
		}
		if ack && prev != nil {
			ops = append(ops, AckEvents(prev...))
		}
		res, err := s.Apply(ops)
		if err != nil {
			t.Fatal(err)
		}
		prev = prev[:0]
		for _, e := range res.Events {
			prev = append(prev, e.Seq)
		}
		if n%(50*batch) == 0 {
			anon, file, _ := readRSS()
			peakAnon, peakFile = max(peakAnon, anon), max(peakFile, file)
			live := liveHeap()
			peakLive = max(peakLive, live)
			t.Logf("%8d events: RssAnon %4d MiB, RssFile %4d MiB, live heap %4d MiB",
				n+batch, anon>>20, file>>20, live>>20)
		}
	}
	elapsed := time.Since(start)
	anon, file, _ := readRSS()
	peakAnon, peakFile = max(peakAnon, anon), max(peakFile, file)
	st := s.Stats()
	t.Logf("%d events in %v (%.0f events/s); peak RssAnon %d MiB, RssFile %d MiB, live heap %d MiB; LSM %d MiB, vlog %d MiB",
		total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(),
		peakAnon>>20, peakFile>>20, peakLive>>20, st.LSMBytes>>20, st.VLogBytes>>20)
	wantPending := int64(total)
	if ack {
		wantPending = int64(len(prev))
	}
	if st.PendingEvents != wantPending {
		t.Errorf("PendingEvents = %d, want %d", st.PendingEvents, wantPending)
	}
	const bound = 512 << 20
	if peakAnon > bound {
		t.Errorf("peak anonymous RSS %d MiB, over %d MiB", peakAnon>>20, bound>>20)
	}
}

// liveHeap is the heap marked live by the last GC.
func liveHeap() int64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return int64(sample[0].Value.Uint64())
}

// readRSS reads the anonymous and file-backed resident set from
// /proc/self/status (Linux).
func readRSS() (anon, file int64, ok bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var kb int64
		if n, _ := fmt.Sscanf(sc.Text(), "RssAnon: %d kB", &kb); n == 1 {
			anon = kb << 10
		}
		if n, _ := fmt.Sscanf(sc.Text(), "RssFile: %d kB", &kb); n == 1 {
			file = kb << 10
		}
	}
	return anon, file, anon > 0
}
