// Package persistence is the journal's storage floor: the server registry,
// tool catalogs, pending events, grants, MCP tasks in flight and the
// append-only history, kept in a Badger database embedded in one
// directory. It knows nothing of actors or MCP transports.
//
//	s, err := persistence.Open(dir, persistence.Options{})
//	if err != nil {
//		return err // errors.Is(err, persistence.ErrLocked): another process has dir
//	}
//	defer s.Close()
//	res, err := s.Apply([]persistence.Op{
//		persistence.AppendEvent(persistence.EventRecord{Server: "github", Method: "notifications/message"}),
//	})
//	// res.Events[0].Seq is the event's seq; it is on disk now.
//
// The package example (example_test.go) runs that end to end.
//
// # Writing
//
// One writer does group commit: the caller hands Apply a batch of many ops
// and Apply commits them in one Badger transaction, with one sync, and
// returns once they are durable. When Apply returns nil every op in the
// batch survives a SIGKILL of the process, and Badger's SyncWrites has
// synced it to the disk. Only when
// Badger reports the batch too big for one transaction is it split into
// several, each holding whole records with their index entries, so a crash
// never leaves a history record without its kind-index key. The pending
// mark goes last, so a batch committed only in part leaves it where it was.
//
// Seqs are assigned by Apply. They are reserved before committing and every
// transaction carries the high-water marks of the whole reservation, so a
// seq is never reused: not after a failed Apply, a crash, or retention
// deleting every record.
//
// # Key layout
//
// Seqs are 8-byte big-endian so keys iterate in seq order. Names inside keys
// may not contain NUL, the separator.
//
//	m/seq/event                         uint64 BE: event seq high-water mark
//	m/seq/history                       uint64 BE: history seq high-water mark
//	m/pending-from                      uint64 BE: the pending mark; every event below it is processed
//	s/<name>                            ServerRecord
//	c/<name>                            CatalogRecord
//	e/<seq>                             EventRecord
//	g/<session>\x00<stack>\x00<group>   GrantRecord (stack "" for the session itself)
//	h/<seq>                             HistoryRecord
//	k/<kind>\x00<seq>                   empty; the history index by kind (calls have none)
//	t/<server>\x00<task id>             TaskRecord
//	x/<id>                              GatewayTaskRecord
//
// Records are msgpack maps keyed by field name, each with its schema
// version "v". Decoding a record with a version above SchemaVersion fails
// with ErrSchemaVersion; bytes that are not a well-formed record fail with
// ErrCorrupt naming the key. The decoder never panics and allocates no more
// than the record's size describes.
//
// # Reading and maintenance
//
// Reads run in Badger read transactions, safe concurrently with Apply and
// with each other, and see whole committed transactions. Pending events
// are read from the pending mark on; history by kind through the kind
// index; AccessAt replays only the grant and revoke index.
//
// Events have no pending index: an index key per event doubled the cost of
// every append (measured: about 2x fewer durable events/s), and consumers
// acknowledge roughly in order. The mark is moved past the processed events
// it sits on by the Apply that acknowledges them; a seq with no event
// (pruned, or reserved by a failed Apply) counts as processed. One event
// left pending for long pins the mark, and listing pending events then
// reads every event after it.
//
// Prune deletes processed events, history records and Done tasks past
// their retention (Options; tasks follow the history's); pending events
// and unfinished tasks are never pruned. A goroutine owned by the
// Store runs Prune and then value-log GC every MaintenanceInterval; Close
// stops and joins it.
//
// # Badger tuning
//
// Memory is bounded under a flood of small events rather than tuned for
// Badger's default large-server profile (measured: a million 100-byte
// events in durable batches of 1000 peak at ~260-320 MiB of anonymous RSS,
// ~110-160 MiB of live heap, most of it compaction buffers; TestFloodMemoryBounded):
//
//   - 16 MiB memtables, at most 3 (Badger: 64 MiB x 5): ~63 MiB of
//     skiplists, and the flush of one to an L0 table buffers ~2.5x its size.
//     A transaction may hold 15% of a memtable, ~2.4 MiB, so a batch of 1000
//     events of up to ~2 KiB each commits in one transaction and one sync.
//   - Table size multiplier 1 (Badger: 2): deeper levels keep 2 MiB tables,
//     so the many builders of a large compaction stay small. With 2, peak
//     live heap under the flood was ~1.7x higher.
//   - ValueThreshold 4 KiB (Badger: 1 MiB): events and most records live in
//     the LSM tree and go with compaction after Prune; large tool results
//     go to the value log, in 64 MiB files (Badger: 1 GiB), reclaimed by
//     value-log GC.
//   - 16 MiB block cache (Snappy-compressed tables need one; Badger: 256
//     MiB) and a 16 MiB index cache (Badger: unbounded), so table indexes
//     and bloom filters do not grow with the data.
//   - Two compactors (Badger: 4), L0 compaction at 4 tables, stall at 12.
//   - No conflict detection (one writer), one version per key, L0
//     compacted on Close, Badger's global expvar metrics off (Stats sums
//     the files itself).
package persistence
