package mcpvisor

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// Forwarding: a gateway serves its clients' requests by passing them to the
// server that owns the name, and the server's answer back, as the server
// wrote it (its _meta, cache hints and input requests included).

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
	// Elicitation and Sampling answer the server's requests that belong
	// to this request, as CallOptions' do for a call (and by the same
	// rule: Scope and Client name who asks; a request is the caller's only
	// when nothing else is in flight that could own it).
	Elicitation ElicitationHandler
	Sampling    SamplingHandler
	Scope       Scope
	Client      string
}

// forwardable are the methods Forward passes to a server, with the
// capability the server must have declared.
var forwardable = map[string]capability{
	protocol.MethodPromptsGet:         {"prompts", func(c protocol.ServerCapabilities) bool { return c.Prompts != nil }},
	protocol.MethodResourcesRead:      {"resources", func(c protocol.ServerCapabilities) bool { return c.Resources != nil }},
	protocol.MethodCompletionComplete: {"completions", func(c protocol.ServerCapabilities) bool { return len(c.Completions) > 0 }},
}

// Forward sends one request (prompts/get, resources/read or
// completion/complete) to server with params as the client gave them, and
// returns the server's result as the server wrote it. An input_required
// result is fulfilled by the host's handlers and the request retried, as
// for the host's own requests, unless opts.PassInput. A server's JSON-RPC
// error is a *protocol.Error (errors.As); a resources/read the server
// refused as not found is ErrResourceNotFound as well.
func (h *Host) Forward(ctx context.Context, server, method string, params json.RawMessage, opts ForwardOptions) (json.RawMessage, error) {
	need, ok := forwardable[method]
	if !ok {
		return nil, fmt.Errorf("mcpvisor: %s cannot be forwarded", method)
	}
	if err := h.supports(server, method, "", need); err != nil {
		return nil, err
	}
	co := &CallOptions{ClientCapabilities: opts.ClientCapabilities, PassInput: opts.PassInput,
		Elicitation: opts.Elicitation, Sampling: opts.Sampling, Client: opts.Client}
	res, err := h.calls(ctx, h.newRequest(opts.Scope, server, method, forwardSubject(method, params), params, co))
	if err != nil {
		return nil, opError(server, method, "", resourceNotFound(method, err))
	}
	return res.Raw, nil
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

// callMeta is the _meta a request to server carries besides the modern
// era's own: the caller's trace context, and, for a modern server, the
// capabilities of the client the request is made for.
func (h *Host) callMeta(ctx context.Context, server string, clientCaps json.RawMessage) json.RawMessage {
	meta := traceMeta(ctx)
	if len(clientCaps) == 0 || server == "" {
		return meta
	}
	if st, ok := h.rt.ServerStatus(server); !ok || !protocol.IsModern(st.ProtocolVersion) {
		return meta
	}
	caps, err := protocol.MergeMeta(nil, protocol.MetaClientCapabilities, clientCaps)
	if err != nil {
		return meta
	}
	if joined, err := protocol.JoinMeta(meta, caps); err == nil {
		return joined
	}
	return meta
}

// joinParamsMeta adds meta's members to params' _meta (params' own win).
func joinParamsMeta(params, meta json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	joined, err := protocol.JoinMeta(meta, p.Meta)
	if err != nil {
		return nil, err
	}
	return protocol.MergeMeta(params, "_meta", joined)
}
