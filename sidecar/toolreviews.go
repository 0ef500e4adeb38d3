package sidecar

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tool reviews: under a tool policy (mcpvisor.Options.ToolPolicy, or a
// server's "toolPolicy"), a tool definition no person approved waits here,
// withheld under hold, until someone approves or rejects the very
// definition (by hash) they were shown.

// toolReviews lists the definitions awaiting a person, as json.Marshal of
// Host.ToolReviews gives them.
func (s *Server) toolReviews(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"reviews": nonNil(s.h.ToolReviews())})
}

// toolDecision is the body of POST /v1/tools/reviews/decide.
type toolDecision struct {
	Server   string `json:"server"`
	Tool     string `json:"tool"` // the server's own name for it
	Hash     string `json:"hash"` // the ToolReview's hash: what the person saw
	Decision string `json:"decision"`
	By       string `json:"by"`
}

// decideToolReview approves or rejects one definition: {"server", "tool",
// "hash", "decision": "approve"|"reject", "by"}. 204 once the decision is
// durable and in effect; 409 stale_review when the server no longer lists
// that definition.
func (s *Server) decideToolReview(w http.ResponseWriter, r *http.Request) {
	var req toolDecision
	if !readJSON(w, r, &req) {
		return
	}
	var missing []string
	for _, f := range []struct{ name, value string }{{"server", req.Server}, {"tool", req.Tool}, {"hash", req.Hash}} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		badRequest(w, strings.Join(missing, ", ")+" required: a decision names the definition it was shown")
		return
	}
	decide := s.h.ApproveTool
	switch req.Decision {
	case "approve":
	case "reject":
		decide = s.h.RejectTool
	default:
		badRequest(w, fmt.Sprintf("decision must be approve or reject, not %q", req.Decision))
		return
	}
	if err := decide(r.Context(), req.Server, req.Tool, req.Hash, decidedBy(req.By)); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// maxDecidedBy bounds who the journal says decided, in bytes.
const maxDecidedBy = 200

// decidedBy is who the journal records as deciding through the API: "api",
// or "api:" and what the caller gave, without control or format
// characters (a name must not forge lines or reorder text in a log) and
// cut to maxDecidedBy bytes. The prefix keeps a caller from passing itself
// off as another surface.
func decidedBy(given string) string {
	const prefix = "api:"
	clean := strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, given)
	clean = strings.TrimSpace(clean)
	if clean == "" {
		return "api"
	}
	if len(prefix)+len(clean) > maxDecidedBy {
		// Cut on a rune: ToValidUTF8 drops a last rune cut in two.
		clean = strings.ToValidUTF8(clean[:maxDecidedBy-len(prefix)], "")
	}
	return prefix + clean
}
