package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// keepAlive is how often an idle event stream sends a comment line, so
// proxies and clients see that it is alive.
const keepAlive = 25 * time.Second

// eventFilter reads ?pending=1&server=&method=&after=&limit=&newest=1.
func eventFilter(r *http.Request) (mcpvisor.EventFilter, error) {
	q := r.URL.Query()
	f := mcpvisor.EventFilter{Server: q.Get("server"), Method: q.Get("method")}
	switch q.Get("pending") {
	case "", "0", "false":
	case "1", "true":
		f.Status = mcpvisor.EventPending
	default:
		return f, fmt.Errorf("pending must be 1 or 0, not %q", q.Get("pending"))
	}
	if a := q.Get("after"); a != "" {
		v, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return f, fmt.Errorf("after must be an event id, not %q", a)
		}
		f.After = v
	}
	switch q.Get("newest") {
	case "", "0", "false":
	case "1", "true":
		f.Newest = true // with limit: the newest events, oldest first
	default:
		return f, fmt.Errorf("newest must be 1 or 0, not %q", q.Get("newest"))
	}
	if l := q.Get("limit"); l != "" {
		v, err := strconv.Atoi(l)
		if err != nil || v < 0 {
			return f, fmt.Errorf("limit must be a non-negative integer, not %q", l)
		}
		f.Limit = v
	}
	return f, nil
}

// events lists one page of events, oldest first: ?limit= of them (100 by
// default, at most 1,000) and, when there may be more, "next": the id to
// pass as ?after= to read on. With ?newest=1 the page is the newest events
// and "next" the newest id when it was read, where a stream goes on. With
// ?cluster=1, a page of every member's, as history's.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	cluster, cursor, ok := clusterRequest(w, r)
	if !ok {
		return
	}
	f, err := eventFilter(r)
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	f.Limit = pageLimit(f.Limit)
	if cluster {
		members, next, err := s.h.ClusterEventsPage(r.Context(), f, cursor)
		writeClusterPage(w, members, next, err)
		return
	}
	page, err := s.h.Journal().EventsPage(f)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeList(w, "events", page.Events, page.Next)
}

func (s *Server) ackEvents(w http.ResponseWriter, r *http.Request) {
	var req struct {
		IDs    []uint64 `json:"ids"`
		Member string   `json:"member"` // cluster mode: the member whose events they are ("": this one)
	}
	if !readJSON(w, r, &req) {
		return
	}
	if len(req.IDs) == 0 {
		badRequest(w, "ids must list at least one event id")
		return
	}
	if err := s.h.ClusterAck(r.Context(), req.Member, req.IDs...); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"acked": req.IDs})
}

// eventStream sends the events journaled from now on (or after ?after=ID)
// as SSE "event" events, with the list's filters, until the client leaves.
// A client that reads too slowly to keep up gets a "lagged" event,
// {"skipped": N, "after": ID}, and the stream ends: it resumes with
// ?after=ID, and meanwhile costs the journal and the other streams nothing.
func (s *Server) eventStream(w http.ResponseWriter, r *http.Request) {
	f, err := eventFilter(r)
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	if r.URL.Query().Get("after") == "" {
		f.After = s.h.Journal().LastEventSeq() // from now on, without reading the journal
	}
	limit := f.Limit
	f.Limit = 0
	ctx, cancel := context.WithCancel(r.Context())
	ch := s.h.Journal().SubscribeBounded(ctx, f)
	// Cancelling ends the subscription; draining it lets its goroutine
	// exit before the handler returns.
	defer func() {
		for range ch {
		}
	}()
	defer cancel()
	sse := newSSE(w)
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	sent := 0
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return // the journal closed
			}
			if ev.Method == mcpvisor.MethodEventsLagged {
				_ = sse.event("lagged", ev.Params)
				return
			}
			if sse.event("event", ev) != nil {
				return
			}
			if sent++; limit > 0 && sent >= limit {
				return
			}
		case <-tick.C:
			if sse.comment("keep-alive") != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
