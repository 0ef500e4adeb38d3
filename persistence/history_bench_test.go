package persistence

import (
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// BenchmarkApplyCalls is the journal's share of a call's cost: call records
// as a host at 64 callers commits them, 128 per Apply (about 5 ms of
// calls), and the process's CPU per record, Badger's own goroutines (WAL,
// memtable flushes, compaction) included.
func BenchmarkApplyCalls(b *testing.B) {
	s := openStore(b, b.TempDir(), Options{})
	const batch = 128
	start := time.Now()
	ops := make([]Op, batch)
	done := testenv.ReportCPU(b)
	for i := 0; i < b.N; i += batch {
		for k := range ops {
			ops[k] = AppendHistory(HistoryRecord{
				Time: start.Add(time.Duration(i+k) * 40 * time.Microsecond), Kind: HistoryCall, Server: "github",
				Scope: Scope{Session: "s-7f3a"}, Tool: "mcp__github__search_issues", Duration: 180 * time.Microsecond,
				Outcome: "ok", ResultSize: 1834,
			})
		}
		if _, err := s.Apply(ops); err != nil {
			b.Fatal(err)
		}
	}
	done()
}
