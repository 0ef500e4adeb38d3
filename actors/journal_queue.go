package actors

import "github.com/mcpvisor/mcpvisor/persistence"

// ingestedOp is one record queued by Ingest or IngestHistory.
type ingestedOp struct {
	server string
	op     persistence.Op
	// history is the record IngestHistory queued (isHistory), kept here
	// in place: the commit's op points at it.
	history   persistence.HistoryRecord
	isHistory bool
}

const (
	// ingestChunkLen is how many records a chunk of the queue holds.
	ingestChunkLen = 64
	// keptChunks is how many chunks an emptied queue keeps for the next
	// commit (about 40 KiB each): enough for a commit of calls at tens of
	// thousands a second, not the room a burst up to the bound took.
	keptChunks = 16
)

// ingestQueue holds the records waiting for a commit in fixed chunks,
// which never move: a record is copied in once, and the commit's ops point
// at it. A slice of records, grown by append, copied every record again at
// each doubling, most of what queueing a call's record cost once records
// were kept in place. Not safe for concurrent use: the journal's mu guards
// the queue being filled; the commit owns the one it took.
type ingestQueue struct {
	chunks []*[ingestChunkLen]ingestedOp
	n      int
}

// push queues op, or a copy of *rec as a history record when rec is not
// nil, and returns how many records the queue holds.
func (q *ingestQueue) push(server string, op persistence.Op, rec *persistence.HistoryRecord) int {
	c, i := q.n/ingestChunkLen, q.n%ingestChunkLen
	if c == len(q.chunks) {
		q.chunks = append(q.chunks, new([ingestChunkLen]ingestedOp))
	}
	in := &q.chunks[c][i]
	in.server, in.op = server, op
	if rec != nil {
		in.history, in.isHistory = *rec, true
	}
	q.n++
	return q.n
}

// each calls f with every record in queue order.
func (q *ingestQueue) each(f func(*ingestedOp)) {
	for k := 0; k < q.n; k++ {
		f(&q.chunks[k/ingestChunkLen][k%ingestChunkLen])
	}
}

// reset empties the queue, letting go of what its records held, and keeps
// at most keptChunks chunks for reuse.
func (q *ingestQueue) reset() {
	for c := 0; c*ingestChunkLen < q.n; c++ {
		clear(q.chunks[c][:min(ingestChunkLen, q.n-c*ingestChunkLen)])
	}
	if len(q.chunks) > keptChunks {
		clear(q.chunks[keptChunks:])
		q.chunks = q.chunks[:keptChunks]
	}
	q.n = 0
}
