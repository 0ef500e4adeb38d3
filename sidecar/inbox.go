package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

func (s *Server) elicitations(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"elicitations": s.elicitationViews()})
}

func (s *Server) elicitationViews() []ElicitationView {
	reqs := s.h.Elicitations()
	out := make([]ElicitationView, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, NewElicitationView(r))
	}
	return out
}

// inboxView is one event of GET /v1/inbox/stream: everything the inbox page
// shows but the journal's events, as GET /v1/servers, GET
// /v1/elicitations, GET /v1/approvals and GET /v1/tools/reviews list them.
type inboxView struct {
	Servers      []mcpvisor.ServerStatus `json:"servers"`
	Elicitations []ElicitationView       `json:"elicitations"`
	Approvals    []ApprovalView          `json:"approvals"`
	ToolReviews  []mcpvisor.ToolReview   `json:"toolReviews"`
}

// inboxGap is the shortest time between two inbox events: a server
// restarting in a loop, or a burst of elicitations, is sent as one
// snapshot per gap rather than one per change.
const inboxGap = 100 * time.Millisecond

// inboxStream sends an "inbox" event with the servers, the pending
// elicitations, the pending approvals and the tool definitions awaiting
// review at once and after every change to any of them, until the client
// leaves or the server shuts down.
func (s *Server) inboxStream(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sse := newSSE(w)
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		// Taken before the snapshot: a change while it is read fires them.
		status, asks, approvals, reviews := s.h.StatusChanged(), s.h.ElicitationsChanged(), s.h.ApprovalsChanged(),
			s.h.ToolReviewsChanged()
		view := inboxView{Servers: s.serverViews(), Elicitations: s.elicitationViews(), Approvals: s.approvalViews(),
			ToolReviews: nonNil(s.h.ToolReviews())}
		if sse.event("inbox", view) != nil {
			return
		}
		next := time.Now().Add(inboxGap)
		for changed := false; !changed; {
			select {
			case <-status:
				changed = true
			case <-asks:
				changed = true
			case <-approvals:
				changed = true
			case <-reviews:
				changed = true
			case <-tick.C:
				if sse.comment("keep-alive") != nil {
					return
				}
			case <-ctx.Done():
				return
			}
		}
		if !sleepCtx(ctx, time.Until(next)) {
			return
		}
	}
}

// sleepCtx waits d, or less if ctx ends first; it reports whether ctx is
// still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Server) resolveElicitation(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	action := mcpvisor.ElicitationAction(req.Action)
	switch action {
	case mcpvisor.ElicitAccept, mcpvisor.ElicitDecline, mcpvisor.ElicitCancel:
	default:
		badRequest(w, fmt.Sprintf("action must be accept, decline or cancel, not %q", req.Action))
		return
	}
	if action != mcpvisor.ElicitAccept && req.Content != nil {
		badRequest(w, "only accept takes content")
		return
	}
	if err := s.h.ResolveElicitation(r.PathValue("id"), action, req.Content); err != nil {
		writeErr(w, err) // names the field, never the value
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
