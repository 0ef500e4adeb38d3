package sidecar

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// tasks lists one page of tasks, oldest created first: ?limit= of them
// (100 by default, at most 1,000) and, when there may be more, "next": an
// opaque cursor to pass as ?after= to read on. ?pending=1 lists only the
// unfinished; ?server= one server's.
func (s *Server) tasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := mcpvisor.TaskFilter{Server: q.Get("server")}
	switch p := q.Get("pending"); p {
	case "", "0", "false":
	case "1", "true":
		f.Unfinished = true
	default:
		badRequest(w, fmt.Sprintf("pending must be 1 or 0, not %q", p))
		return
	}
	if l := q.Get("limit"); l != "" {
		v, err := strconv.Atoi(l)
		if err != nil || v < 0 {
			badRequest(w, fmt.Sprintf("limit must be a non-negative integer, not %q", l))
			return
		}
		f.Limit = v
	}
	f.Limit = pageLimit(f.Limit)
	if a := q.Get("after"); a != "" {
		c, err := decodeTaskCursor(a)
		if err != nil {
			badRequest(w, fmt.Sprintf("after must be the next of a page of tasks, not %q", a))
			return
		}
		f.After = c
	}
	page, err := s.h.TaskPage(f)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]TaskView, 0, len(page.Tasks))
	for _, t := range page.Tasks {
		out = append(out, NewTaskView(t))
	}
	body := map[string]any{"tasks": out}
	if !page.Next.IsZero() {
		body["next"] = encodeTaskCursor(page.Next)
	}
	writeJSON(w, http.StatusOK, body)
}

// taskCursor is a TaskCursor as a page's "next" carries it: JSON in
// base64url, which the client passes back without reading.
type taskCursor struct {
	Created time.Time `json:"c"`
	Server  string    `json:"s"`
	TaskID  string    `json:"t"`
}

func encodeTaskCursor(c mcpvisor.TaskCursor) string {
	b, _ := json.Marshal(taskCursor(c))
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeTaskCursor(s string) (mcpvisor.TaskCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return mcpvisor.TaskCursor{}, err
	}
	var c taskCursor
	if err := json.Unmarshal(b, &c); err != nil {
		return mcpvisor.TaskCursor{}, err
	}
	return mcpvisor.TaskCursor(c), nil
}

func (s *Server) task(w http.ResponseWriter, r *http.Request) {
	t, err := s.h.Task(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, NewTaskView(t))
}
