package replica

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// Each member journals the calls that arrive at it, the lifecycle and
// events of the servers it runs and its sessions' grants; a question
// about the whole cluster (mcpvisor.Host.ClusterHistory, ClusterEvents,
// ClusterWhoHadAccess) asks every member at once, and an event is
// acknowledged on the member that holds it (ClusterAck).

// Forwarded requests besides a server's calls.
const (
	// opRestart is mcpvisor.Host.Restart, on the server's member.
	opRestart = "restart"
	// opDecide is ApproveTool or RejectTool, on the server's member.
	opDecide = "decide"
)

// Gather asks every other member op with params at once, within 10 s,
// and lists their answers by address, each with its error.
func (r *Replica) Gather(ctx context.Context, op string, params any) ([]member.Answer, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	n := r.n()
	self := n.Self()
	var mu sync.Mutex
	var out []member.Answer
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range n.Members() {
		if m == self {
			continue
		}
		wg.Go(func() {
			a := member.Answer{Member: m}
			raw, err := r.forward(ctx, m, forwarded{Op: op, Params: b}, nil)
			if err != nil {
				a.Err = err.Error()
			}
			a.Result = raw
			mu.Lock()
			out = append(out, a)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b member.Answer) int { return cmp.Compare(a.Member, b.Member) })
	return out, nil
}

// Ask asks the member at addr op with params.
func (r *Replica) Ask(ctx context.Context, addr, op string, params any) (json.RawMessage, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	return r.forward(ctx, addr, forwarded{Op: op, Params: b}, nil)
}

// serveJournal answers another member's question of this member's
// journal.
func (r *Replica) serveJournal(op string, params json.RawMessage) ([]byte, error) {
	switch op {
	case member.OpHistory:
		var f persistence.HistoryFilter
		if err := json.Unmarshal(params, &f); err != nil {
			return nil, err
		}
		recs, err := r.host.History(f)
		if err != nil {
			return nil, err
		}
		return json.Marshal(recs)
	case member.OpEvents:
		var f persistence.EventFilter
		if err := json.Unmarshal(params, &f); err != nil {
			return nil, err
		}
		evs, err := r.host.Events(f)
		if err != nil {
			return nil, err
		}
		return json.Marshal(evs)
	case member.OpAck:
		var ids []uint64
		if err := json.Unmarshal(params, &ids); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(r.bg, 10*time.Second)
		defer cancel()
		if err := r.host.Ack(ctx, ids...); err != nil {
			return nil, remoteErr{kind: errorKind(err), err: err}
		}
		return []byte("{}"), nil
	case member.OpAccess:
		var q member.AccessQuery
		if err := json.Unmarshal(params, &q); err != nil {
			return nil, err
		}
		scopes, err := r.host.WhoHadAccess(q.Tool, q.At)
		if err != nil {
			return nil, err
		}
		return json.Marshal(scopes)
	}
	return nil, fmt.Errorf("cluster: unknown request %q", op)
}
