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
// # A full disk
//
// The store keeps Options.DiskReserve (256 MiB) free on its filesystem.
// Below it, it reopens Badger read-only, and Apply and Prune fail with
// ErrDiskFull while reads go on; when the space returns it reopens
// writable by itself (Disk reports the state). Badger writes through
// memory maps, so without the reserve a full disk is a SIGBUS, not an
// error; disk.go has the reasoning.
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
//	h/<seq>                             HistoryRecord, or a block of calls ending at seq (below)
//	k/<kind>\x00<seq>                   empty; the history index by kind (calls have none)
//	t/<server>\x00<task id>             TaskRecord
//	x/<id>                              GatewayTaskRecord
//	p/<id>                              ContainmentRecord (a running server's cell, until it is gone)
//	n/<server>\x00<tool>                 PinRecord (a tool definition's approval; deleted with its server)
//
// Call records are written in blocks: the calls an Apply appends between
// two other history records are one key, h/<the last one's seq>, whose
// value is a msgpack map {"v": 2, "calls": <the records' array,
// Snappy-compressed>} (an array too big to compress is kept as it is), at
// most 256 records or about 256 KiB of them. A build from before blocks
// refuses a block with ErrSchemaVersion. A seek to h/<s> lands on the key
// that holds s or on the next, so reads, pages and their cursors go through
// blocks record by record; Prune writes a block back with the records
// still in retention. A key per call cost Badger more CPU than the rest of
// the call (BenchmarkApplyCalls: 12.8 µs of CPU per call record a key
// each, 3.6 µs in blocks, medians of 3 interleaved runs). Journals written
// a key per record, as all were before blocks, read the same.
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
// EventsPage and HistoryPage read one page: at most MaxPageLimit records
// (DefaultPageLimit by default), PageScanBudget records read and about
// PageBytes of payload, with Next, the After that reads on. A page costs
// what it reads, however big the journal.
//
// Prune deletes processed events, history records and Done tasks past
// their retention (Options; tasks follow the history's), the oldest
// events past PendingEventRetention whatever their status, and, over
// EventLimit, the oldest processed events and then, if need be, the
// oldest pending ones (PruneResult.PendingEvents counts those; the
// maintenance goroutine logs them as a warning). Unfinished tasks are
// never pruned. Events are pruned in chunks, each under the writer lock
// for its own length only. A goroutine owned by the Store runs Prune and
// then value-log GC every MaintenanceInterval; Close stops and joins it.
//
// # Badger tuning
//
// Memory is bounded under a flood of small events rather than tuned for
// Badger's default large-server profile. Badger allocates on the Go heap
// (this build has no jemalloc), and the Go runtime lets the heap grow to
// about twice what is live before it collects, so each MiB Badger keeps
// costs about two of RSS. Measured with the bench's journal scenario (a
// million ~100-byte events from one and from four servers): peak anonymous
// RSS 156-193 MiB over baseline, ~95-105 MiB of live heap, most of it the
// memtables and the table builders below.
//
//   - 16 MiB memtables, at most 3 (Badger: 64 MiB x 5). A memtable's arena
//     is ~21 MiB (room for one more batch); two are live while one is
//     flushed. A transaction may hold 15% of a memtable, ~2.4 MiB, so one
//     group commit of the journal writer (~8,000 events) is one transaction
//     and one sync.
//   - Raw tables, no block cache (Badger: Snappy and 256 MiB). A builder of
//     compressed tables holds each block twice, raw and compressed at its
//     worst-case size, and fills a table up to its compressed size: a 2 MiB
//     table buffered ~17 MiB and a memtable's flush ~60 MiB, against ~4 and
//     ~28 raw. Raw tables take about four times the disk (a million events:
//     107 MiB of tables instead of 27, and four times the files, each held
//     open by Badger) and about 50 MiB less anonymous memory at the flood's
//     peak (4 servers: 156-193 MiB against 203-278). Blocks are read from
//     the tables' memory maps: file-backed pages the kernel reclaims.
//     Options.Compress makes the other trade, with a 16 MiB block cache
//     (compressed blocks are otherwise decompressed on every read). Tables
//     keep the compression they were written with.
//   - Table size multiplier 1 (Badger: 2): deeper levels keep 2 MiB tables,
//     so the many builders of a large compaction stay small. With 2, peak
//     live heap under the flood was ~1.7x higher.
//   - ValueThreshold 16 KiB (Badger: 1 MiB): events, most records and the
//     blocks of call records (a full block of small calls compresses to
//     about 4 KiB) live in the LSM tree and go with compaction after Prune;
//     large tool results go to the value log, in 64 MiB files (Badger:
//     1 GiB), reclaimed by value-log GC. A block in the value log cost each
//     commit a second file to sync.
//   - A 16 MiB index cache (Badger: unbounded), so table indexes and bloom
//     filters do not grow with the data.
//   - Two compactors (Badger: 4; 2 is its least), L0 compaction at 10
//     tables, stall at 20.
//   - No conflict detection (one writer), one version per key, L0
//     compacted on Close, Badger's global expvar metrics off (Stats sums
//     the files itself).
package persistence
