package mcpvisor

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemberHistory is one cluster member's history records (ClusterHistory).
type MemberHistory struct {
	// Member is the member's address; "" for a host not in a cluster.
	Member  string          `json:"member"`
	Records []HistoryRecord `json:"history"`
	// Error says why the member did not answer; its records are then
	// missing, not empty.
	Error string `json:"error,omitempty"`
}

// ClusterHistory is the history f selects on every member of the cluster:
// each journals the calls that arrive at it and the lifecycle of the
// servers it runs, so a question about the whole cluster ("every call of
// tool X this morning") asks them all, at once. This member's records come
// first, then the others' by address; a member that does not answer within
// 10 s is listed with its error. Outside a cluster it is this host's
// history alone.
func (h *Host) ClusterHistory(ctx context.Context, f HistoryFilter) ([]MemberHistory, error) {
	params, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	local := func() ([]HistoryRecord, error) { return h.journal.History(f) }
	return fanOut(ctx, h, opHistory, params, local, func(m string, r []HistoryRecord, e string) MemberHistory {
		return MemberHistory{Member: m, Records: r, Error: e}
	})
}

// fanOut asks this member (local) and every other (op with params, whose
// answer decodes as T) at once, within 10 s, and lists the answers as R:
// this member's first, then the others' by address, each with its error.
func fanOut[T, R any](ctx context.Context, h *Host, op string, params json.RawMessage, local func() (T, error), wrap func(member string, v T, err string) R) ([]R, error) {
	mine, err := local()
	if err != nil {
		return nil, err
	}
	if h.cluster == nil {
		return []R{wrap("", mine, "")}, nil
	}
	self := h.cluster.n().Self()
	type answer struct {
		member string
		r      R
	}
	var mu sync.Mutex
	var others []answer
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range h.cluster.n().Members() {
		if m == self {
			continue
		}
		wg.Go(func() {
			var v T
			raw, err := h.cluster.forward(ctx, m, forwarded{Op: op, Params: params}, nil)
			if err == nil {
				err = json.Unmarshal(raw, &v)
			}
			e := ""
			if err != nil {
				e = err.Error()
			}
			mu.Lock()
			others = append(others, answer{m, wrap(m, v, e)})
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.SortFunc(others, func(a, b answer) int { return cmp.Compare(a.member, b.member) })
	out := []R{wrap(self, mine, "")}
	for _, a := range others {
		out = append(out, a.r)
	}
	return out, nil
}

// MemberAccess is which scopes one member's sessions held (ClusterWhoHadAccess).
type MemberAccess struct {
	Member string  `json:"member"`
	Scopes []Scope `json:"scopes"`
	Error  string  `json:"error,omitempty"`
}

// ClusterWhoHadAccess is Journal.WhoHadAccess asked of every member: the
// sessions of each member (grants are each member's own) that held tool's
// group at the instant at. Ordered and bounded as ClusterHistory.
func (h *Host) ClusterWhoHadAccess(ctx context.Context, tool string, at time.Time) ([]MemberAccess, error) {
	local := func() ([]Scope, error) { return h.journal.WhoHadAccess(tool, at) }
	params, err := json.Marshal(accessQuery{Tool: tool, At: at})
	if err != nil {
		return nil, err
	}
	return fanOut(ctx, h, opAccess, params, local, func(m string, s []Scope, e string) MemberAccess {
		return MemberAccess{Member: m, Scopes: s, Error: e}
	})
}

// MemberEvents is one member's journaled events (ClusterEvents).
type MemberEvents struct {
	Member string         `json:"member"`
	Events []JournalEvent `json:"events"`
	Error  string         `json:"error,omitempty"`
}

// ClusterEvents is Journal.Events asked of every member: a server's
// events are journaled by the member that runs it (by each, in turn, if
// it moved), so the cluster's pending events are the union of these.
// Ordered and bounded as ClusterHistory. An event is acknowledged on the
// member that holds it: ClusterAck.
func (h *Host) ClusterEvents(ctx context.Context, f EventFilter) ([]MemberEvents, error) {
	params, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	local := func() ([]JournalEvent, error) { return h.journal.Events(f) }
	return fanOut(ctx, h, opEvents, params, local, func(m string, e []JournalEvent, err string) MemberEvents {
		return MemberEvents{Member: m, Events: e, Error: err}
	})
}

// ClusterAck acknowledges events of the member that journaled them ("" or
// this member's address: this host's, as Journal.Ack). The ids are that
// member's; an id it never had is ErrUnknownEvent, as on the member
// itself, so an acknowledgement lands once, where the event is.
func (h *Host) ClusterAck(ctx context.Context, member string, ids ...uint64) error {
	if h.cluster == nil || member == "" || member == h.cluster.n().Self() {
		return h.journal.Ack(ctx, ids...)
	}
	params, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	_, err = h.cluster.forward(ctx, member, forwarded{Op: opAck, Params: params}, nil)
	return err
}

type accessQuery struct {
	Tool string    `json:"tool"`
	At   time.Time `json:"at"`
}

// Forwarded requests for a member's journal.
const (
	opHistory = "history"
	opAccess  = "access"
	opEvents  = "events"
	opAck     = "ack"
	// opRestart is Host.Restart, on the server's member.
	opRestart = "restart"
)

// serveJournal answers another member's ClusterHistory or
// ClusterWhoHadAccess.
func (hc *hostCluster) serveJournal(op string, params json.RawMessage) ([]byte, error) {
	switch op {
	case opHistory:
		var f HistoryFilter
		if err := json.Unmarshal(params, &f); err != nil {
			return nil, err
		}
		recs, err := hc.h.journal.History(f)
		if err != nil {
			return nil, err
		}
		return json.Marshal(recs)
	case opEvents:
		var f EventFilter
		if err := json.Unmarshal(params, &f); err != nil {
			return nil, err
		}
		evs, err := hc.h.journal.Events(f)
		if err != nil {
			return nil, err
		}
		return json.Marshal(evs)
	case opAck:
		var ids []uint64
		if err := json.Unmarshal(params, &ids); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(hc.h.bg, 10*time.Second)
		defer cancel()
		if err := hc.h.journal.Ack(ctx, ids...); err != nil {
			return nil, remoteErr{kind: errorKind(err), err: err}
		}
		return []byte("{}"), nil
	case opAccess:
		var q accessQuery
		if err := json.Unmarshal(params, &q); err != nil {
			return nil, err
		}
		scopes, err := hc.h.journal.WhoHadAccess(q.Tool, q.At)
		if err != nil {
			return nil, err
		}
		return json.Marshal(scopes)
	}
	return nil, fmt.Errorf("cluster: unknown request %q", op)
}
