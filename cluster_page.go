package mcpvisor

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/member"
)

// ClusterCursor is where a page of a cluster-wide listing
// (ClusterHistoryPage, ClusterEventsPage) goes on: the id of the last
// record listed of each member, by address ("" outside a cluster). A
// member it does not name is read from the filter's After.
type ClusterCursor map[string]uint64

// ClusterHistoryPage is one page of ClusterHistory: each member is asked
// for f.Limit records (DefaultPageLimit when 0, at most MaxPageLimit)
// after its place in after, and of all their answers the oldest f.Limit
// by time are kept, each member's in its own order (with f.Newest: the
// newest f.Limit). Next is where the next page begins, nil when no member
// had more when asked (always nil with f.Newest). A member that does not
// answer is listed with its error and keeps its place in Next.
func (h *Host) ClusterHistoryPage(ctx context.Context, f HistoryFilter, after ClusterCursor) ([]MemberHistory, ClusterCursor, error) {
	f.Limit = pageSize(f.Limit)
	pages, next, err := clusterPage(ctx, h, member.OpHistory, f.Limit, f.Newest, f.After, after,
		func(a uint64) any { g := f; g.After = a; return g },
		func(a uint64) ([]HistoryRecord, error) { g := f; g.After = a; return h.journal.History(g) },
		func(r HistoryRecord) (uint64, time.Time) { return r.Seq, r.Time })
	out := make([]MemberHistory, len(pages))
	for i, p := range pages {
		out[i] = MemberHistory{Member: p.member, Records: p.items, Error: p.err}
	}
	return out, next, err
}

// ClusterEventsPage is ClusterHistoryPage for ClusterEvents.
func (h *Host) ClusterEventsPage(ctx context.Context, f EventFilter, after ClusterCursor) ([]MemberEvents, ClusterCursor, error) {
	f.Limit = pageSize(f.Limit)
	pages, next, err := clusterPage(ctx, h, member.OpEvents, f.Limit, f.Newest, f.After, after,
		func(a uint64) any { g := f; g.After = a; return g },
		func(a uint64) ([]JournalEvent, error) { g := f; g.After = a; return h.journal.Events(g) },
		func(e JournalEvent) (uint64, time.Time) { return e.Seq, e.Received })
	out := make([]MemberEvents, len(pages))
	for i, p := range pages {
		out[i] = MemberEvents{Member: p.member, Events: p.items, Error: p.err}
	}
	return out, next, err
}

func pageSize(limit int) int {
	if limit <= 0 {
		return DefaultPageLimit
	}
	return min(limit, MaxPageLimit)
}

// memberPage is one member's part of a cluster page.
type memberPage[T any] struct {
	member string
	items  []T
	err    string
}

// clusterPage asks this member (local) and every other (op with the
// params of its place) for limit records after its place, at once within
// 10 s, and keeps limit of them in all: a merge by time that takes from
// each member's answer a run in its own order (oldest first: a prefix;
// newest: a suffix), so a member's place in the cursor never passes a
// record it did not list. This member comes first, the others by address.
func clusterPage[T any](ctx context.Context, h *Host, op string, limit int, newest bool, from uint64, after ClusterCursor,
	params func(after uint64) any, local func(after uint64) ([]T, error), key func(T) (uint64, time.Time)) ([]memberPage[T], ClusterCursor, error) {
	place := func(m string) uint64 {
		if a, ok := after[m]; ok {
			return a
		}
		return from
	}
	self := ""
	var others []string
	if h.cluster != nil {
		self = h.cluster.Self()
		for _, m := range h.cluster.Status().Members {
			if m.Address != self {
				others = append(others, m.Address)
			}
		}
		slices.Sort(others)
	}
	mine, err := local(place(self))
	if err != nil {
		return nil, nil, err
	}
	pages := make([]memberPage[T], 1+len(others))
	pages[0] = memberPage[T]{member: self, items: mine}
	if len(others) > 0 {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for i, m := range others {
			wg.Go(func() {
				p := memberPage[T]{member: m}
				raw, err := h.cluster.Ask(ctx, m, op, params(place(m)))
				if err == nil {
					err = json.Unmarshal(raw, &p.items)
				}
				if err != nil {
					p.items, p.err = nil, err.Error()
				}
				pages[1+i] = p
			})
		}
		wg.Wait()
	}

	// The merge: heads[i] is how many of member i's answer are taken,
	// counted from its oldest (or, newest, from its newest).
	heads := make([]int, len(pages))
	for taken := 0; taken < limit; taken++ {
		best := -1
		var bestAt time.Time
		for i, p := range pages {
			if heads[i] == len(p.items) {
				continue
			}
			j := heads[i]
			if newest {
				j = len(p.items) - 1 - heads[i]
			}
			_, at := key(p.items[j])
			if best < 0 || !newest && at.Before(bestAt) || newest && at.After(bestAt) {
				best, bestAt = i, at
			}
		}
		if best < 0 {
			break
		}
		heads[best]++
	}
	more := false
	next := ClusterCursor{}
	for i := range pages {
		p := &pages[i]
		if p.err != "" {
			if a, ok := after[p.member]; ok {
				next[p.member] = a
			}
			continue
		}
		answered := len(p.items)
		if newest {
			p.items = p.items[len(p.items)-heads[i]:]
		} else {
			p.items = p.items[:heads[i]]
		}
		if p.items == nil {
			p.items = []T{}
		}
		if !newest {
			more = more || answered == limit || heads[i] < answered
		}
		next[p.member] = place(p.member)
		if n := len(p.items); n > 0 {
			next[p.member], _ = key(p.items[n-1])
		}
	}
	if !more {
		next = nil
	}
	return pages, next, nil
}
