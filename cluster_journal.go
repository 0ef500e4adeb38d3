package mcpvisor

import (
	"cmp"
	"context"
	"encoding/json"
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
	recs, err := h.journal.History(f)
	if err != nil {
		return nil, err
	}
	if h.cluster == nil {
		return []MemberHistory{{Records: recs}}, nil
	}
	self := h.cluster.n().Self()
	out := []MemberHistory{{Member: self, Records: recs}}
	params, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range h.cluster.n().Members() {
		if m == self {
			continue
		}
		wg.Go(func() {
			mh := MemberHistory{Member: m}
			raw, err := h.cluster.forward(ctx, m, forwarded{Op: opHistory, Params: params})
			if err == nil {
				err = json.Unmarshal(raw, &mh.Records)
			}
			if err != nil {
				mh.Error = err.Error()
			}
			mu.Lock()
			out = append(out, mh)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.SortFunc(out[1:], func(a, b MemberHistory) int { return cmp.Compare(a.Member, b.Member) })
	return out, nil
}

// opHistory is a forwarded request for the member's history.
const opHistory = "history"

// serveHistory answers another member's ClusterHistory.
func (hc *hostCluster) serveHistory(params json.RawMessage) ([]byte, error) {
	var f HistoryFilter
	if err := json.Unmarshal(params, &f); err != nil {
		return nil, err
	}
	recs, err := hc.h.journal.History(f)
	if err != nil {
		return nil, err
	}
	return json.Marshal(nonNilRecords(recs))
}

func nonNilRecords(r []HistoryRecord) []HistoryRecord {
	if r == nil {
		return []HistoryRecord{}
	}
	return r
}
