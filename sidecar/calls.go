package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mcpvisor/mcpvisor"
)

// tools lists the tools of ?session=S&stack=K, grants applied, or without
// a session the full catalog; with ?wait=DURATION once the servers have
// settled (see settle).
func (s *Server) tools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("stack") != "" && q.Get("session") == "" {
		badRequest(w, "stack needs a session")
		return
	}
	if !s.settle(w, r) {
		return
	}
	var tools []mcpvisor.Tool
	if sess := q.Get("session"); sess != "" {
		tools = s.h.Session(sess, q.Get("stack")).Tools()
	} else {
		tools = s.h.Tools()
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": nonNil(tools)})
}

// catalog is the session's "## MCP servers" block, as markdown.
func (s *Server) catalog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sess := q.Get("session")
	if sess == "" {
		badRequest(w, "session is required")
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Write([]byte(s.h.Session(sess, q.Get("stack")).Catalog()))
}

type callRequest struct {
	Session   string          `json:"session"`
	Stack     string          `json:"stack"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Detached  bool            `json:"detached"`
	// User is the platform user the call is for: a per-user server
	// (oauth.perUser) uses that user's own sign-in.
	User string `json:"user"`
	// Client names the caller to a person: an elicitation of the call
	// shows it (GET /v1/elicitations' client), and the caller finds its
	// own call's questions by it.
	Client string `json:"client"`
}

type progressView struct {
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total,omitempty"`
	Message  string   `json:"message,omitempty"`
}

// call runs one tool call: for a session when one is given, else on the
// host. With "Accept: text/event-stream" the answer is SSE: a progress
// event per notification, a task event (a TaskView) when the server runs
// the call as a task, then one result (or error) event. The call is
// cancelled when the client goes away (the request's context); a detached
// call's task is not: it runs on in the host, which journals its outcome.
func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	var req callRequest
	if !readJSONMax(w, r, &req, maxCallBody) {
		return
	}
	if req.Tool == "" {
		badRequest(w, "tool is required")
		return
	}
	if req.Session == "" && req.Stack != "" {
		badRequest(w, "stack needs a session")
		return
	}
	args := req.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	opts := mcpvisor.CallOptions{Detached: req.Detached, User: req.User, Client: req.Client}

	var sse *sseWriter
	if wantsSSE(r) {
		sse = newSSE(w)
		opts.OnProgress = func(p mcpvisor.Progress) {
			sse.event("progress", progressView{Progress: p.Progress, Total: p.Total, Message: p.Message})
		}
		opts.OnTask = func(ti mcpvisor.TaskInfo) { sse.event("task", NewTaskView(ti)) }
	}

	// The caller's trace (W3C headers) is the parent of the call's span.
	ctx := mcpvisor.TraceFromHeaders(r.Context(), r.Header)
	var res *mcpvisor.Result
	var err error
	if req.Session != "" {
		res, err = s.h.Session(req.Session, req.Stack).CallWith(ctx, req.Tool, args, opts)
	} else {
		res, err = s.h.CallWith(ctx, req.Tool, args, opts)
	}
	if err != nil {
		// Say why the request's context ended when it was not the client
		// (e.g. the sidecar shutting down, through http.Server.BaseContext).
		if cause := context.Cause(r.Context()); cause != nil && cause != r.Context().Err() {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
	}

	switch {
	case sse != nil && err != nil:
		sse.event("error", ErrorBody{Error: classify(err)})
	case sse != nil:
		sse.event("result", NewResultView(res))
	case err != nil:
		writeErr(w, err)
	default:
		writeJSON(w, http.StatusOK, NewResultView(res))
	}
}

type scopeRequest struct {
	Groups []string `json:"groups"`
	Stack  string   `json:"stack"`
}

func (s *Server) activate(w http.ResponseWriter, r *http.Request) {
	var req scopeRequest
	if !readJSON(w, r, &req) {
		return
	}
	if len(req.Groups) == 0 {
		badRequest(w, "groups must list at least one tool group")
		return
	}
	sess := s.h.Session(r.PathValue("session"), req.Stack)
	if err := sess.Activate(r.Context(), req.Groups...); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": sess.Scope().Session, "stack": sess.Scope().Stack,
		"groups": nonNil(sess.Groups())})
}

func (s *Server) endSession(w http.ResponseWriter, r *http.Request) {
	var req scopeRequest
	if !readJSON(w, r, &req) {
		return
	}
	if len(req.Groups) > 0 {
		badRequest(w, fmt.Sprintf("end takes no groups (%d given)", len(req.Groups)))
		return
	}
	if err := s.h.Session(r.PathValue("session"), req.Stack).End(r.Context()); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
