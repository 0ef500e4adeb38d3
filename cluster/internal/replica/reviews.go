package replica

import (
	"context"
	"encoding/json"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/member"
)

// Tool reviews across a cluster: a server's tool definitions are pinned
// and reviewed on the member that runs it (its pins are that member's
// journal's). Every member lists the reviews of every server (its own, and
// the others' as their members publish them), and a decision made on any
// member is made on the member that runs the server.

// Reviews are this member's reviews (local) and the others', for the
// servers placed on them.
func (r *Replica) Reviews(local []actors.ToolReview) []actors.ToolReview {
	out := local
	r.mu.Lock()
	defer r.mu.Unlock()
	for addr, v := range r.views {
		for _, rs := range v.Servers {
			name := rs.Status.Name
			if r.Placement(name, r.rt.NodeLabel(name)) == addr {
				out = append(out, r.catalogs[addr][name].Reviews...)
			}
		}
	}
	return out
}

// ReviewsChanged is closed at the next change of this member's reviews or
// another's.
func (r *Replica) ReviewsChanged() <-chan struct{} { return r.reviewsChanged.C() }

// watchReviews fires r.reviewsChanged at every change of this member's
// own reviews, until the replica leaves.
func (r *Replica) watchReviews() {
	for {
		select {
		case <-r.rt.ToolReviewsChanged():
			r.reviewsChanged.Notify()
			r.wakePublish()
		case <-r.bg.Done():
			return
		}
	}
}

// Decide makes a tool decision on the member owner, and merges the pin it
// made there.
func (r *Replica) Decide(ctx context.Context, owner string, d member.Decision) error {
	params, err := json.Marshal(d)
	if err != nil {
		return err
	}
	raw, err := r.forward(ctx, owner, forwarded{Op: opDecide, Server: d.Server, Params: params}, nil)
	if err != nil {
		return err
	}
	var pins map[string]pinEntry
	if json.Unmarshal(raw, &pins) == nil {
		r.mergePins(pins)
	}
	return nil
}

// serveDecision makes another member's tool decision here.
func (r *Replica) serveDecision(ctx context.Context, params json.RawMessage) ([]byte, error) {
	var d member.Decision
	if err := json.Unmarshal(params, &d); err != nil {
		return nil, err
	}
	if err := r.notHere(d.Server); err != nil {
		return nil, err
	}
	if err := r.rt.DecideTool(ctx, d.Server, d.Tool, d.Hash, d.Allow, d.By); err != nil {
		return nil, remoteErr{kind: errorKind(err), err: err}
	}
	// The pin it made goes back with the answer: the member that asked
	// has it when the decision returns, not a gossip round later.
	r.mu.Lock()
	e, ok := r.pins[pinKey(d.Server, d.Tool)]
	r.mu.Unlock()
	if !ok {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]pinEntry{pinKey(d.Server, d.Tool): e})
}
