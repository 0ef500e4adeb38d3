package persistence

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// iteration says which keys iterate visits.
type iteration struct {
	prefix  []byte
	start   []byte // first key (last when reverse); nil: the first (last) under prefix
	reverse bool
	values  bool // prefetch values: set when the caller reads them all
}

// iterate calls fn for each key under prefix until fn returns false or an
// error. Reversed iteration assumes keys under prefix end in a seq.
func iterate(txn *badger.Txn, it iteration, fn func(*badger.Item) (more bool, err error)) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = it.prefix
	opts.Reverse = it.reverse
	opts.PrefetchValues = it.values
	iter := txn.NewIterator(opts)
	defer iter.Close()
	start := it.start
	switch {
	case start != nil:
	case it.reverse:
		start = seqKey(string(it.prefix), math.MaxUint64)
	default:
		start = it.prefix
	}
	for iter.Seek(start); iter.ValidForPrefix(it.prefix); iter.Next() {
		more, err := fn(iter.Item())
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// scan decodes each record under the iteration's prefix and hands it to fn
// with its key, which is valid only during the call.
func scan[T any, P record[T]](txn *badger.Txn, it iteration, fn func(key []byte, r T) (bool, error)) error {
	it.values = true
	return iterate(txn, it, func(item *badger.Item) (bool, error) {
		r, err := itemRecord[T, P](item)
		if err != nil {
			return false, err
		}
		return fn(item.Key(), r)
	})
}

func itemRecord[T any, P record[T]](item *badger.Item) (T, error) {
	var r T
	err := item.Value(func(v []byte) error {
		var err error
		r, err = decodeRecord[T, P](item.Key(), v)
		return err
	})
	return r, err
}

// get reads the record under key; found is false when there is none.
func get[T any, P record[T]](txn *badger.Txn, key []byte) (r T, found bool, err error) {
	item, err := txn.Get(key)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return r, false, nil
	case err != nil:
		return r, false, err
	}
	r, err = itemRecord[T, P](item)
	return r, err == nil, err
}

// view runs fn in a read transaction unless the store is closed.
func (s *Store) view(fn func(txn *badger.Txn) error) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.closeMu.RUnlock()
	return s.db.View(fn)
}

// all collects every record under prefix, in key order.
func all[T any, P record[T]](s *Store, prefix string) ([]T, error) {
	var out []T
	err := s.view(func(txn *badger.Txn) error {
		return scan[T, P](txn, iteration{prefix: []byte(prefix)}, func(_ []byte, r T) (bool, error) {
			out = append(out, r)
			return true, nil
		})
	})
	return out, err
}

// Servers returns the server registry sorted by name.
func (s *Store) Servers() ([]ServerRecord, error) {
	return all[ServerRecord](s, prefixServer)
}

// Server returns the registry row of name; found is false when there is none.
func (s *Store) Server(name string) (r ServerRecord, found bool, err error) {
	err = s.view(func(txn *badger.Txn) error {
		r, found, err = get[ServerRecord](txn, nameKey(prefixServer, name))
		return err
	})
	return r, found, err
}

// Catalogs returns every stored catalog by server name.
func (s *Store) Catalogs() (map[string]CatalogRecord, error) {
	list, err := all[CatalogRecord](s, prefixCatalog)
	if err != nil {
		return nil, err
	}
	out := make(map[string]CatalogRecord, len(list))
	for _, c := range list {
		out[c.Server] = c
	}
	return out, nil
}

// Grants returns every grant sorted by session, stack, group.
func (s *Store) Grants() ([]GrantRecord, error) {
	return all[GrantRecord](s, prefixGrant)
}

// EventFilter selects events. The zero value selects all.
type EventFilter struct {
	Status         string // "", EventPending or EventProcessed
	Server, Method string // "": any
	After          uint64 // only seqs above After
	Limit          int    // <= 0: no limit
	// Newest, with Limit, selects the newest Limit events instead of the
	// oldest (still returned oldest first).
	Newest bool
}

// Events returns the events f selects, oldest first. Pending events are
// read from the pending mark on: the processed events before the oldest
// pending one are not visited.
func (s *Store) Events(f EventFilter) ([]EventRecord, error) {
	if f.Status != "" && f.Status != EventPending && f.Status != EventProcessed {
		return nil, fmt.Errorf("events: status %q: %w", f.Status, ErrInvalidFilter)
	}
	if f.After == math.MaxUint64 {
		return nil, nil
	}
	var out []EventRecord
	read := 0
	defer func() { s.recordsRead.Add(int64(read)) }()
	keep := func(e EventRecord) bool {
		read++
		if (f.Status == "" || e.Status == f.Status) && (f.Server == "" || e.Server == f.Server) &&
			(f.Method == "" || e.Method == f.Method) {
			out = append(out, e)
		}
		return f.Limit <= 0 || len(out) < f.Limit
	}
	after := f.After
	if f.Status == EventPending {
		after = max(after, s.pendingMark()-1)
	}
	err := s.view(func(txn *badger.Txn) error {
		if f.Newest {
			it := iteration{prefix: []byte(prefixEvent), reverse: true}
			return scan(txn, it, func(key []byte, e EventRecord) (bool, error) {
				seq, err := keySeq(key)
				if err != nil || seq <= after {
					return false, err
				}
				return keep(e), nil
			})
		}
		it := iteration{prefix: []byte(prefixEvent), start: seqKey(prefixEvent, after+1)}
		return scan(txn, it, func(_ []byte, e EventRecord) (bool, error) { return keep(e), nil })
	})
	if f.Newest {
		slices.Reverse(out)
	}
	return out, err
}

// indexed visits, in seq order from after (reversed: down to after), the
// records under recordPrefix whose seqs are keys under indexPrefix, until
// fn returns false. Indexed seqs tend to run in sequence, so the records
// are read with a second iterator that only seeks when the next record is
// not the one wanted, rather than a point lookup per key.
func indexed[T any, P record[T]](txn *badger.Txn, indexPrefix, recordPrefix string, after uint64, reverse bool, fn func(T) bool) error {
	it := iteration{prefix: []byte(indexPrefix), reverse: reverse}
	if !reverse {
		it.start = seqKey(indexPrefix, after+1)
	}
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(recordPrefix)
	opts.Reverse = reverse
	opts.PrefetchValues = false
	records := txn.NewIterator(opts)
	defer records.Close()
	return iterate(txn, it, func(item *badger.Item) (bool, error) {
		seq, err := keySeq(item.Key())
		if err != nil || seq <= after {
			return false, err
		}
		want := seqKey(recordPrefix, seq)
		if !records.Valid() || !bytes.Equal(records.Item().Key(), want) {
			records.Seek(want)
		}
		if !records.ValidForPrefix(opts.Prefix) || !bytes.Equal(records.Item().Key(), want) {
			return false, fmt.Errorf("index key %q has no record: %w", item.Key(), ErrCorrupt)
		}
		r, err := itemRecord[T, P](records.Item())
		if err != nil {
			return false, err
		}
		records.Next()
		return fn(r), nil
	})
}

// Event returns the event with seq; found is false when there is none.
func (s *Store) Event(seq uint64) (e EventRecord, found bool, err error) {
	err = s.view(func(txn *badger.Txn) error {
		e, found, err = get[EventRecord](txn, seqKey(prefixEvent, seq))
		return err
	})
	return e, found, err
}

// HistoryFilter selects history records. The zero value selects all.
type HistoryFilter struct {
	Kind                  HistoryKind // "": all
	Server, Tool, Session string      // "": any; Tool matches Tool or CalledAs; Session matches Scope.Session
	After                 uint64      // only seqs above After
	Since, Until          time.Time   // Since <= Time < Until; zero: open
	Limit                 int         // <= 0: no limit
	Newest                bool        // Limit counts from the newest end; results are still oldest first
}

func (f HistoryFilter) match(h HistoryRecord) bool {
	return (f.Kind == "" || h.Kind == f.Kind) &&
		(f.Server == "" || h.Server == f.Server) &&
		(f.Tool == "" || h.Tool == f.Tool || h.CalledAs == f.Tool) &&
		(f.Session == "" || h.Scope.Session == f.Session) &&
		(f.Since.IsZero() || !h.Time.Before(f.Since)) &&
		(f.Until.IsZero() || h.Time.Before(f.Until))
}

// History returns the records f selects, oldest first. A Kind filter walks
// that kind's index instead of the whole history.
func (s *Store) History(f HistoryFilter) ([]HistoryRecord, error) {
	if strings.IndexByte(string(f.Kind), 0) >= 0 {
		return nil, fmt.Errorf("history: kind %q: %w", f.Kind, ErrInvalidFilter)
	}
	if f.After == math.MaxUint64 {
		return nil, nil
	}
	var out []HistoryRecord
	read := 0
	defer func() { s.recordsRead.Add(int64(read)) }()
	keep := func(h HistoryRecord) bool {
		read++
		if f.Newest && h.Seq <= f.After {
			return false
		}
		if f.match(h) {
			out = append(out, h)
		}
		return f.Limit <= 0 || len(out) < f.Limit
	}
	err := s.scanHistory(f, keep)
	if f.Newest {
		slices.Reverse(out)
	}
	return out, err
}

// AccessAt replays the grant and revoke history up to and including at and
// returns the scopes that held group at that instant, sorted by session
// then stack. Records are replayed in time order (seq order among equal
// times); only the grant and revoke index keys are walked.
func (s *Store) AccessAt(group string, at time.Time) ([]Scope, error) {
	var events []HistoryRecord
	keep := func(h HistoryRecord) bool {
		if h.Group == group && !h.Time.After(at) {
			events = append(events, h)
		}
		return true
	}
	err := s.view(func(txn *badger.Txn) error {
		for _, kind := range []HistoryKind{HistoryGrant, HistoryRevoke} {
			if err := indexed(txn, kindPrefix(kind), prefixHistory, 0, false, keep); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(events, func(a, b HistoryRecord) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Seq, b.Seq))
	})
	held := make(map[Scope]bool)
	for _, h := range events {
		if h.Kind == HistoryGrant {
			held[h.Scope] = true
		} else {
			delete(held, h.Scope)
		}
	}
	scopes := make([]Scope, 0, len(held))
	for sc := range held {
		scopes = append(scopes, sc)
	}
	slices.SortFunc(scopes, func(a, b Scope) int {
		return cmp.Or(strings.Compare(a.Session, b.Session), strings.Compare(a.Stack, b.Stack))
	})
	return scopes, nil
}

// TaskFilter selects task records. The zero value selects all.
type TaskFilter struct {
	Server     string // "": any
	Unfinished bool   // only records not Done
	Limit      int    // <= 0: no limit
	// After, when not zero, selects the tasks that come after it in
	// Tasks' order: the TaskCursor of the last task of a page.
	After TaskCursor
}

// TaskCursor is a task's place in Tasks' order: when it was created, then
// its key (server, task id).
type TaskCursor struct {
	Created time.Time
	Server  string
	TaskID  string
}

// IsZero reports whether c is no place (the start).
func (c TaskCursor) IsZero() bool { return c.Created.IsZero() && c.Server == "" && c.TaskID == "" }

// CursorOf is the place of t.
func CursorOf(t TaskRecord) TaskCursor {
	return TaskCursor{Created: t.Created, Server: t.Server, TaskID: t.TaskID}
}

func compareTaskCursors(a, b TaskCursor) int {
	return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Server, b.Server), strings.Compare(a.TaskID, b.TaskID))
}

// Tasks returns the tasks f selects, oldest Created first, ties in key
// order (server, then task id). Every task of the server (of the journal,
// with Server "") is read, as they are not stored in Created order; with a
// Limit, no more than about twice Limit of them are held at once.
func (s *Store) Tasks(f TaskFilter) ([]TaskRecord, error) {
	if strings.IndexByte(f.Server, 0) >= 0 {
		return nil, fmt.Errorf("tasks: server %q: %w", f.Server, ErrInvalidFilter)
	}
	var out []TaskRecord
	order := func(a, b TaskRecord) int { return compareTaskCursors(CursorOf(a), CursorOf(b)) }
	// cut keeps the first Limit: the rest can never be in the page.
	cut := func() {
		slices.SortFunc(out, order)
		clear(out[f.Limit:])
		out = out[:f.Limit]
	}
	err := s.view(func(txn *badger.Txn) error {
		return scan(txn, iteration{prefix: taskPrefix(f.Server)}, func(_ []byte, t TaskRecord) (bool, error) {
			if f.Unfinished && t.Done {
				return true, nil
			}
			if !f.After.IsZero() && compareTaskCursors(CursorOf(t), f.After) <= 0 {
				return true, nil
			}
			out = append(out, t)
			if f.Limit > 0 && len(out) >= 2*f.Limit {
				cut()
			}
			return true, nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, order)
	if f.Limit > 0 && len(out) > f.Limit {
		out = slices.Clip(out[:f.Limit])
	}
	return out, nil
}

// Task returns the record of server's task taskID; found is false when
// there is none.
func (s *Store) Task(server, taskID string) (r TaskRecord, found bool, err error) {
	if strings.IndexByte(server, 0) >= 0 || strings.IndexByte(taskID, 0) >= 0 {
		return r, false, nil // never stored: PutTask rejects NUL
	}
	err = s.view(func(txn *badger.Txn) error {
		r, found, err = get[TaskRecord](txn, taskKey(server, taskID))
		return err
	})
	return r, found, err
}

// GatewayTask returns the gateway task id; found is false when there is
// none.
func (s *Store) GatewayTask(id string) (r GatewayTaskRecord, found bool, err error) {
	if id == "" || strings.IndexByte(id, 0) >= 0 {
		return r, false, nil // never stored: PutGatewayTask rejects both
	}
	err = s.view(func(txn *badger.Txn) error {
		r, found, err = get[GatewayTaskRecord](txn, gatewayTaskKey(id))
		return err
	})
	return r, found, err
}

// TaskByID returns the first task with taskID, servers in name order, for
// callers that know only the id; found is false when no server has it.
// Task ids are unique per server only. It reads every task key (not the
// records) up to the match.
func (s *Store) TaskByID(taskID string) (r TaskRecord, found bool, err error) {
	if taskID == "" || strings.IndexByte(taskID, 0) >= 0 {
		return r, false, nil // never stored: PutTask rejects both
	}
	err = s.view(func(txn *badger.Txn) error {
		return iterate(txn, iteration{prefix: []byte(prefixTask)}, func(item *badger.Item) (bool, error) {
			id, err := keyTaskID(item.Key())
			if err != nil {
				return false, err
			}
			if string(id) != taskID {
				return true, nil
			}
			r, err = itemRecord[TaskRecord](item)
			found = err == nil
			return false, err
		})
	})
	return r, found, err
}

// scanHistory hands keep the history records from f.After on (the newest
// first with f.Newest) until it returns false, through the kind's index
// when f.Kind has one.
func (s *Store) scanHistory(f HistoryFilter, keep func(HistoryRecord) bool) error {
	return s.view(func(txn *badger.Txn) error {
		if f.Kind != "" && indexedKind(f.Kind) {
			return indexed(txn, kindPrefix(f.Kind), prefixHistory, f.After, f.Newest, keep)
		}
		it := iteration{prefix: []byte(prefixHistory), reverse: f.Newest, values: true}
		if !f.Newest {
			it.start = seqKey(prefixHistory, f.After+1)
		}
		return iterate(txn, it, func(item *badger.Item) (bool, error) {
			var recs []HistoryRecord
			err := item.Value(func(v []byte) error {
				var err error
				recs, err = decodeHistory(item.Key(), v)
				return err
			})
			if err != nil {
				return false, err
			}
			if f.Newest {
				for i := len(recs) - 1; i >= 0; i-- {
					if !keep(recs[i]) {
						return false, nil
					}
				}
				return true, nil
			}
			for _, h := range recs {
				// The block the seek landed on may begin before After.
				if h.Seq > f.After && !keep(h) {
					return false, nil
				}
			}
			return true, nil
		})
	})
}
