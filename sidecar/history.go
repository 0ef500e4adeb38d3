package sidecar

import (
	"bufio"
	"encoding/base64"
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
// "next", the id to pass as ?after=. With ?cluster=1, a page of every
// member's ({"members": [{member, history, error}], "next": cursor}, from
// Host.ClusterHistoryPage).
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	cluster, cursor, ok := clusterRequest(w, r)
	if !ok {
		return
	}
	f, err := historyFilter(r)
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	f.Limit = pageLimit(f.Limit)
	if cluster {
		members, next, err := s.h.ClusterHistoryPage(r.Context(), f, cursor)
		writeClusterPage(w, members, next, err)
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

// clusterRequest reads ?cluster=1 and, with it, the cursor a cluster
// page's "next" gave as ?after= (taken out of the query, which then reads
// as a single journal's); a number there is every member's place. ok is
// false when the answer (400) is written.
func clusterRequest(w http.ResponseWriter, r *http.Request) (cluster bool, cursor mcpvisor.ClusterCursor, ok bool) {
	q := r.URL.Query()
	switch c := q.Get("cluster"); c {
	case "", "0", "false":
		return false, nil, true
	case "1", "true":
	default:
		badRequest(w, fmt.Sprintf("cluster must be 1 or 0, not %q", c))
		return false, nil, false
	}
	a := q.Get("after")
	if a == "" {
		return true, nil, true
	}
	if _, err := strconv.ParseUint(a, 10, 64); err == nil {
		return true, nil, true
	}
	b, err := base64.RawURLEncoding.DecodeString(a)
	if err == nil {
		err = json.Unmarshal(b, &cursor)
	}
	if err != nil {
		badRequest(w, fmt.Sprintf("after must be a record id or the next of a cluster page, not %q", a))
		return false, nil, false
	}
	q.Del("after")
	r.URL.RawQuery = q.Encode()
	return true, cursor, true
}

// writeClusterPage answers a cluster page: {"members": [...], "next":
// cursor}, next left out when no member had more.
func writeClusterPage(w http.ResponseWriter, members any, next mcpvisor.ClusterCursor, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	body := map[string]any{"members": members}
	if next != nil {
		b, _ := json.Marshal(next)
		body["next"] = base64.RawURLEncoding.EncodeToString(b)
	}
	writeJSON(w, http.StatusOK, body)
}
