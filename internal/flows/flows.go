package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/elicit"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/pipeline"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// ElicitFunc answers an elicitation (the root's ElicitationHandler).
type ElicitFunc func(ctx context.Context, req *elicit.Request) (elicit.Response, error)

// SampleFunc answers a sampling/createMessage (the root's SamplingHandler).
type SampleFunc func(ctx context.Context, server string, req *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error)

// RootsFunc lists the roots a server may work in (the root's RootsProvider).
type RootsFunc func(ctx context.Context, server string) ([]protocol.Root, error)

// EventMethodElicitation is the journal event of an elicitation: its
// mode, fields and action, never a value.
const EventMethodElicitation = "mcpvisor/elicitation"

// DefaultDeadline is how long a person has to answer an elicitation
// before the host answers cancel (Options.Deadline 0).
const DefaultDeadline = 5 * time.Minute

// Options configure Flows; the handlers are the host's own.
type Options struct {
	// PendingCalls counts the requests in flight on a server's connection,
	// or with legacy on its legacy incarnation's (nil: none);
	// elicitations are journaled in Journal (nil: not).
	PendingCalls func(server string, legacy bool) int
	// InFlight is the call in flight to server through the host's
	// pipeline when there is exactly one (nil: none is known).
	InFlight    func(server string) *pipeline.Call
	Journal     *actors.Journal
	Elicitation ElicitFunc // nil: the inbox (Broker) answers
	Inbox       bool       // the host declares elicitation through Broker
	Broker      *elicit.Broker
	Sampling    SampleFunc
	// CallSampling declares sampling for calls' own handlers alone.
	CallSampling bool
	Roots        RootsFunc
	// CallRoots declares roots for calls' own handlers alone.
	CallRoots bool
	Deadline  time.Duration // how long a person has to answer; 0: DefaultDeadline
	// Passed is the error a call's own elicitation handler returns to hand
	// the elicitation to the host (the root's ErrElicitationPassed).
	Passed error
	Logger *slog.Logger
}

// Flows answers servers' requests. Safe for concurrent use.
type Flows struct {
	o      Options
	askers Askers
}

// New returns the flows of o, which it keeps.
func New(o Options) *Flows {
	if o.Deadline <= 0 {
		o.Deadline = DefaultDeadline
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Flows{o: o}
}

// Askers are the calls in flight with handlers of their own.
func (f *Flows) Askers() *Askers { return &f.askers }

// Elicits reports whether the host declares elicitation.
func (f *Flows) Elicits() bool { return f.o.Elicitation != nil || f.o.Inbox }

// Hooks are the runtime's handlers and capabilities: declared for exactly
// the host's handlers.
func (f *Flows) Hooks() (protocol.ClientCapabilities, map[string]actors.Handler, map[string]func(string, json.RawMessage)) {
	var caps protocol.ClientCapabilities
	handlers := map[string]actors.Handler{}
	notify := map[string]func(string, json.RawMessage){}
	if f.Elicits() {
		caps.Elicitation = json.RawMessage(`{"form":{},"url":{}}`)
		handlers[protocol.MethodElicitationCreate] = actors.Handler{Serve: f.serveElicitation, PausesCalls: true}
		notify[protocol.MethodElicitationComplete] = func(server string, params json.RawMessage) {
			var p protocol.ElicitationCompleteParams
			if json.Unmarshal(params, &p) == nil && p.ElicitationID != "" {
				f.o.Broker.Complete(p.ElicitationID, server)
			}
		}
	}
	if f.o.Sampling != nil || f.o.CallSampling {
		caps.Sampling = json.RawMessage(`{}`)
		handlers[protocol.MethodSamplingCreateMessage] = actors.Handler{Serve: f.serveSampling, PausesCalls: true}
	}
	if f.o.Roots != nil || f.o.CallRoots {
		// list_changed is the host's to send (Host.RootsChanged); a
		// call's client's changes reach the server at its next roots/list.
		caps.Roots = &protocol.RootsCapability{ListChanged: f.o.Roots != nil}
		handlers[protocol.MethodRootsList] = actors.Handler{Serve: f.serveRoots, PausesCalls: f.o.CallRoots}
	}
	return caps, handlers, notify
}

func invalidParams(err error) error {
	return &protocol.Error{Code: protocol.CodeInvalidParams, Message: err.Error()}
}

// serveElicitation answers one elicitation/create a server sent: through
// the handler of the call it belongs to (Askers.Pick), the host's handler,
// or the inbox.
func (f *Flows) serveElicitation(ctx context.Context, sr actors.ServerRequest) (json.RawMessage, error) {
	return f.Elicit(ctx, sr.Server, sr.Params, func(req *elicit.Request) *Asker {
		return f.askers.Pick(sr.Server, sr.Legacy, req.RelatedTask, (*Asker).elicits, func() int { return f.pending(sr.Server, sr.Legacy) })
	})
}

// Elicit answers one elicitation: through the handler of the call it
// belongs to (owner), the host's handler, or the inbox. The journal learns
// that it happened and its action, never the values. It blocks until
// answered, the deadline passes or ctx ends.
func (f *Flows) Elicit(ctx context.Context, server string, params json.RawMessage, owner func(*elicit.Request) *Asker) (json.RawMessage, error) {
	req, err := elicit.Parse(server, params)
	if err != nil {
		return nil, invalidParams(err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.o.Deadline)
	defer cancel()
	if req.Created.IsZero() {
		req.Created, req.Deadline = time.Now(), time.Now().Add(f.o.Deadline)
	}
	if c := f.caller(ctx, server, req.RelatedTask); c != nil {
		req.Caller = callerOf(c)
		// The person's time is not the server's: the call's latency
		// leaves it out.
		defer c.Waiting()()
	}
	a := owner(req)
	if a != nil && a.Delegate != nil {
		raw, err := a.delegated(ctx, protocol.MethodElicitationCreate, params)
		if err != nil {
			// The server is told the person did not answer.
			f.o.Logger.Warn("elicitation: the member the call came from did not answer; answering cancel", "server", server, "err", err)
			return elicit.ResultJSON(elicit.Response{Action: elicit.ActionCancel}), nil
		}
		return raw, nil
	}
	var resp elicit.Response
	passed := true
	if a != nil && a.Elicit != nil {
		// The question ends with the call it belongs to.
		actx, acancel := context.WithCancel(ctx)
		stop := context.AfterFunc(a.Ctx, acancel)
		resp, passed = f.answer(actx, a.Elicit, req, true)
		stop()
		acancel()
	}
	if passed && f.o.Elicitation != nil {
		resp, _ = f.answer(ctx, f.o.Elicitation, req, false)
	} else if passed {
		var err error
		if resp, err = f.o.Broker.Handle(ctx, req); err != nil {
			resp = elicit.Response{Action: elicit.ActionCancel}
		}
	}
	f.record(req, resp.Action)
	return elicit.ResultJSON(resp), nil
}

// caller is the call a question from server belongs to: the one ctx runs
// in (a modern server's input request), the one running as the task it
// names, or the only request in flight on the server's connection; nil
// when the host cannot tell.
func (f *Flows) caller(ctx context.Context, server, task string) *pipeline.Call {
	if c := pipeline.CallOf(ctx); c != nil {
		return c
	}
	if task != "" {
		if a := f.askers.OfTask(server, task); a != nil {
			return a.Call
		}
		return nil
	}
	if f.o.InFlight == nil || f.pending(server, false)+f.pending(server, true) > 1 {
		return nil // several requests: the question could be any one's
	}
	return f.o.InFlight(server)
}

// callerOf names c for a person.
func callerOf(c *pipeline.Call) elicit.Caller {
	tool := c.Tool
	if !c.ToolCall() {
		tool = strings.TrimSuffix(c.Method+" "+c.Name, " ")
	}
	return elicit.Caller{Tool: tool, CallID: c.ID, Session: c.Scope.Session, Stack: c.Scope.Stack, Client: c.Options.Client}
}

// answer runs one elicitation handler: its accept is completed with the
// schema's defaults and validated, and a handler that fails answers cancel
// (its error, never a value, is logged). With mayPass, a handler returning
// Options.Passed reports passed instead.
func (f *Flows) answer(ctx context.Context, handle ElicitFunc, req *elicit.Request, mayPass bool) (resp elicit.Response, passed bool) {
	resp, err := handle(ctx, req)
	if mayPass && f.o.Passed != nil && errors.Is(err, f.o.Passed) {
		return elicit.Response{}, true
	}
	if err == nil && ctx.Err() != nil {
		resp = elicit.Response{Action: elicit.ActionCancel}
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
		f.o.Logger.Warn("elicitation handler failed; answering cancel", "server", req.Server, "err", err)
		resp = elicit.Response{Action: elicit.ActionCancel}
	}
	return resp, false
}

// record journals that an elicitation happened: the server, the mode, the
// field names and the action. Nothing the person entered.
func (f *Flows) record(req *elicit.Request, action elicit.Action) {
	names := make([]string, 0, len(req.Fields))
	for _, fl := range req.Fields {
		names = append(names, fl.Name)
	}
	params, _ := json.Marshal(struct {
		ID      string   `json:"id,omitempty"`
		Mode    string   `json:"mode"`
		Fields  []string `json:"fields,omitempty"`
		Host    string   `json:"host,omitempty"`
		Task    string   `json:"relatedTask,omitempty"`
		Tool    string   `json:"tool,omitempty"`
		CallID  string   `json:"callId,omitempty"`
		Session string   `json:"session,omitempty"`
		Action  string   `json:"action"`
	}{req.ID, string(req.Mode), names, req.Host(), req.RelatedTask, req.Caller.Tool, req.Caller.CallID, req.Caller.Session,
		string(action)})
	if f.o.Journal != nil {
		f.o.Journal.Ingest(req.Server, persistence.AppendEvent(persistence.EventRecord{
			Server: req.Server, Method: EventMethodElicitation, Params: persistence.RawJSON(params), Received: time.Now(),
		}))
	}
}

func (f *Flows) serveSampling(ctx context.Context, sr actors.ServerRequest) (json.RawMessage, error) {
	return f.Sample(ctx, sr.Server, sr.Params, func(meta json.RawMessage) *Asker {
		return f.askers.Pick(sr.Server, sr.Legacy, protocol.RelatedTaskID(meta), (*Asker).samples, func() int { return f.pending(sr.Server, sr.Legacy) })
	})
}

// Sample answers one sampling/createMessage: through the handler of the
// call it belongs to (owner), else the host's. It blocks until answered or
// ctx ends.
func (f *Flows) Sample(ctx context.Context, server string, params json.RawMessage, owner func(meta json.RawMessage) *Asker) (json.RawMessage, error) {
	var p protocol.CreateMessageParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams(fmt.Errorf("sampling/createMessage: %v", err))
	}
	if len(p.Tools) > 0 || len(p.ToolChoice) > 0 {
		return nil, invalidParams(errors.New("sampling with tools needs the sampling.tools capability, which this host does not declare"))
	}
	sample := f.o.Sampling
	a := owner(p.Meta)
	if a != nil && a.Delegate != nil {
		return a.delegated(ctx, protocol.MethodSamplingCreateMessage, params)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a != nil && a.Sample != nil {
		// The request ends with the call it belongs to.
		sample = a.Sample
		defer context.AfterFunc(a.Ctx, cancel)()
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

// Roots reports whether the host declares roots.
func (f *Flows) Roots() bool { return f.o.Roots != nil || f.o.CallRoots }

// serveRoots answers one roots/list a server sent: through the handler of
// the call it belongs to (Askers.Pick), else the host's roots.
func (f *Flows) serveRoots(ctx context.Context, sr actors.ServerRequest) (json.RawMessage, error) {
	return f.ListRoots(ctx, sr.Server, f.askers.Pick(sr.Server, sr.Legacy, "", (*Asker).listsRoots, func() int { return f.pending(sr.Server, sr.Legacy) }))
}

// ListRoots answers one roots/list: through owner's handler (nil: the call
// has none, or belongs to no call), else the host's roots, else none.
// Every root must be a file:// URI.
func (f *Flows) ListRoots(ctx context.Context, server string, owner *Asker) (json.RawMessage, error) {
	list := f.o.Roots
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if owner != nil && owner.Roots != nil {
		// The request ends with the call it belongs to.
		list = owner.Roots
		defer context.AfterFunc(owner.Ctx, cancel)()
	}
	var roots []protocol.Root
	if list != nil {
		var err error
		if roots, err = list(ctx, server); err != nil {
			var perr *protocol.Error
			if errors.As(err, &perr) {
				return nil, perr // the client's JSON-RPC error passes through
			}
			return nil, err
		}
	}
	if roots == nil {
		roots = []protocol.Root{}
	}
	for _, r := range roots {
		if !strings.HasPrefix(r.URI, "file://") {
			return nil, fmt.Errorf("root %q is not a file:// URI", r.URI)
		}
	}
	return json.Marshal(protocol.ListRootsResult{Roots: roots})
}

// Fulfil answers one input request of a modern server's input_required
// result with the handler a legacy server's request of that method gets,
// preferring owner's (nil: the call has none of its own).
func (f *Flows) Fulfil(ctx context.Context, server string, owner *Asker, req protocol.InputRequest) (json.RawMessage, error) {
	switch req.Method {
	case protocol.MethodElicitationCreate:
		if !f.Elicits() && (owner == nil || owner.Elicit == nil) {
			return nil, errors.New("this host does not declare elicitation")
		}
		return f.Elicit(ctx, server, req.Params, func(*elicit.Request) *Asker { return owner })
	case protocol.MethodSamplingCreateMessage:
		return f.Sample(ctx, server, req.Params, func(json.RawMessage) *Asker { return owner })
	case protocol.MethodRootsList:
		if !f.Roots() && (owner == nil || owner.Roots == nil) {
			return nil, errors.New("this host does not declare roots")
		}
		return f.ListRoots(ctx, server, owner)
	}
	return nil, fmt.Errorf("unknown input request method %q", req.Method)
}

// Ask answers a question (elicitation/create, sampling/createMessage) a
// server on another member of the cluster asked during a call made here:
// through owner's handlers (nil: the call has none), else the host's.
func (f *Flows) Ask(ctx context.Context, method, server string, params json.RawMessage, owner *Asker) (json.RawMessage, error) {
	switch method {
	case protocol.MethodElicitationCreate:
		return f.Elicit(ctx, server, params, func(*elicit.Request) *Asker { return owner })
	case protocol.MethodSamplingCreateMessage:
		return f.Sample(ctx, server, params, func(json.RawMessage) *Asker { return owner })
	}
	return nil, fmt.Errorf("cluster: %s is not asked of the calling member", method)
}

// pending counts the requests in flight on server's connection.
func (f *Flows) pending(server string, legacy bool) int {
	if f.o.PendingCalls == nil {
		return 0
	}
	return f.o.PendingCalls(server, legacy)
}
