package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
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
// /v1/elicitations, GET /v1/approvals and GET /v1/tools/reviews list them,
// and the servers' lifecycle changes since the stream's previous event.
type inboxView struct {
	Servers      []mcpvisor.ServerStatus `json:"servers"`
	Elicitations []ElicitationView       `json:"elicitations"`
	Approvals    []ApprovalView          `json:"approvals"`
	ToolReviews  []mcpvisor.ToolReview   `json:"toolReviews"`
	Transitions  []TransitionView        `json:"transitions"`
}

// TransitionView is one lifecycle change of a server (starting, ready,
// backoff after a crash, failed…), as the inbox stream carries it: every
// one, so a server crashing in a loop shows as it loops, even when a
// snapshot of the servers falls between two of its states.
type TransitionView struct {
	Server string         `json:"server"`
	State  mcpvisor.State `json:"state"`
	Error  string         `json:"error,omitempty"`
	Time   time.Time      `json:"time"`
	// Skipped counts the changes before this one that the stream dropped
	// because they came faster than it sent them.
	Skipped int `json:"skipped,omitempty"`
}

// maxTransitions bounds the lifecycle changes a stream holds between two
// of its events; past it the oldest are dropped, and counted.
const maxTransitions = 256

// transitions gathers a stream's lifecycle changes from the host's event
// stream, for its next event.
type transitions struct {
	mu      sync.Mutex
	list    []TransitionView
	skipped int
	wake    chan struct{} // a change is waiting; capacity 1
}

func (t *transitions) add(ev mcpvisor.Event) {
	if ev.Kind != mcpvisor.EventState {
		return
	}
	t.mu.Lock()
	if len(t.list) == maxTransitions {
		t.list = slices.Delete(t.list, 0, 1)
		t.skipped++
	}
	t.list = append(t.list, TransitionView{Server: ev.Server, State: ev.State, Error: ev.Err, Time: ev.Time})
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// take returns the changes gathered since the last take, oldest first.
func (t *transitions) take() []TransitionView {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.list
	if len(out) > 0 && t.skipped > 0 {
		out[0].Skipped, t.skipped = t.skipped, 0
	}
	t.list = nil
	if out == nil {
		out = []TransitionView{}
	}
	return out
}

// inboxGap is the shortest time between two inbox events: a server
// restarting in a loop, or a burst of elicitations, is sent as one
// snapshot per gap rather than one per change.
const inboxGap = 100 * time.Millisecond

// inboxStream sends an "inbox" event with the servers, the pending
// elicitations, the pending approvals and the tool definitions awaiting
// review at once and after every change to any of them, with the servers'
// lifecycle changes since the previous event, until the client leaves or
// the server shuts down.
func (s *Server) inboxStream(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	changes := &transitions{wake: make(chan struct{}, 1)}
	defer s.h.Subscribe(changes.add)()
	sse := newSSE(w)
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		// Taken before the snapshot: a change while it is read fires them.
		status, asks, approvals, reviews := s.h.StatusChanged(), s.h.ElicitationsChanged(), s.h.ApprovalsChanged(),
			s.h.ToolReviewsChanged()
		view := inboxView{Servers: s.serverViews(), Elicitations: s.elicitationViews(), Approvals: s.approvalViews(),
			ToolReviews: nonNil(s.h.ToolReviews()), Transitions: changes.take()}
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
			case <-changes.wake:
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
