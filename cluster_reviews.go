package mcpvisor

import (
	"context"
	"encoding/json"
)

// Tool reviews across a cluster: a server's tool definitions are pinned
// and reviewed on the member that runs it (its pins are that member's
// journal's). Every member lists the reviews of every server (its own, and
// the others' as their members publish them), and a decision made on any
// member is made on the member that runs the server.

// opDecide is ApproveTool or RejectTool, on the server's member.
const opDecide = "decide"

type decision struct {
	Server, Tool, Hash, By string
	Allow                  bool
}

// clusterReviews is this member's reviews and the others', for the
// servers placed on them.
func (hc *hostCluster) clusterReviews(local []ToolReview) []ToolReview {
	out := local
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for member, v := range hc.views {
		for _, rs := range v.Servers {
			name := rs.Status.Name
			if hc.placement(name, hc.h.rt.NodeLabel(name)) == member {
				out = append(out, hc.catalogs[member][name].Reviews...)
			}
		}
	}
	return out
}

// watchReviews fires hc.reviewsChanged at every change of this member's
// own reviews, until the host closes.
func (hc *hostCluster) watchReviews() {
	for {
		select {
		case <-hc.h.rt.ToolReviewsChanged():
			hc.reviewsChanged.Notify()
			hc.wakePublish()
		case <-hc.h.bg.Done():
			return
		}
	}
}

// decideRemote makes a tool decision on the member owner.
func (hc *hostCluster) decideRemote(ctx context.Context, owner string, d decision) error {
	params, err := json.Marshal(d)
	if err != nil {
		return err
	}
	raw, err := hc.forward(ctx, owner, forwarded{Op: opDecide, Server: d.Server, Params: params}, nil)
	if err != nil {
		return err
	}
	var pins map[string]pinEntry
	if json.Unmarshal(raw, &pins) == nil {
		hc.mergePins(pins)
	}
	return nil
}
