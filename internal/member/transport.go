package member

import (
	"context"
	"encoding/json"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/pipeline"
)

// Transport is where the host's request pipeline sends requests
// (pipeline.Transport): a server another member of the cluster runs to
// that member, any other to the runtime; a per-user server's calls to the
// user's own instance.
type Transport struct {
	Runtime *actors.Runtime
	Replica Replica // nil outside a cluster
	// Instance is the server a call for user runs on: a per-user server's
	// instance of the user's, else server itself.
	Instance func(ctx context.Context, server, user string) (string, error)
}

var _ pipeline.Transport = Transport{}

// owner is the member server runs on when not this one ("": here).
func (t Transport) owner(server string) string {
	if t.Replica == nil {
		return ""
	}
	return t.Replica.Owner(server)
}

// Call sends c's tools/call.
func (t Transport) Call(ctx context.Context, c *pipeline.Call, meta json.RawMessage, ro *actors.CallOptions) (json.RawMessage, error) {
	tool, o := c.Tool, c.Options
	if c.Server != "" && t.Instance != nil {
		name, err := t.Instance(ctx, c.Server, o.User)
		if err != nil {
			return nil, err
		}
		if name != c.Server {
			tool = actors.ToolName(name, c.Name)
		}
	}
	if owner := t.owner(c.Server); owner != "" {
		// Placed on another member of the cluster: one hop there.
		return t.Replica.Forward(ctx, owner, Request{Server: c.Server, Tool: tool, Params: c.Arguments,
			Meta: meta, Timeout: o.Timeout, Task: ro.Task, Input: ro.Input,
			ResetTimeoutOnProgress: o.ResetTimeoutOnProgress, MaxTotalTimeout: o.MaxTotalTimeout, Legacy: ro.Legacy,
			ProgressToken: pipeline.ProgressToken(ro.Progress), OnProgress: o.OnProgress})
	}
	return t.Runtime.Call(ctx, tool, c.Arguments, meta, ro)
}

// Request sends a request of any method to a server, wherever it runs.
func (t Transport) Request(ctx context.Context, server, method string, params json.RawMessage, ro *actors.CallOptions) (json.RawMessage, error) {
	if owner := t.owner(server); owner != "" {
		r := Request{Server: server, Method: method, Params: params}
		if ro != nil {
			r.Timeout, r.Legacy = ro.Timeout, ro.Legacy
		}
		return t.Replica.Forward(ctx, owner, r)
	}
	return t.Runtime.Request(ctx, server, method, params, ro)
}
