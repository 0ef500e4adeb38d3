package sidecar

import (
	"fmt"
	"net/http"

	"github.com/mcpvisor/mcpvisor"
)

func (s *Server) elicitations(w http.ResponseWriter, _ *http.Request) {
	reqs := s.h.Elicitations()
	out := make([]elicitationView, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, newElicitationView(r))
	}
	writeJSON(w, http.StatusOK, map[string]any{"elicitations": out})
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
