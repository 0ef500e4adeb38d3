package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// defaultPruneChunk is how many records Prune examines per read
// transaction; the deletions of each chunk are committed before the next is
// read, so memory stays flat however many records are due.
const defaultPruneChunk = 10_000

// PruneResult counts the records Prune deleted.
type PruneResult struct {
	Events, History, Tasks, GatewayTasks int
	// PendingEvents counts the events deleted before anyone acknowledged
	// them (past PendingEventRetention, or over EventLimit); Events
	// counts the processed ones.
	PendingEvents int
}

// Prune deletes processed events whose ProcessedAt, history records whose
// Time, and Done tasks whose Updated are older than their retention
// (Options; tasks follow HistoryRetention) before Now, and gateway tasks
// whose Expires has passed. Then the oldest events while their Received
// is older than PendingEventRetention, pending or not. Then, while the
// journal holds more than EventLimit events, the oldest processed events,
// and only when those are not enough the oldest events of any status. Tasks
// not Done are never pruned. Deletions are committed in batches of at most
// 10,000 records. Prune holds the writer lock while it runs, so Apply
// waits; it stops early, returning ErrClosed, when Close begins.
func (s *Store) Prune() (PruneResult, error) {
	var res PruneResult
	if err := s.acquire(); err != nil {
		return res, err
	}
	defer s.closeMu.RUnlock()
	if s.disk.readOnly.Load() { // a read-only journal deletes nothing
		return res, fmt.Errorf("journal %s: %w", s.dir, ErrDiskFull)
	}
	now := s.opts.Now()
	// The retention of events takes the writer lock chunk by chunk, so a
	// big journal's first prune does not hold Apply up for its length.
	if err := s.pruneEventsOver(now, &res); err != nil {
		return res, fmt.Errorf("prune events: %w", err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.writable(0); err != nil {
		return res, err
	}
	n, err := pruneWhere(s, prefixGwTask, func(key []byte, t GatewayTaskRecord) ([]mutation, bool) {
		if !t.Expires.Before(now) {
			return nil, false
		}
		return []mutation{{key: bytes.Clone(key), del: true}}, true
	})
	res.GatewayTasks = n
	if err != nil {
		return res, fmt.Errorf("prune gateway tasks: %w", err)
	}
	if s.opts.EventRetention > 0 {
		cutoff := now.Add(-s.opts.EventRetention)
		n, err := pruneWhere(s, prefixEvent, func(key []byte, e EventRecord) ([]mutation, bool) {
			if e.Status != EventProcessed || !e.ProcessedAt.Before(cutoff) {
				return nil, false
			}
			return []mutation{{key: bytes.Clone(key), del: true}}, true
		})
		res.Events += n
		if err != nil {
			return res, fmt.Errorf("prune events: %w", err)
		}
	}
	if s.opts.HistoryRetention > 0 {
		cutoff := now.Add(-s.opts.HistoryRetention)
		n, err := s.pruneHistory(cutoff)
		res.History = n
		if err != nil {
			return res, fmt.Errorf("prune history: %w", err)
		}
		n, err = pruneWhere(s, prefixTask, func(key []byte, t TaskRecord) ([]mutation, bool) {
			if !t.Done || !t.Updated.Before(cutoff) {
				return nil, false
			}
			return []mutation{{key: bytes.Clone(key), del: true}}, true
		})
		res.Tasks = n
		if err != nil {
			return res, fmt.Errorf("prune tasks: %w", err)
		}
	}
	return res, nil
}

// pruneEventsOver applies PendingEventRetention and EventLimit. The caller
// holds closeMu shared, not writeMu.
func (s *Store) pruneEventsOver(now time.Time, res *PruneResult) error {
	if s.opts.PendingEventRetention > 0 {
		cutoff := now.Add(-s.opts.PendingEventRetention)
		processed, pending, err := s.pruneEvents(func(e EventRecord) (del, stop bool) {
			old := e.Received.Before(cutoff)
			return old, !old
		})
		res.Events += processed
		res.PendingEvents += pending
		if err != nil {
			return err
		}
	}
	if s.opts.EventLimit <= 0 {
		return nil
	}
	n, err := s.countEvents()
	if err != nil || n <= s.opts.EventLimit {
		return err
	}
	excess := n - s.opts.EventLimit
	processed, _, err := s.pruneEvents(func(e EventRecord) (del, stop bool) {
		if excess == 0 {
			return false, true
		}
		if e.Status != EventProcessed {
			return false, false
		}
		excess--
		return true, false
	})
	res.Events += processed
	if err != nil || excess == 0 {
		return err
	}
	processed, pending, err := s.pruneEvents(func(EventRecord) (del, stop bool) {
		if excess == 0 {
			return false, true
		}
		excess--
		return true, false
	})
	res.Events += processed
	res.PendingEvents += pending
	return err
}

// countEvents counts the event keys, without reading their records.
func (s *Store) countEvents() (int, error) {
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		return iterate(txn, iteration{prefix: []byte(prefixEvent)}, func(*badger.Item) (bool, error) {
			n++
			return !s.stopping(), nil
		})
	})
	if err == nil && s.stopping() {
		err = ErrClosed
	}
	return n, err
}

// pruneEvents walks the events from the oldest, a chunk per read
// transaction, deleting those doomed says to, until it says stop or the
// events end; each chunk's deletions are committed before the next is
// read. A deleted pending event leaves the pending count, and the pending
// mark moves past the oldest events deleted, since no one can acknowledge
// them any more. Each chunk is read and committed under writeMu, which
// the caller does not hold.
func (s *Store) pruneEvents(doomed func(EventRecord) (del, stop bool)) (processed, pending int, err error) {
	start := []byte(prefixEvent)
	leading, broken := uint64(0), false // the last of the unbroken run of deletions from the oldest event
	for start != nil {
		if s.stopping() {
			return processed, pending, ErrClosed
		}
		var p, n int
		var err error
		p, n, start, err = s.pruneEventChunk(start, doomed, &leading, &broken)
		processed += p
		pending += n
		if err != nil {
			return processed, pending, err
		}
	}
	return processed, pending, nil
}

// pruneEventChunk is one chunk of pruneEvents, from start; it returns the
// next chunk's start, nil after the last.
func (s *Store) pruneEventChunk(start []byte, doomed func(EventRecord) (del, stop bool), leading *uint64, broken *bool) (processed, pending int, next []byte, err error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var units []unit
	err = s.db.View(func(txn *badger.Txn) error {
		visited := 0
		return scan(txn, iteration{prefix: []byte(prefixEvent), start: start}, func(key []byte, e EventRecord) (bool, error) {
			del, stop := doomed(e)
			if stop {
				return false, nil
			}
			if !del {
				*broken = true
			} else {
				u := unit{muts: []mutation{{key: bytes.Clone(key), del: true}}}
				if e.Status == EventPending {
					u.pending = -1
				}
				units = append(units, u)
				if !*broken {
					*leading = e.Seq
				}
			}
			if visited++; visited == s.pruneChunk {
				next = append(bytes.Clone(key), 0) // the key's successor
				return false, nil
			}
			return true, nil
		})
	})
	if err != nil {
		return 0, 0, nil, err
	}
	if len(units) > 0 {
		from := s.pendingFrom
		if *leading > 0 {
			from = max(from, *leading+1)
		}
		var marks []mutation
		if from != s.pendingFrom {
			marks = []mutation{{key: []byte(keyPendingFrom), value: encodeMark(from)}}
		}
		if err := s.commit(units, marks); err != nil {
			return 0, 0, nil, err
		}
		s.pendingFrom = from
		s.pendingFromPub.Store(from)
		for _, u := range units {
			if u.pending != 0 {
				pending++
			} else {
				processed++
			}
		}
	}
	return processed, pending, next, nil
}

// pruneWhere deletes, chunk by chunk, the records under prefix for which
// doomed returns deletions, and returns how many it deleted. The caller
// holds writeMu.
func pruneWhere[T any, P record[T]](s *Store, prefix string, doomed func(key []byte, r T) ([]mutation, bool)) (int, error) {
	deleted := 0
	start := []byte(prefix)
	for start != nil {
		if s.stopping() {
			return deleted, ErrClosed
		}
		var units []unit
		var next []byte
		err := s.db.View(func(txn *badger.Txn) error {
			visited := 0
			return scan[T, P](txn, iteration{prefix: []byte(prefix), start: start}, func(key []byte, r T) (bool, error) {
				if muts, ok := doomed(key, r); ok {
					units = append(units, unit{muts: muts})
				}
				if visited++; visited == s.pruneChunk {
					next = append(bytes.Clone(key), 0) // the key's successor
					return false, nil
				}
				return true, nil
			})
		})
		if err != nil {
			return deleted, err
		}
		if len(units) > 0 {
			if err := s.commit(units, nil); err != nil {
				return deleted, err
			}
			deleted += len(units)
		}
		start = next
	}
	return deleted, nil
}

// pruneHistory deletes, chunk by chunk, the history records older than
// cutoff with their index keys, and returns how many it deleted. A block
// whose records are all older goes whole; one that holds newer records too
// is written again, under its key, with those only. The caller holds
// writeMu.
func (s *Store) pruneHistory(cutoff time.Time) (int, error) {
	deleted := 0
	start := []byte(prefixHistory)
	for start != nil {
		if s.stopping() {
			return deleted, ErrClosed
		}
		var units []unit
		var next []byte
		n := 0
		err := s.db.View(func(txn *badger.Txn) error {
			visited := 0
			return iterate(txn, iteration{prefix: []byte(prefixHistory), start: start, values: true}, func(item *badger.Item) (bool, error) {
				key := item.KeyCopy(nil)
				var recs []HistoryRecord
				err := item.Value(func(v []byte) error {
					var err error
					recs, err = decodeHistory(key, v)
					return err
				})
				if err != nil {
					return false, err
				}
				var muts []mutation
				kept := recs[:0]
				for _, h := range recs {
					if !h.Time.Before(cutoff) {
						kept = append(kept, h)
						continue
					}
					if indexedKind(h.Kind) {
						muts = append(muts, mutation{key: seqKey(kindPrefix(h.Kind), h.Seq), del: true})
					}
				}
				switch {
				case len(kept) == len(recs):
				case len(kept) == 0:
					units = append(units, unit{muts: append(muts, mutation{key: key, del: true})})
				default:
					value, err := encodeBlock(kept)
					if err != nil {
						return false, err
					}
					units = append(units, unit{muts: append(muts, mutation{key: key, value: value})})
				}
				n += len(recs) - len(kept)
				if visited += len(recs); visited >= s.pruneChunk {
					next = append(key, 0) // the key's successor
					return false, nil
				}
				return true, nil
			})
		})
		if err != nil {
			return deleted, err
		}
		if len(units) > 0 {
			if err := s.commit(units, nil); err != nil {
				return deleted, err
			}
			deleted += n
		}
		start = next
	}
	return deleted, nil
}

// RunValueLogGC rewrites value-log files until badger finds none worth
// rewriting (at least half garbage). Finding none is not an error. Calls
// serialise; it stops early, returning ErrClosed, when Close begins.
func (s *Store) RunValueLogGC() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.closeMu.RUnlock()
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if s.disk.readOnly.Load() {
		return fmt.Errorf("journal %s: value log gc: %w", s.dir, ErrDiskFull)
	}
	for !s.stopping() {
		err := s.db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("journal %s: value log gc: %w", s.dir, err)
		}
	}
	return ErrClosed
}
