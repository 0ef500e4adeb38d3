package persistence

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// defaultPruneChunk is how many records Prune examines per read
// transaction; the deletions of each chunk are committed before the next is
// read, so memory stays flat however many records are due.
const defaultPruneChunk = 10_000

// PruneResult counts the records Prune deleted.
type PruneResult struct {
	Events, History, Tasks, GatewayTasks int
}

// Prune deletes processed events whose ProcessedAt, history records whose
// Time, and Done tasks whose Updated are older than their retention
// (Options; tasks follow HistoryRetention) before Now, and gateway tasks
// whose Expires has passed. Pending events and
// tasks not Done are never pruned. Prune holds the writer lock while it
// runs, so Apply waits; it stops early, returning ErrClosed, when Close
// begins.
func (s *Store) Prune() (PruneResult, error) {
	var res PruneResult
	if err := s.acquire(); err != nil {
		return res, err
	}
	defer s.closeMu.RUnlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.writable(); err != nil {
		return res, err
	}

	now := s.opts.Now()
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
		res.Events = n
		if err != nil {
			return res, fmt.Errorf("prune events: %w", err)
		}
	}
	if s.opts.HistoryRetention > 0 {
		cutoff := now.Add(-s.opts.HistoryRetention)
		n, err := pruneWhere(s, prefixHistory, func(key []byte, h HistoryRecord) ([]mutation, bool) {
			if !h.Time.Before(cutoff) {
				return nil, false
			}
			muts := []mutation{{key: bytes.Clone(key), del: true}}
			if indexedKind(h.Kind) {
				muts = append(muts, mutation{key: seqKey(kindPrefix(h.Kind), h.Seq), del: true})
			}
			return muts, true
		})
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
