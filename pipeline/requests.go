package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Requests of other methods than tools/call: the host's listings, reads
// and renderings (resources, prompts), and the requests a gateway
// forwards. Those a person may be asked about pass the stages (Run);
// listings and subscriptions go to the server through the Transport.

// Errors of requests to servers.
var (
	// ErrUnsupported: the server is ready and did not declare, in its
	// initialize result, the capability a request needs.
	ErrUnsupported = errors.New("not supported by the server")
	// ErrResourceNotFound: resources/read of a URI the server does not
	// know (its -32002, or a 2026-07-28 server's -32602).
	ErrResourceNotFound = errors.New("resource not found")
)

// maxListPages caps the pages one listing walks: a server that never
// clears its cursor gets a warning, not a hang (as tools/list does).
const maxListPages = 50

// Capabilities requests need.
var (
	NeedResources = Capability{"resources", func(c protocol.ServerCapabilities) bool { return c.Resources != nil }}
	NeedSubscribe = Capability{"resources.subscribe", func(c protocol.ServerCapabilities) bool {
		return c.Resources != nil && c.Resources.Subscribe
	}}
	NeedPrompts = Capability{"prompts", func(c protocol.ServerCapabilities) bool { return c.Prompts != nil }}
)

// Capability is a server capability a request needs: its name in errors,
// and whether a server's capabilities declare it.
type Capability struct {
	Name     string
	Declared func(protocol.ServerCapabilities) bool
}

// ForwardOptions tune Host.Forward.
type ForwardOptions struct {
	// ClientCapabilities are the capabilities of the client the request is
	// made for, told to a modern server in place of the host's (see
	// CallOptions.ClientCapabilities).
	ClientCapabilities json.RawMessage
	// PassInput returns an input_required result as it is (the caller's
	// client answers and retries) instead of fulfilling it with the host's
	// handlers.
	PassInput bool
	// Elicitation, Sampling and Roots answer the server's requests that
	// belong to this request, as CallOptions' do for a call (and by the
	// same rule: Scope and Client name who asks; a request is the caller's
	// only when nothing else is in flight that could own it).
	Elicitation ElicitationHandler
	Sampling    SamplingHandler
	Roots       RootsProvider
	Scope       Scope
	Client      string
	// LegacyClient: the request is made for a client of a legacy revision
	// (see CallOptions.LegacyClient).
	LegacyClient bool
}

// forwardable are the methods Forward passes to a server, with the
// capability the server must have declared.
var forwardable = map[string]Capability{
	protocol.MethodPromptsGet:         {"prompts", func(c protocol.ServerCapabilities) bool { return c.Prompts != nil }},
	protocol.MethodResourcesRead:      {"resources", func(c protocol.ServerCapabilities) bool { return c.Resources != nil }},
	protocol.MethodCompletionComplete: {"completions", func(c protocol.ServerCapabilities) bool { return len(c.Completions) > 0 }},
}

// List walks every page of a paginated list method. The cursor is opaque:
// each page's nextCursor is sent back as it came. A listing that does not
// end (more than 50 pages, or a cursor the server already sent) stops with
// what was read and a warning in the log.
func List[T any](ctx context.Context, p *Pipeline, server, method string, need Capability,
	decode func(json.RawMessage) ([]T, string, error)) ([]T, error) {
	if err := p.Supports(server, method, "", need); err != nil {
		return nil, err
	}
	all := []T{}
	seen := map[string]bool{}
	var cursor string
	for pages := 1; ; pages++ {
		var raw json.RawMessage
		if err := p.Request(ctx, server, method, "", Capability{}, protocol.CursorParams{Cursor: cursor}, &raw); err != nil {
			return nil, err
		}
		items, next, err := decode(raw)
		if err != nil {
			return nil, OpError(server, method, "", fmt.Errorf("malformed result: %w", err))
		}
		all = append(all, items...)
		var warn string
		switch {
		case next == "":
			return all, nil
		case pages >= maxListPages:
			warn = fmt.Sprintf("%s: stopped after %d pages; the server keeps returning nextCursor", method, maxListPages)
		case seen[next]:
			warn = fmt.Sprintf("%s: the server repeated a cursor; listing stopped", method)
		}
		if warn != "" {
			p.cfg.Logger.Warn(warn, "server", server, "listed", len(all))
			return all, nil
		}
		seen[next] = true
		cursor = next
	}
}

// Request sends one request and decodes its result into out (nil: the
// result is not read). subject names what the request is about (a URI, a
// prompt) in errors.
func (p *Pipeline) Request(ctx context.Context, server, method, subject string, need Capability, params, out any) error {
	if err := p.Supports(server, method, subject, need); err != nil {
		return err
	}
	b, err := json.Marshal(params)
	if err != nil {
		return OpError(server, method, subject, err)
	}
	var raw json.RawMessage
	if TakesInput(method) {
		// A request a person may be asked about: through the pipeline, so
		// it is traced, in the history, seen by the embedder's stages, and
		// its input rounds are the input stage's.
		var res *Result
		if res, err = p.Run(ctx, NewRequest(Scope{}, server, method, subject, b, nil)); err == nil {
			raw = res.Raw
		}
	} else {
		raw, err = p.cfg.Transport.Request(ctx, server, method, b, nil)
	}
	if err != nil {
		return OpError(server, method, subject, ResourceNotFound(method, err))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return OpError(server, method, subject, fmt.Errorf("malformed result: %w", err))
	}
	return nil
}

// ResourceNotFound puts ErrResourceNotFound on a resources/read refused
// with -32002 (2025-11-25) or -32602 (2026-07-28).
func ResourceNotFound(method string, err error) error {
	var perr *protocol.Error
	if method != protocol.MethodResourcesRead || !errors.As(err, &perr) ||
		perr.Code != protocol.CodeResourceNotFound && perr.Code != protocol.CodeInvalidParams {
		return err
	}
	return &notFoundError{err}
}

// notFoundError is a resources/read error that errors.Is finds
// ErrResourceNotFound in, worded as the server worded it.
type notFoundError struct{ err error }

func (e *notFoundError) Error() string   { return e.err.Error() }
func (e *notFoundError) Unwrap() []error { return []error{ErrResourceNotFound, e.err} }

// Supports is ErrUnsupported when server is ready and did not declare
// need. A server not ready yet has declared nothing so far: the request is
// sent, and the runtime waits for the server (or says why it cannot).
func (p *Pipeline) Supports(server, method, subject string, need Capability) error {
	if need.Declared == nil {
		return nil
	}
	st, ok := p.cfg.Runtime.ServerStatus(server)
	if !ok || st.State != actors.StateReady || need.Declared(st.Capabilities) {
		return nil
	}
	return OpError(server, method, subject,
		fmt.Errorf("%w (no %s capability in its initialize result)", ErrUnsupported, need.Name))
}

// requestError is an error of one request, worded
// `server "x": resources/read "file:///a": code -32002: Resource not found`.
// It unwraps to the runtime's error, so errors.Is and errors.As see
// everything that one holds.
type requestError struct {
	msg string
	err error
}

func (e *requestError) Error() string { return e.msg }
func (e *requestError) Unwrap() error { return e.err }

func OpError(server, method, subject string, err error) error {
	op := method
	if subject != "" {
		op += " " + strconv.Quote(subject)
	}
	// The runtime already names the server and the method in most of its
	// errors (`server "x": resources/read: …`, `resources/read: timeout…`):
	// say each once, with the subject beside the method.
	msg := strings.TrimPrefix(err.Error(), "server "+strconv.Quote(server)+": ")
	msg = strings.TrimPrefix(msg, method+": ")
	return &requestError{msg: fmt.Sprintf("server %q: %s: %s", server, op, msg), err: err}
}

// forwardSubject is what a forwarded request is about (Call.Name): the
// prompt's name or the resource's URI; "" for completion/complete or
// params that do not say.
func forwardSubject(method string, params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	switch method {
	case protocol.MethodPromptsGet:
		return p.Name
	case protocol.MethodResourcesRead:
		return p.URI
	}
	return ""
}

// Forward sends one request (prompts/get, resources/read or
// completion/complete) to server with params as the client gave them, and
// returns the server's result as the server wrote it, through the stages.
func (p *Pipeline) Forward(ctx context.Context, server, method string, params json.RawMessage, opts ForwardOptions) (json.RawMessage, error) {
	need, ok := forwardable[method]
	if !ok {
		return nil, fmt.Errorf("mcpvisor: %s cannot be forwarded", method)
	}
	if err := p.Supports(server, method, "", need); err != nil {
		return nil, err
	}
	co := &CallOptions{ClientCapabilities: opts.ClientCapabilities, PassInput: opts.PassInput,
		Elicitation: opts.Elicitation, Sampling: opts.Sampling, Roots: opts.Roots, Client: opts.Client,
		LegacyClient: opts.LegacyClient}
	res, err := p.Run(ctx, NewRequest(opts.Scope, server, method, forwardSubject(method, params), params, co))
	if err != nil {
		return nil, OpError(server, method, "", ResourceNotFound(method, err))
	}
	return res.Raw, nil
}

// Resources lists every resource of server (resources/list, every page).
func (p *Pipeline) Resources(ctx context.Context, server string) ([]protocol.Resource, error) {
	return List(ctx, p, server, protocol.MethodResourcesList, NeedResources,
		func(raw json.RawMessage) ([]protocol.Resource, string, error) {
			var page protocol.ListResourcesResult
			err := json.Unmarshal(raw, &page)
			return page.Resources, page.NextCursor, err
		})
}

// ResourceTemplates lists every resource template of server
// (resources/templates/list, every page).
func (p *Pipeline) ResourceTemplates(ctx context.Context, server string) ([]protocol.ResourceTemplate, error) {
	return List(ctx, p, server, protocol.MethodResourcesTemplatesList, NeedResources,
		func(raw json.RawMessage) ([]protocol.ResourceTemplate, string, error) {
			var page protocol.ListResourceTemplatesResult
			err := json.Unmarshal(raw, &page)
			return page.ResourceTemplates, page.NextCursor, err
		})
}

// Prompts lists every prompt of server (prompts/list, every page).
func (p *Pipeline) Prompts(ctx context.Context, server string) ([]protocol.Prompt, error) {
	return List(ctx, p, server, protocol.MethodPromptsList, NeedPrompts,
		func(raw json.RawMessage) ([]protocol.Prompt, string, error) {
			var page protocol.ListPromptsResult
			err := json.Unmarshal(raw, &page)
			return page.Prompts, page.NextCursor, err
		})
}
