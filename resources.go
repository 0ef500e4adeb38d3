package mcpvisor

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

// Resources and prompts, as servers send them.
type (
	// Resource is one entry of a server's resources/list.
	Resource = protocol.Resource
	// ResourceTemplate is one entry of resources/templates/list; its
	// URITemplate is an RFC 6570 template.
	ResourceTemplate = protocol.ResourceTemplate
	// ResourceContents is what resources/read returns for one URI: Text, or
	// Blob (base64) for binary contents.
	ResourceContents = protocol.ResourceContents
	// Prompt is one entry of a server's prompts/list.
	Prompt = protocol.Prompt
	// PromptArgument is an argument a Prompt accepts.
	PromptArgument = protocol.PromptArgument
	// PromptMessage is one message of a prompt: a role and a content block.
	PromptMessage = protocol.PromptMessage
	// GetPromptResult is a prompt rendered with its arguments.
	GetPromptResult = protocol.GetPromptResult
)

// maxListPages caps the pages one listing walks: a server that never
// clears its cursor gets a warning, not a hang (as tools/list does).
const maxListPages = 50

// Capabilities a request needs.
var (
	needResources = capability{"resources", func(c protocol.ServerCapabilities) bool { return c.Resources != nil }}
	needSubscribe = capability{"resources.subscribe", func(c protocol.ServerCapabilities) bool {
		return c.Resources != nil && c.Resources.Subscribe
	}}
	needPrompts = capability{"prompts", func(c protocol.ServerCapabilities) bool { return c.Prompts != nil }}
)

type capability struct {
	name     string
	declared func(protocol.ServerCapabilities) bool
}

// Resources lists every resource of a server, walking all the pages of
// resources/list. It blocks like Call: a server still starting is waited
// for, within its call timeout. A listing that does not end (more than 50
// pages, or a cursor the server already sent) stops with what was read and
// a warning in the host's log. Safe for concurrent use.
//
// Errors are ErrUnsupported when the ready server declared no resources,
// and otherwise those of Call (ErrUnknownServer, ErrUnavailable, ErrTimeout,
// a *protocol.Error…), wrapped with the server and the method.
func (h *Host) Resources(ctx context.Context, server string) ([]Resource, error) {
	return listAll(ctx, h, server, protocol.MethodResourcesList, needResources,
		func(raw json.RawMessage) ([]Resource, string, error) {
			var page protocol.ListResourcesResult
			err := json.Unmarshal(raw, &page)
			return page.Resources, page.NextCursor, err
		})
}

// ResourceTemplates lists every resource template of a server, walking all
// the pages of resources/templates/list, as Resources does.
func (h *Host) ResourceTemplates(ctx context.Context, server string) ([]ResourceTemplate, error) {
	return listAll(ctx, h, server, protocol.MethodResourcesTemplatesList, needResources,
		func(raw json.RawMessage) ([]ResourceTemplate, string, error) {
			var page protocol.ListResourceTemplatesResult
			err := json.Unmarshal(raw, &page)
			return page.ResourceTemplates, page.NextCursor, err
		})
}

// Prompts lists every prompt of a server, walking all the pages of
// prompts/list, as Resources does; ErrUnsupported when the ready server
// declared no prompts.
//
// The prompts of a server with "prefix": false are remembered: they decide
// which names PromptName gives and ResolvePrompt takes.
func (h *Host) Prompts(ctx context.Context, server string) ([]Prompt, error) {
	prompts, err := listAll(ctx, h, server, protocol.MethodPromptsList, needPrompts,
		func(raw json.RawMessage) ([]Prompt, string, error) {
			var page protocol.ListPromptsResult
			err := json.Unmarshal(raw, &page)
			return page.Prompts, page.NextCursor, err
		})
	if err == nil {
		h.notePrompts(server, prompts)
	}
	return prompts, err
}

// ReadResource reads one resource (resources/read). The server may answer
// with several contents, sub-resources of uri included. It blocks and fails
// as Resources does; a URI the server does not know is its JSON-RPC error
// (the spec suggests -32002).
func (h *Host) ReadResource(ctx context.Context, server, uri string) ([]ResourceContents, error) {
	var res protocol.ReadResourceResult
	err := h.request(ctx, server, protocol.MethodResourcesRead, uri, needResources,
		protocol.ReadResourceParams{URI: uri}, &res)
	if err != nil {
		return nil, err
	}
	return res.Contents, nil
}

// SubscribeResource asks the server to send notifications/resources/updated
// when the resource at uri changes; they reach the journal and the host's
// event subscribers as the server's other notifications do. It needs resources.subscribe
// declared (else ErrUnsupported), and blocks as Resources does.
//
// Subscriptions belong to the server's session: after a restart of the
// server they are gone, and must be made again.
//
// A 2026-07-28 server has no resources/subscribe: the uri joins the filter
// of its subscriptions/listen stream instead, and is asked for again after
// the server restarts.
func (h *Host) SubscribeResource(ctx context.Context, server, uri string) error {
	return h.subscribe(ctx, server, uri, true)
}

// UnsubscribeResource ends a subscription made with SubscribeResource.
func (h *Host) UnsubscribeResource(ctx context.Context, server, uri string) error {
	return h.subscribe(ctx, server, uri, false)
}

func (h *Host) subscribe(ctx context.Context, server, uri string, on bool) error {
	method := protocol.MethodResourcesSubscribe
	if !on {
		method = protocol.MethodResourcesUnsubscribe
	}
	if st, ok := h.rt.ServerStatus(server); ok && st.State == StateReady && protocol.IsModern(st.ProtocolVersion) {
		if err := h.supports(server, method, uri, needSubscribe); err != nil {
			return err
		}
		err := h.rt.SubscribeResource(ctx, server, uri, on)
		if !errors.Is(err, actors.ErrLegacySubscribe) {
			if err != nil {
				return opError(server, method, uri, err)
			}
			return nil
		}
	}
	return h.request(ctx, server, method, uri, needSubscribe, protocol.SubscribeParams{URI: uri}, nil)
}

// GetPrompt renders a prompt with its arguments (prompts/get; args may be
// nil). A missing required argument is the server's JSON-RPC error
// (usually -32602). It blocks and fails as Prompts does.
func (h *Host) GetPrompt(ctx context.Context, server, name string, args map[string]string) (*GetPromptResult, error) {
	var res GetPromptResult
	err := h.request(ctx, server, protocol.MethodPromptsGet, name, needPrompts,
		protocol.GetPromptParams{Name: name, Arguments: args}, &res)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// listAll walks every page of a paginated list method. The cursor is
// opaque: each page's nextCursor is sent back as it came.
func listAll[T any](ctx context.Context, h *Host, server, method string, need capability,
	decode func(json.RawMessage) ([]T, string, error)) ([]T, error) {
	if err := h.supports(server, method, "", need); err != nil {
		return nil, err
	}
	all := []T{}
	seen := map[string]bool{}
	var cursor string
	for pages := 1; ; pages++ {
		var raw json.RawMessage
		if err := h.request(ctx, server, method, "", capability{}, protocol.CursorParams{Cursor: cursor}, &raw); err != nil {
			return nil, err
		}
		items, next, err := decode(raw)
		if err != nil {
			return nil, opError(server, method, "", fmt.Errorf("malformed result: %w", err))
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
			h.opts.Logger.Warn(warn, "server", server, "listed", len(all))
			return all, nil
		}
		seen[next] = true
		cursor = next
	}
}

// request sends one request and decodes its result into out (nil: the
// result is not read). subject names what the request is about (a URI, a
// prompt) in errors.
func (h *Host) request(ctx context.Context, server, method, subject string, need capability, params, out any) error {
	if err := h.supports(server, method, subject, need); err != nil {
		return err
	}
	b, err := json.Marshal(params)
	if err != nil {
		return opError(server, method, subject, err)
	}
	var raw json.RawMessage
	if inputMethods[method] {
		// A request a person may be asked about: through the pipeline, so
		// it is traced, in the history, seen by the embedder's stages, and
		// its input rounds are the input stage's.
		var res *Result
		if res, err = h.calls(ctx, h.newRequest(Scope{}, server, method, subject, b, nil)); err == nil {
			raw = res.Raw
		}
	} else {
		raw, err = h.serverRequest(ctx, server, method, b, nil)
	}
	if err != nil {
		return opError(server, method, subject, resourceNotFound(method, err))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return opError(server, method, subject, fmt.Errorf("malformed result: %w", err))
	}
	return nil
}

// inputMethods are the requests besides tools/call a server may answer
// with input_required (SEP-2322); they, and completion/complete, pass the
// request pipeline.
var inputMethods = map[string]bool{protocol.MethodPromptsGet: true, protocol.MethodResourcesRead: true}

// resourceNotFound puts ErrResourceNotFound on a resources/read refused
// with -32002 (2025-11-25) or -32602 (2026-07-28).
func resourceNotFound(method string, err error) error {
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

// supports is ErrUnsupported when server is ready and did not declare
// need. A server not ready yet has declared nothing so far: the request is
// sent, and the runtime waits for the server (or says why it cannot).
func (h *Host) supports(server, method, subject string, need capability) error {
	if need.declared == nil {
		return nil
	}
	st, ok := h.rt.ServerStatus(server)
	if !ok || st.State != StateReady || need.declared(st.Capabilities) {
		return nil
	}
	return opError(server, method, subject,
		fmt.Errorf("%w (no %s capability in its initialize result)", ErrUnsupported, need.name))
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

func opError(server, method, subject string, err error) error {
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
