package actors

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// BenchmarkJournalIngestHistory is the journal's share of a call's CPU at
// 64 callers: each queues its call's record (IngestHistory) and the writer
// commits them in groups, until all are durable. cpu-ns/op is the process's
// CPU per record, Badger's goroutines included. Records dropped on a full
// queue are retried, so every op is one committed record.
func BenchmarkJournalIngestHistory(b *testing.B) {
	store, j := testJournal(b, JournalOptions{})
	start := time.Now()
	var retries atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	done := testenv.ReportCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			rec := persistence.HistoryRecord{Time: start.Add(time.Duration(i) * time.Microsecond), Kind: persistence.HistoryCall,
				Server: "github", Scope: persistence.Scope{Session: "s-7f3a"}, Tool: "mcp__github__search_issues",
				Duration: 180 * time.Microsecond, Outcome: "ok", ResultSize: 1834}
			for !j.IngestHistory("github", &rec) {
				retries.Add(1)
				<-j.Changed()
			}
		}
	})
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	done()
	if st := store.Stats(); st.LastHistorySeq < uint64(b.N) {
		b.Fatalf("%d records committed, want %d", st.LastHistorySeq, b.N)
	}
}
