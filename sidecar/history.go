package sidecar

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/mcpvisor/mcpvisor"
)

// historyFilter reads ?kind=&server=&tool=&session=&after=&limit=&newest=1.
func historyFilter(r *http.Request) (mcpvisor.HistoryFilter, error) {
	q := r.URL.Query()
	f := mcpvisor.HistoryFilter{Server: q.Get("server"), Tool: q.Get("tool"), Session: q.Get("session")}
	switch k := mcpvisor.HistoryKind(q.Get("kind")); k {
	case "", mcpvisor.HistoryLifecycle, mcpvisor.HistoryCall, mcpvisor.HistoryGrant, mcpvisor.HistoryRevoke, mcpvisor.HistoryTool:
		f.Kind = k
	default:
		return f, fmt.Errorf("kind must be lifecycle, call, grant, revoke or tool, not %q", k)
	}
	if a := q.Get("after"); a != "" {
		v, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return f, fmt.Errorf("after must be a record id, not %q", a)
		}
		f.After = v
	}
	if l := q.Get("limit"); l != "" {
		v, err := strconv.Atoi(l)
		if err != nil || v < 0 {
			return f, fmt.Errorf("limit must be a non-negative integer, not %q", l)
		}
		f.Limit = v
	}
	switch n := q.Get("newest"); n {
	case "", "0", "false":
	case "1", "true":
		f.Newest = true // with limit: the newest records, oldest first
	default:
		return f, fmt.Errorf("newest must be 1 or 0, not %q", n)
	}
	return f, nil
}

// history lists a page of the journal's history records, oldest first:
// server transitions, tool calls, grants and revocations, tool definitions
// seen and decided, as json.Marshal of a HistoryRecord gives them; ?limit=
// of them (100 by default, at most 1,000) and, when there may be more,
// "next", the id to pass as ?after=. With ?cluster=1, every member's
// ({"members": [{member, history, error}]}).
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	f, err := historyFilter(r)
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	f.Limit = pageLimit(f.Limit)
	if clusterWide(w, r, func() (any, error) { return s.h.ClusterHistory(r.Context(), f) }) {
		return
	}
	page, err := s.h.Journal().HistoryPage(f)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeList(w, "history", page.Records, page.Next)
}

// pageLimit is the page size a list's ?limit= asks for: the default for
// none, never above the largest.
func pageLimit(limit int) int {
	if limit <= 0 {
		return mcpvisor.DefaultPageLimit
	}
	return min(limit, mcpvisor.MaxPageLimit)
}

// writeList answers a page of a list, {"<name>": [...], "next": id}, as
// json.Marshal would, but each item encoded as it is written rather than
// the whole answer first; next is left out when there is nothing more.
func writeList[T any](w http.ResponseWriter, name string, items []T, next uint64) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	fmt.Fprintf(bw, "{%q:[", name)
	for i, item := range items {
		b, err := json.Marshal(item)
		if err != nil {
			return // a record's JSON cannot fail (RawJSON); the answer is cut short
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		if _, err := bw.Write(b); err != nil {
			return // the client is gone
		}
	}
	bw.WriteByte(']')
	if next != 0 {
		fmt.Fprintf(bw, ",%q:%d", "next", next)
	}
	bw.WriteString("}\n")
	bw.Flush()
}

// cluster answers this member's view of its cluster (a
// mcpvisor.ClusterStatus): the members, their labels, the servers each
// runs and whether each has caught up with the membership; 404 when the
// sidecar is not a member of one.
func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	cs, ok := s.h.Cluster()
	if !ok {
		notFound(w, "this sidecar is not a member of a cluster (serve --cluster)")
		return
	}
	writeJSON(w, http.StatusOK, cs)
}

// clusterWide answers a list with ?cluster=1 by every member's
// ({"members": [...]}, from ask) and reports true; it reports false when
// the request asks for this member's alone. A bad value is a 400 (true).
func clusterWide(w http.ResponseWriter, r *http.Request, ask func() (any, error)) bool {
	switch c := r.URL.Query().Get("cluster"); c {
	case "", "0", "false":
		return false
	case "1", "true":
		members, err := ask()
		if err != nil {
			writeErr(w, err)
			return true
		}
		writeJSON(w, http.StatusOK, map[string]any{"members": members})
	default:
		badRequest(w, fmt.Sprintf("cluster must be 1 or 0, not %q", c))
	}
	return true
}
