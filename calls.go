package mcpvisor

import (
	"context"
	"encoding/json"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/pipeline"
)

// The request pipeline's types (package pipeline): every call and request
// the host makes, the stages it passes, and the embedder's stages.
type (
	// Call is one request on its way through the pipeline.
	Call = pipeline.Call
	// CallFunc runs a call (pipeline.Func).
	CallFunc = pipeline.Func
	// CallMiddleware is one stage of the pipeline (pipeline.Middleware).
	CallMiddleware = pipeline.Middleware
	// CallOptions tune one call.
	CallOptions = pipeline.CallOptions
	// Result is a tool's answer, with its type kept end to end.
	Result = pipeline.Result
	// ResultType is how a result reaches a model: as a string or as JSON.
	ResultType = pipeline.ResultType
	// ContentBlock is one item of a tool result's content.
	ContentBlock = pipeline.ContentBlock
	// TaskInfo is a task as the host keeps it.
	TaskInfo = pipeline.TaskInfo
	// Progress is one notifications/progress of a call.
	Progress = pipeline.Progress
	// ElicitationHandler answers an elicitation.
	ElicitationHandler = pipeline.ElicitationHandler
	// SamplingHandler answers a server's sampling/createMessage.
	SamplingHandler = pipeline.SamplingHandler
	// ApprovalRequest is one host-tool call waiting for a decision.
	ApprovalRequest = pipeline.ApprovalRequest
	// ApprovalDecision answers an ApprovalRequest.
	ApprovalDecision = pipeline.ApprovalDecision
	// ApprovalFunc decides a host-tool call before it runs.
	ApprovalFunc = pipeline.ApprovalFunc
	// URLElicitationRequiredError is a server's -32042 answer.
	URLElicitationRequiredError = pipeline.URLElicitationRequiredError
	// SchemaError is a document that does not match its schema.
	SchemaError = pipeline.SchemaError
)

// Result types and schema error kinds.
const (
	ResultString            = pipeline.ResultString
	ResultJSON              = pipeline.ResultJSON
	SchemaArguments         = pipeline.SchemaArguments
	SchemaStructuredContent = pipeline.SchemaStructuredContent
)

// DefaultMaxInputRounds bounds the rounds of one request
// (Options.MaxInputRounds).
const DefaultMaxInputRounds = pipeline.DefaultMaxInputRounds

// call runs one call through the pipeline.
func (h *Host) call(ctx context.Context, scope Scope, tool string, args json.RawMessage, opts *CallOptions) (*Result, error) {
	return h.pipe.Run(ctx, h.pipe.NewCall(scope, tool, args, opts))
}

// transport is where the pipeline sends requests (pipeline.Transport): a
// per-user server's calls to the user's instance, a server another member
// of the cluster runs to that member, any other to the runtime.
type transport struct{ h *Host }

func (t transport) Call(ctx context.Context, c *Call, meta json.RawMessage, ro *actors.CallOptions) (json.RawMessage, error) {
	h, tool, o := t.h, c.Tool, c.Options
	if c.Server != "" {
		name, err := h.auth.InstanceFor(ctx, c.Server, o.User)
		if err != nil {
			return nil, err
		}
		if name != c.Server {
			tool = actors.ToolName(name, c.Name)
		}
	}
	if owner := h.remoteOwner(c.Server); owner != "" {
		// Placed on another member of the cluster: one hop there.
		return h.cluster.Forward(ctx, owner, member.Request{Server: c.Server, Tool: tool, Params: c.Arguments,
			Meta: meta, Timeout: o.Timeout, Task: ro.Task, Input: ro.Input,
			ResetTimeoutOnProgress: o.ResetTimeoutOnProgress, MaxTotalTimeout: o.MaxTotalTimeout,
			ProgressToken: pipeline.ProgressToken(ro.Progress), OnProgress: o.OnProgress})
	}
	return h.rt.Call(ctx, tool, c.Arguments, meta, ro)
}

// Request sends a request of any method to a server: to the member of the
// cluster it runs on, when that is not this host.
func (t transport) Request(ctx context.Context, server, method string, params json.RawMessage, ro *actors.CallOptions) (json.RawMessage, error) {
	h := t.h
	if owner := h.remoteOwner(server); owner != "" {
		r := member.Request{Server: server, Method: method, Params: params}
		if ro != nil {
			r.Timeout = ro.Timeout
		}
		return h.cluster.Forward(ctx, owner, r)
	}
	return h.rt.Request(ctx, server, method, params, ro)
}
