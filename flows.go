package mcpvisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/elicit"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Server-initiated flows: the requests servers send the host (elicitation,
// sampling, roots), each answered by a hook the embedder provides, and the
// capabilities declared for exactly those.

type (
	// ElicitationRequest is a server's request for input from a person.
	ElicitationRequest = elicit.Request
	// ElicitationResponse answers it: accept (with content), decline or cancel.
	ElicitationResponse = elicit.Response
	// ElicitationAction is accept, decline or cancel.
	ElicitationAction = elicit.Action
	// ElicitationField is one field of a form-mode request.
	ElicitationField = elicit.Field
	// Progress is one notifications/progress of a call.
	Progress = actors.Progress
)

// Elicitation actions and modes.
const (
	ElicitAccept  = elicit.ActionAccept
	ElicitDecline = elicit.ActionDecline
	ElicitCancel  = elicit.ActionCancel
	ElicitForm    = elicit.ModeForm
	ElicitURL     = elicit.ModeURL
)

// DefaultElicitationDeadline is how long a person has to answer an
// elicitation before the host answers cancel.
const DefaultElicitationDeadline = 5 * time.Minute

// ElicitationHandler answers an elicitation, e.g. by asking the person in the
// embedder's own UI. It runs on a goroutine of its own; ctx ends at the
// deadline, or when the server cancels or goes away. A form-mode accept's
// content is completed with the schema's defaults and validated before it is
// sent; its values never reach logs, the journal or errors.
type ElicitationHandler func(ctx context.Context, req *ElicitationRequest) (ElicitationResponse, error)

// SamplingHandler answers a server's sampling/createMessage with a model's
// completion. Declared only when set; keep a person in the loop.
type SamplingHandler func(ctx context.Context, server string, req *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error)

// RootsProvider lists the roots (file:// URIs) a server may work in.
// Declared only when set; call Host.RootsChanged when they change.
type RootsProvider func(ctx context.Context, server string) ([]protocol.Root, error)

// CallOptions tune one call. The zero value is the server's defaults.
type CallOptions struct {
	// User is the platform user the call is made for. A per-user server
	// (oauth.perUser) runs the call on that user's own instance, with the
	// user's own token: calls for different users never share a token or a
	// connection. Other servers ignore it.
	User string
	// OnProgress receives the call's notifications/progress, on the
	// caller's goroutine; setting it asks the server for progress.
	OnProgress func(Progress)
	// Timeout replaces the server's call timeout for this call.
	Timeout time.Duration
	// ResetTimeoutOnProgress restarts the timeout at each progress, up to
	// MaxTotalTimeout (0: the server's, or no cap).
	ResetTimeoutOnProgress bool
	MaxTotalTimeout        time.Duration
	// Detached, for a tool that runs as a task: return as soon as the task
	// is created; its outcome arrives as a journal event (mcpvisor/task)
	// and through Host.Task. Other tools ignore it.
	Detached bool
	// TaskTTL is the task lifetime asked of the server (0: the server's).
	TaskTTL time.Duration
	// OnTask, when set, is told once the server ran the call as a task and
	// the task is in the journal (a host that dies from then on resumes it).
	OnTask func(TaskInfo)
	// Elicitation answers the elicitations that belong to this call, in
	// place of Options.Elicitation or the inbox: a gateway forwards them to
	// the client that made the call. An elicitation belongs to the call
	// when it names the call's task (related-task), or, naming no task,
	// when every request in flight on the server's connection comes from
	// calls of this call's session that all have a handler: no other
	// session's person is ever asked. Otherwise, or when the handler
	// returns ErrElicitationPassed, the host's own handler or inbox answers.
	// The host declares elicitation only with Options.Elicitation or Inbox.
	Elicitation ElicitationHandler
	// Approve, for a host-tool call, is asked after the host's own approval
	// (Options.Approve or the approval inbox) allowed it: a caller can add
	// a check, never skip one. A gateway uses it to ask the person at its
	// client. It sees every host-tool call; ApprovalRequest.Changes tells
	// the ones that change the servers.
	Approve ApprovalFunc
	// Sampling answers the sampling/createMessage requests that belong to
	// this call (by the rule of Elicitation), in place of Options.Sampling:
	// a gateway forwards them to the client that made the call. The host
	// declares sampling with Options.Sampling or Options.CallSampling.
	Sampling SamplingHandler
	// ClientCapabilities, for a gateway in front of a modern client, are
	// that client's capabilities (a ClientCapabilities object): a modern
	// server is told them in place of the host's, so it asks only for what
	// the client can give. A legacy server learnt the host's at initialize.
	ClientCapabilities json.RawMessage
	// Client names the client behind the handlers when callers of one
	// scope are different clients (a gateway's modern clients share a
	// scope). A server's request is the call's only when every call in
	// flight on the server's connection with a handler has the same scope
	// and Client: one client's question never reaches another.
	Client string
	// PassInput returns a modern server's input_required result to the
	// caller as the server wrote it (Result.InputRequired, Result.Raw)
	// instead of fulfilling it with the handlers: a gateway hands it to its
	// own modern client, which answers and retries (Resume).
	PassInput bool
	// Resume is a retry's answer to an earlier input_required result: the
	// JSON object {"inputResponses":…,"requestState":…} of the client's
	// retry, whose members reach the server as they are.
	Resume json.RawMessage
}

// URLElicitationRequiredError is a server's -32042 answer: the call needs
// the person to complete the listed URL elicitations first (the host opens
// nothing); retry the call once they have.
type URLElicitationRequiredError struct {
	Server       string
	Elicitations []ElicitationRequest // url mode; URLs validated, never fetched
	Err          *protocol.Error
}

func (e *URLElicitationRequiredError) Error() string {
	urls := make([]string, 0, len(e.Elicitations))
	for _, el := range e.Elicitations {
		urls = append(urls, el.URL)
	}
	return fmt.Sprintf("server %q requires URL elicitation before this call: %s", e.Server, strings.Join(urls, ", "))
}

func (e *URLElicitationRequiredError) Unwrap() error { return e.Err }

// urlElicitationRequired turns a -32042 error into its typed form; other
// errors come back as they are.
func urlElicitationRequired(server string, err error) error {
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.CodeURLElicitationRequired {
		return err
	}
	var data protocol.URLElicitationRequiredData
	_ = json.Unmarshal(perr.Data, &data)
	out := &URLElicitationRequiredError{Server: server, Err: perr}
	for _, p := range data.Elicitations {
		p.Mode = string(elicit.ModeURL)
		raw, _ := json.Marshal(p)
		req, perr := elicit.Parse(server, raw)
		if perr != nil {
			continue // an unsafe or malformed URL is not shown at all
		}
		out.Elicitations = append(out.Elicitations, *req)
	}
	return out
}

// clientHooks builds the runtime's handlers and capabilities from the
// host's options.
func (h *Host) clientHooks() (protocol.ClientCapabilities, map[string]actors.Handler, map[string]func(string, json.RawMessage)) {
	var caps protocol.ClientCapabilities
	handlers := map[string]actors.Handler{}
	notify := map[string]func(string, json.RawMessage){}
	if h.opts.Elicitation != nil || h.opts.Inbox {
		caps.Elicitation = json.RawMessage(`{"form":{},"url":{}}`)
		handlers[protocol.MethodElicitationCreate] = actors.Handler{Serve: h.serveElicitation, PausesCalls: true}
		notify[protocol.MethodElicitationComplete] = func(server string, params json.RawMessage) {
			var p protocol.ElicitationCompleteParams
			if json.Unmarshal(params, &p) == nil && p.ElicitationID != "" {
				h.broker.Complete(p.ElicitationID, server)
			}
		}
	}
	if h.opts.Sampling != nil || h.opts.CallSampling {
		caps.Sampling = json.RawMessage(`{}`)
		handlers[protocol.MethodSamplingCreateMessage] = actors.Handler{Serve: h.serveSampling, PausesCalls: true}
	}
	if h.opts.Roots != nil {
		caps.Roots = &protocol.RootsCapability{ListChanged: true}
		handlers[protocol.MethodRootsList] = actors.Handler{Serve: h.serveRoots}
	}
	return caps, handlers, notify
}

func invalidParams(err error) error {
	return &protocol.Error{Code: protocol.CodeInvalidParams, Message: err.Error()}
}

// serveElicitation answers one elicitation/create a server sent: through
// the handler of the call it belongs to (askers.pick), the embedder's
// handler, or the built-in inbox.
func (h *Host) serveElicitation(ctx context.Context, sr actors.ServerRequest) (json.RawMessage, error) {
	return h.elicit(ctx, sr.Server, sr.Params, func(req *ElicitationRequest) *asker {
		return h.askers.pick(sr.Server, req.RelatedTask, askerElicits, func() int { return h.rt.PendingCalls()[sr.Server] })
	})
}

// elicit answers one elicitation: through the handler of the call it
// belongs to (owner), the embedder's handler, or the built-in inbox. The
// journal learns that it happened and its action, never the values.
func (h *Host) elicit(ctx context.Context, server string, params json.RawMessage, owner func(*ElicitationRequest) *asker) (json.RawMessage, error) {
	req, err := elicit.Parse(server, params)
	if err != nil {
		return nil, invalidParams(err)
	}
	deadline := h.opts.ElicitationDeadline
	if deadline <= 0 {
		deadline = DefaultElicitationDeadline
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	if req.Created.IsZero() {
		req.Created, req.Deadline = time.Now(), time.Now().Add(deadline)
	}
	a := owner(req)
	if a != nil && a.delegate != nil {
		raw, err := a.delegated(ctx, protocol.MethodElicitationCreate, params)
		if err != nil {
			// The server is told the person did not answer.
			h.opts.Logger.Warn("elicitation: the member the call came from did not answer; answering cancel", "server", server, "err", err)
			return elicit.ResultJSON(ElicitationResponse{Action: elicit.ActionCancel}), nil
		}
		return raw, nil
	}
	var resp ElicitationResponse
	passed := true
	if a != nil && a.handle != nil {
		// The question ends with the call it belongs to.
		actx, acancel := context.WithCancel(ctx)
		stop := context.AfterFunc(a.ctx, acancel)
		resp, passed = h.answer(actx, a.handle, req, true)
		stop()
		acancel()
	}
	if passed && h.opts.Elicitation != nil {
		resp, _ = h.answer(ctx, h.opts.Elicitation, req, false)
	} else if passed {
		var err error
		if resp, err = h.broker.Handle(ctx, req); err != nil {
			resp = ElicitationResponse{Action: elicit.ActionCancel}
		}
	}
	h.recordElicitation(req, resp.Action)
	return elicit.ResultJSON(resp), nil
}

// answer runs one elicitation handler: its accept is completed with the
// schema's defaults and validated, and a handler that fails answers cancel
// (its error, never a value, is logged). With mayPass, a handler returning
// ErrElicitationPassed reports passed instead.
func (h *Host) answer(ctx context.Context, handle ElicitationHandler, req *ElicitationRequest, mayPass bool) (resp ElicitationResponse, passed bool) {
	resp, err := handle(ctx, req)
	if mayPass && errors.Is(err, ErrElicitationPassed) {
		return ElicitationResponse{}, true
	}
	if err == nil && ctx.Err() != nil {
		resp = ElicitationResponse{Action: elicit.ActionCancel}
	}
	if err == nil && resp.Action == elicit.ActionAccept {
		var content map[string]any
		if content, err = req.Complete(resp.Content); err == nil {
			resp.Content = content
		}
	}
	if err == nil && !resp.Action.Valid() {
		err = fmt.Errorf("elicitation handler answered %q (want accept, decline or cancel)", resp.Action)
	}
	if err != nil {
		// The server is told the person did not answer.
		h.opts.Logger.Warn("elicitation handler failed; answering cancel", "server", req.Server, "err", err)
		resp = ElicitationResponse{Action: elicit.ActionCancel}
	}
	return resp, false
}

// asker is a call in flight with its own elicitation or sampling handler.
type asker struct {
	ctx    context.Context // the call's
	server string
	scope  Scope
	client string // CallOptions.Client
	handle ElicitationHandler
	sample SamplingHandler
	// delegate, for a call another member of the cluster forwarded here,
	// asks that member, where the call's handlers are (cluster_flows.go).
	delegate func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	task     atomic.Pointer[string] // the call's task id, once it runs as one
}

func askerElicits(a *asker) bool { return a.handle != nil || a.delegate != nil }
func askerSamples(a *asker) bool { return a.sample != nil || a.delegate != nil }

// delegated asks a question of the member a forwarded call came from,
// until the call ends.
func (a *asker) delegated(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(a.ctx, cancel)()
	return a.delegate(ctx, method, params)
}

// askers tracks the calls in flight that have their own elicitation
// handler, by server, to attribute a server's elicitation to one of them.
type askers struct {
	mu       sync.Mutex
	byServer map[string][]*asker
}

func (as *askers) add(a *asker) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.byServer == nil {
		as.byServer = map[string][]*asker{}
	}
	as.byServer[a.server] = append(as.byServer[a.server], a)
}

func (as *askers) remove(a *asker) {
	as.mu.Lock()
	defer as.mu.Unlock()
	list := slices.DeleteFunc(as.byServer[a.server], func(x *asker) bool { return x == a })
	if len(list) == 0 {
		delete(as.byServer, a.server)
		return
	}
	as.byServer[a.server] = list
}

// pick returns the call a request from server belongs to, or nil (see
// CallOptions.Elicitation), among the calls that can answer it (can).
// pending counts the requests in flight on the server's connection; it is
// asked only when the request names no task.
func (as *askers) pick(server, task string, can func(*asker) bool, pending func() int) *asker {
	as.mu.Lock()
	list := slices.Clone(as.byServer[server])
	as.mu.Unlock()
	list = slices.DeleteFunc(list, func(a *asker) bool { return !can(a) })
	if len(list) == 0 {
		return nil
	}
	if task != "" {
		for _, a := range list {
			if t := a.task.Load(); t != nil && *t == task {
				return a
			}
		}
		return nil // another caller's task, or one resumed after a restart
	}
	first := list[0]
	for _, a := range list[1:] {
		if a.scope != first.scope || a.client != first.client || first.scope.Session == "" {
			return nil // two sessions or clients, or two of the embedder's own calls
		}
	}
	if pending() > len(list) {
		return nil // some request in flight is not one of these calls
	}
	return first
}

// recordElicitation journals that an elicitation happened: the server, the
// mode, the field names and the action. Nothing the person entered.
func (h *Host) recordElicitation(req *ElicitationRequest, action ElicitationAction) {
	names := make([]string, 0, len(req.Fields))
	for _, f := range req.Fields {
		names = append(names, f.Name)
	}
	params, _ := json.Marshal(struct {
		ID     string   `json:"id,omitempty"`
		Mode   string   `json:"mode"`
		Fields []string `json:"fields,omitempty"`
		Host   string   `json:"host,omitempty"`
		Task   string   `json:"relatedTask,omitempty"`
		Action string   `json:"action"`
	}{req.ID, string(req.Mode), names, req.Host(), req.RelatedTask, string(action)})
	h.journal.writer.Ingest(req.Server, persistence.AppendEvent(persistence.EventRecord{
		Server: req.Server, Method: EventMethodElicitation, Params: params, Received: time.Now(),
	}))
}

// Journal event methods of the host's own events.
const (
	EventMethodElicitation = "mcpvisor/elicitation"
	EventMethodApproval    = "mcpvisor/approval"
	EventMethodTask        = actors.EventMethodTask
)

func (h *Host) serveSampling(ctx context.Context, sr actors.ServerRequest) (json.RawMessage, error) {
	return h.sample(ctx, sr.Server, sr.Params, func(meta json.RawMessage) *asker {
		return h.askers.pick(sr.Server, protocol.RelatedTaskID(meta), askerSamples, func() int { return h.rt.PendingCalls()[sr.Server] })
	})
}

// sample answers one sampling/createMessage: through the handler of the
// call it belongs to (owner), else the embedder's.
func (h *Host) sample(ctx context.Context, server string, params json.RawMessage, owner func(meta json.RawMessage) *asker) (json.RawMessage, error) {
	var p protocol.CreateMessageParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams(fmt.Errorf("sampling/createMessage: %v", err))
	}
	if len(p.Tools) > 0 || len(p.ToolChoice) > 0 {
		return nil, invalidParams(errors.New("sampling with tools needs the sampling.tools capability, which this host does not declare"))
	}
	sample := h.opts.Sampling
	a := owner(p.Meta)
	if a != nil && a.delegate != nil {
		return a.delegated(ctx, protocol.MethodSamplingCreateMessage, params)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a != nil && a.sample != nil {
		// The request ends with the call it belongs to.
		sample = a.sample
		defer context.AfterFunc(a.ctx, cancel)()
	}
	if sample == nil {
		return nil, &protocol.Error{Code: -1, Message: "sampling/createMessage: no client of this host can answer it (it belongs to no call whose client samples)"}
	}
	res, err := sample(ctx, server, &p)
	if err != nil {
		var perr *protocol.Error
		if errors.As(err, &perr) {
			return nil, perr
		}
		return nil, &protocol.Error{Code: -1, Message: err.Error()} // -1: the request was refused
	}
	return json.Marshal(res)
}

func (h *Host) serveRoots(ctx context.Context, sr actors.ServerRequest) (json.RawMessage, error) {
	roots, err := h.opts.Roots(ctx, sr.Server)
	if err != nil {
		return nil, err
	}
	for _, r := range roots {
		if !strings.HasPrefix(r.URI, "file://") {
			return nil, fmt.Errorf("root %q is not a file:// URI", r.URI)
		}
	}
	return json.Marshal(protocol.ListRootsResult{Roots: roots})
}

// RootsChanged tells every connected server that the roots changed
// (notifications/roots/list_changed). Only meaningful with Options.Roots.
func (h *Host) RootsChanged() {
	if h.opts.Roots != nil {
		h.rt.Notify(protocol.MethodRootsListChanged, nil)
	}
}

// Elicitations lists the elicitations waiting in the built-in inbox, oldest
// first (Options.Inbox).
func (h *Host) Elicitations() []ElicitationRequest { return h.broker.List() }

// ElicitationsChanged is closed at the next change to the inbox.
func (h *Host) ElicitationsChanged() <-chan struct{} { return h.broker.Changed() }

// ResolveElicitation answers a waiting elicitation. An accept in form mode
// is completed with the schema's defaults and validated: on an error (which
// names the field, never the value) the elicitation stays waiting.
func (h *Host) ResolveElicitation(id string, action ElicitationAction, content map[string]any) error {
	err := h.broker.Resolve(id, action, content)
	if errors.Is(err, elicit.ErrUnknown) {
		return fmt.Errorf("%w: %q", ErrUnknownElicitation, id)
	}
	return err
}
