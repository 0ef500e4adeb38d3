package mcpvisor

import (
	"context"
	"errors"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/pipeline"
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
	return h.pipe.Resources(ctx, server)
}

// ResourceTemplates lists every resource template of a server, walking all
// the pages of resources/templates/list, as Resources does.
func (h *Host) ResourceTemplates(ctx context.Context, server string) ([]ResourceTemplate, error) {
	return h.pipe.ResourceTemplates(ctx, server)
}

// Prompts lists every prompt of a server, walking all the pages of
// prompts/list, as Resources does; ErrUnsupported when the ready server
// declared no prompts.
//
// The prompts of a server with "prefix": false are remembered: they decide
// which names PromptName gives and ResolvePrompt takes.
func (h *Host) Prompts(ctx context.Context, server string) ([]Prompt, error) {
	prompts, err := h.pipe.Prompts(ctx, server)
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
	err := h.pipe.Request(ctx, server, protocol.MethodResourcesRead, uri, pipeline.NeedResources,
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
		if err := h.pipe.Supports(server, method, uri, pipeline.NeedSubscribe); err != nil {
			return err
		}
		err := h.rt.SubscribeResource(ctx, server, uri, on)
		if !errors.Is(err, actors.ErrLegacySubscribe) {
			if err != nil {
				return pipeline.OpError(server, method, uri, err)
			}
			return nil
		}
	}
	return h.pipe.Request(ctx, server, method, uri, pipeline.NeedSubscribe, protocol.SubscribeParams{URI: uri}, nil)
}

// GetPrompt renders a prompt with its arguments (prompts/get; args may be
// nil). A missing required argument is the server's JSON-RPC error
// (usually -32602). It blocks and fails as Prompts does.
func (h *Host) GetPrompt(ctx context.Context, server, name string, args map[string]string) (*GetPromptResult, error) {
	var res GetPromptResult
	err := h.pipe.Request(ctx, server, protocol.MethodPromptsGet, name, pipeline.NeedPrompts,
		protocol.GetPromptParams{Name: name, Arguments: args}, &res)
	if err != nil {
		return nil, err
	}
	return &res, nil
}
