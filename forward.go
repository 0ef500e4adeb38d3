package mcpvisor

import (
	"context"
	"encoding/json"

	"github.com/mcpvisor/mcpvisor/pipeline"
)

// ForwardOptions tune Host.Forward.
type ForwardOptions = pipeline.ForwardOptions

// Forwarding: a gateway serves its clients' requests by passing them to the
// server that owns the name, and the server's answer back, as the server
// wrote it (its _meta, cache hints and input requests included).

// Forward sends one request (prompts/get, resources/read or
// completion/complete) to server with params as the client gave them, and
// returns the server's result as the server wrote it. An input_required
// result is fulfilled by the host's handlers and the request retried, as
// for the host's own requests, unless opts.PassInput. A server's JSON-RPC
// error is a *protocol.Error (errors.As); a resources/read the server
// refused as not found is ErrResourceNotFound as well.
func (h *Host) Forward(ctx context.Context, server, method string, params json.RawMessage, opts ForwardOptions) (json.RawMessage, error) {
	return h.pipe.Forward(ctx, server, method, params, opts)
}
