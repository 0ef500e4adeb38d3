package sidecar

import (
	"fmt"
	"net/http"

	"github.com/mcpvisor/mcpvisor"
)

// The approval inbox: host-tool calls that change the registry
// (register_mcp, delete_mcp, toggle_item) wait here, with Host Options
// ApprovalInbox, until a person allows or denies them.

func (s *Server) approvals(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"approvals": s.approvalViews()})
}

func (s *Server) approvalViews() []ApprovalView {
	reqs := s.h.Approvals()
	out := make([]ApprovalView, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, NewApprovalView(r))
	}
	return out
}

// resolveApproval answers one pending call: {"decision": "allow"|"deny",
// "reason": "..."}. A reason goes to the model with a denial. A call
// raised by a request with this request's token is refused, 403
// "self_approval": whoever asked for a change does not approve it.
func (s *Server) resolveApproval(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	var allow bool
	switch req.Decision {
	case "allow":
		allow = true
	case "deny":
	default:
		badRequest(w, fmt.Sprintf("decision must be allow or deny, not %q", req.Decision))
		return
	}
	if err := s.h.ResolveApprovalAs(mcpvisor.CredentialOf(r.Context()), r.PathValue("id"), allow, req.Reason); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
