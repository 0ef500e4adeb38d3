package mcpvisor

import (
	"context"
	"encoding/json"

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
