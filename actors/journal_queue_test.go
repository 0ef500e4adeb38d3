package actors

import (
	"strconv"
	"testing"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// The queue keeps its records in order across chunks, in place, and once
// emptied holds none of their data and at most keptChunks chunks.
func TestIngestQueue(t *testing.T) {
	var q ingestQueue
	const n = ingestChunkLen*(keptChunks+3) + 5
	var firstCall *ingestedOp
	for i := range n {
		if i%2 == 0 {
			rec := persistence.HistoryRecord{Kind: persistence.HistoryCall, Tool: strconv.Itoa(i)}
			if got := q.push("s", persistence.Op{}, &rec); got != i+1 {
				t.Fatalf("push %d: length %d", i, got)
			}
		} else {
			q.push(strconv.Itoa(i), persistence.AckEvents(uint64(i)), nil)
		}
		if i == 0 {
			q.each(func(in *ingestedOp) { firstCall = in })
		}
	}
	i := 0
	q.each(func(in *ingestedOp) {
		if i == 0 && in != firstCall {
			t.Errorf("the first record moved")
		}
		switch {
		case i%2 == 0 && (!in.isHistory || in.history.Tool != strconv.Itoa(i)):
			t.Errorf("record %d: %+v, want call %d", i, in.history, i)
		case i%2 == 1 && (in.isHistory || in.server != strconv.Itoa(i)):
			t.Errorf("record %d: server %q, history %v", i, in.server, in.isHistory)
		}
		i++
	})
	if i != n {
		t.Fatalf("each visited %d records, want %d", i, n)
	}
	q.reset()
	if q.n != 0 || len(q.chunks) != keptChunks {
		t.Fatalf("after reset: %d records, %d chunks; want 0 and %d", q.n, len(q.chunks), keptChunks)
	}
	for _, c := range q.chunks {
		for k := range c {
			if in := &c[k]; in.server != "" || in.isHistory || in.history.Tool != "" || in.op.String() != (persistence.Op{}).String() {
				t.Fatalf("after reset a chunk still holds %+v", *in)
			}
		}
	}
}
