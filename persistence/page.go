package persistence

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// Page bounds of EventsPage and HistoryPage.
const (
	// DefaultPageLimit is a page's size when the filter's Limit is 0.
	DefaultPageLimit = 100
	// MaxPageLimit is the largest page; a larger Limit is lowered to it.
	MaxPageLimit = 1000
	// PageScanBudget is how many records a page reads at most. A filter
	// that matches few records ends its page early, with a cursor, rather
	// than reading the whole journal in one request.
	PageScanBudget = 100 * MaxPageLimit
	// PageBytes is about how much a page holds at most: a page whose
	// records' payloads (an event's params, a call's arguments and result)
	// pass it ends there, with a cursor, so a page of big records stays
	// small. A single record bigger than that is still a page.
	PageBytes = 8 << 20
)

// EventPage is one page of events, oldest first, and where the next page
// begins.
type EventPage struct {
	Events []EventRecord
	// Next, when not 0, is the seq to pass as the filter's After to read
	// on. 0 means nothing was left when the page was read. With Newest it
	// is the newest event's seq when the page was read (0 for none): what
	// comes after the page begins there.
	Next uint64
}

// HistoryPage is EventPage for history records.
type HistoryPage struct {
	Records []HistoryRecord
	Next    uint64
}

// pageLimit is the page size a filter's limit asks for.
func pageLimit(limit int) int {
	switch {
	case limit <= 0:
		return DefaultPageLimit
	case limit > MaxPageLimit:
		return MaxPageLimit
	}
	return limit
}

// pager collects one page while an iteration visits records in seq order.
type pager[T any] struct {
	limit, budget int
	size          func(T) int // about how many bytes a record holds
	bytes         int
	out           []T
	visited       int
	last          uint64 // seq of the last record visited
	full          bool
	next          uint64
}

// visit takes the record with seq (kept when match) and reports whether the
// iteration should go on. Once the page is full it looks one record ahead,
// so a page that ends the journal says so (Next 0).
func (p *pager[T]) visit(seq uint64, r T, match bool) bool {
	if p.full {
		p.next = p.last
		return false
	}
	p.visited++
	p.last = seq
	if match {
		p.out = append(p.out, r)
		p.bytes += p.size(r)
	}
	if len(p.out) == p.limit || p.bytes >= PageBytes {
		p.full = true
		return true
	}
	if p.visited >= p.budget {
		p.next = seq
		return false
	}
	return true
}

// EventsPage returns one page of the events f selects, oldest first: at
// most Limit (DefaultPageLimit when 0, at most MaxPageLimit), reading at
// most PageScanBudget records, and the cursor to go on. Events are read
// with one iterator from After (Newest: back from the newest), so a page
// costs its own records, not the journal's. Safe concurrently with Apply.
func (s *Store) EventsPage(f EventFilter) (EventPage, error) {
	if f.Status != "" && f.Status != EventPending && f.Status != EventProcessed {
		return EventPage{}, fmt.Errorf("events: status %q: %w", f.Status, ErrInvalidFilter)
	}
	if f.After == math.MaxUint64 {
		return EventPage{}, nil
	}
	p := pager[EventRecord]{limit: pageLimit(f.Limit), budget: s.pageBudget, size: func(e EventRecord) int {
		return 64 + len(e.Server) + len(e.Method) + len(e.Params)
	}}
	match := func(e EventRecord) bool {
		return (f.Status == "" || e.Status == f.Status) && (f.Server == "" || e.Server == f.Server) &&
			(f.Method == "" || e.Method == f.Method)
	}
	after := f.After
	if f.Status == EventPending {
		after = max(after, s.pendingMark()-1)
	}
	newest := s.lastEvent.Load() // before the read: a later event is in the page or after this
	err := s.view(func(txn *badger.Txn) error {
		it := iteration{prefix: []byte(prefixEvent), start: seqKey(prefixEvent, after+1)}
		if f.Newest {
			it = iteration{prefix: []byte(prefixEvent), reverse: true}
		}
		return scan(txn, it, func(key []byte, e EventRecord) (bool, error) {
			if f.Newest && e.Seq <= after {
				return false, nil
			}
			return p.visit(e.Seq, e, match(e)), nil
		})
	})
	s.recordsRead.Add(int64(p.visited))
	page := EventPage{Events: p.out, Next: p.next}
	if f.Newest {
		slices.Reverse(page.Events)
		page.Next = newest
		if n := len(page.Events); n > 0 {
			page.Next = max(newest, page.Events[n-1].Seq)
		}
	}
	return page, err
}

// HistoryPage is EventsPage for history records; a Kind filter walks that
// kind's index.
func (s *Store) HistoryPage(f HistoryFilter) (HistoryPage, error) {
	if strings.IndexByte(string(f.Kind), 0) >= 0 {
		return HistoryPage{}, fmt.Errorf("history: kind %q: %w", f.Kind, ErrInvalidFilter)
	}
	if f.After == math.MaxUint64 {
		return HistoryPage{}, nil
	}
	p := pager[HistoryRecord]{limit: pageLimit(f.Limit), budget: s.pageBudget, size: func(h HistoryRecord) int {
		n := 128 + len(h.Arguments) + len(h.Result) + len(h.Definition) + len(h.Detail) + len(h.Error)
		for _, line := range h.Stderr {
			n += len(line)
		}
		return n
	}}
	keep := func(h HistoryRecord) bool {
		if f.Newest && h.Seq <= f.After {
			return false
		}
		return p.visit(h.Seq, h, f.match(h))
	}
	err := s.scanHistory(f, keep)
	s.recordsRead.Add(int64(p.visited))
	page := HistoryPage{Records: p.out, Next: p.next}
	if f.Newest {
		slices.Reverse(page.Records)
		page.Next = 0
	}
	return page, err
}
