package sidecar

import (
	"fmt"
	"net/http"
)

func (s *Server) tasks(w http.ResponseWriter, r *http.Request) {
	unfinished := false
	switch p := r.URL.Query().Get("pending"); p {
	case "", "0", "false":
	case "1", "true":
		unfinished = true
	default:
		badRequest(w, fmt.Sprintf("pending must be 1 or 0, not %q", p))
		return
	}
	ts, err := s.h.Tasks(unfinished)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]TaskView, 0, len(ts))
	for _, t := range ts {
		out = append(out, NewTaskView(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": out})
}

func (s *Server) task(w http.ResponseWriter, r *http.Request) {
	t, err := s.h.Task(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, NewTaskView(t))
}
