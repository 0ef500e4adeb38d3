package mcpvisor

import (
	"context"
	"errors"
	"fmt"

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

// Resource URIs through the host name their server wherever two servers
// could share one: MCP Apps servers all list ui://<app>/mcp-app.html, and
// two filesystem servers both list file:///… . A ui:// URI is always
// namespaced by its server, ui://<rest> of server S being ui://S/<rest>, in
// the listings, in reads' contents and in tools' _meta (Tool.MCP); a URI of
// another scheme is the server's own, and a listing that merges servers
// (the gateway's) qualifies one that two of them list as
// mcpvisor://S/<own URI>. Both forms are functions of the server and its
// URI, never of which server listed first, and read back by
// SplitResourceURI.

// ResourceURI is the URI under which the host exposes server's resource
// uri: a ui:// URI namespaced by the server (ui://<rest> becomes
// ui://<server>/<rest>), any other URI as it is.
func ResourceURI(server, uri string) string { return actors.ExposedResourceURI(server, uri) }

// QualifiedResourceURI is the URI for server's resource uri when another
// server lists the same one: a ui:// URI as ResourceURI gives it, any other
// mcpvisor://<server>/<uri>.
func QualifiedResourceURI(server, uri string) string {
	return actors.QualifiedResourceURI(server, uri)
}

// SplitResourceURI reverses ResourceURI and QualifiedResourceURI: the
// server a ui://S/… or mcpvisor://S/… URI names and the server's own URI.
// ok is false for a URI of neither form.
func SplitResourceURI(uri string) (server, own string, ok bool) {
	return actors.SplitResourceURI(uri)
}

// resourceTarget is where a resource request for uri goes: the server and
// the server's own URI. A URI the host exposed for server (ResourceURI,
// QualifiedResourceURI) is turned back into the server's own; with server
// "", uri must be such a URI, and names the server. Any other URI is taken
// as server's own. exposed turns a URI of the server's answer into the
// form the caller used: qualified (QualifiedResourceURI) for a request by
// a namespaced URI, else with its ui:// URIs namespaced (ResourceURI).
func resourceTarget(server, uri string) (target, own string, exposed func(string) string, err error) {
	if s, o, ok := actors.SplitResourceURI(uri); ok && (server == "" || server == s) {
		return s, o, func(u string) string { return actors.QualifiedResourceURI(s, u) }, nil
	}
	if server == "" {
		return "", "", nil, fmt.Errorf("%w: resource %q names none (want ui://SERVER/… or mcpvisor://SERVER/…)", ErrUnknownServer, uri)
	}
	return server, uri, func(u string) string { return actors.ExposedResourceURI(server, u) }, nil
}

// Resources lists every resource of a server, walking all the pages of
// resources/list; ui:// URIs are namespaced (ResourceURI). It blocks like Call: a server still starting is waited
// for, within its call timeout. A listing that does not end (more than 50
// pages, or a cursor the server already sent) stops with what was read and
// a warning in the host's log. Safe for concurrent use.
//
// Errors are ErrUnsupported when the ready server declared no resources,
// and otherwise those of Call (ErrUnknownServer, ErrUnavailable, ErrTimeout,
// a *protocol.Error…), wrapped with the server and the method.
func (h *Host) Resources(ctx context.Context, server string) ([]Resource, error) {
	rs, err := h.pipe.Resources(ctx, server)
	for i := range rs {
		rs[i].URI = ResourceURI(server, rs[i].URI)
	}
	return rs, err
}

// ResourceTemplates lists every resource template of a server, walking all
// the pages of resources/templates/list, as Resources does; a ui:// template
// is namespaced as ResourceURI namespaces a URI, so its expansions are the
// URIs ReadResource takes.
func (h *Host) ResourceTemplates(ctx context.Context, server string) ([]ResourceTemplate, error) {
	ts, err := h.pipe.ResourceTemplates(ctx, server)
	for i := range ts {
		ts[i].URITemplate = ResourceURI(server, ts[i].URITemplate)
	}
	return ts, err
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
//
// uri is as the host lists it: a namespaced ui://<server>/… (or a
// mcpvisor://<server>/… one) is read from the server with the server's own
// URI, and the contents' URIs come back in the form uri has. With server
// "", such a URI names the server itself (else the error is
// ErrUnknownServer). Any other URI is the server's own.
func (h *Host) ReadResource(ctx context.Context, server, uri string) ([]ResourceContents, error) {
	server, own, exposed, err := resourceTarget(server, uri)
	if err != nil {
		return nil, err
	}
	var res protocol.ReadResourceResult
	err = h.pipe.Request(ctx, server, protocol.MethodResourcesRead, own, pipeline.NeedResources,
		protocol.ReadResourceParams{URI: own}, &res)
	if err != nil {
		return nil, err
	}
	for i := range res.Contents {
		res.Contents[i].URI = exposed(res.Contents[i].URI)
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
//
// uri is taken as ReadResource takes it (server "" and a namespaced URI
// included), and the server is asked with its own URI. Its
// notifications/resources/updated events carry the server's own URI, as
// the journal keeps them, beside Event.Server: ResourceURI(ev.Server, uri)
// is the URI the host lists.
func (h *Host) SubscribeResource(ctx context.Context, server, uri string) error {
	return h.subscribe(ctx, server, uri, true)
}

// UnsubscribeResource ends a subscription made with SubscribeResource.
func (h *Host) UnsubscribeResource(ctx context.Context, server, uri string) error {
	return h.subscribe(ctx, server, uri, false)
}

func (h *Host) subscribe(ctx context.Context, server, uri string, on bool) error {
	server, uri, _, err := resourceTarget(server, uri)
	if err != nil {
		return err
	}
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
