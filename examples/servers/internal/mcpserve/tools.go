package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Tool is one tool the server offers. Handler is not sent on the wire.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	Icons        []Icon          `json:"icons,omitempty"`
	// Meta is listed as the tool's _meta (MCP Apps: {"ui":{"resourceUri":…}}).
	Meta json.RawMessage `json:"_meta,omitempty"`
	// TaskSupport is listed as execution.taskSupport: "" (left out, which
	// means "forbidden"), TaskSupportForbidden, TaskSupportOptional or
	// TaskSupportRequired. It matters only when Options.Tasks is set.
	TaskSupport string `json:"-"`
	// Resumable says the handler may run again in a new server process for
	// a task that was still working when the previous one died (see
	// Options.TaskStateDir). Such a handler must derive its outcome from
	// the call's arguments and TaskCreatedAt alone.
	Resumable bool `json:"-"`

	Handler ToolHandler `json:"-"`
}

// Values of Tool.TaskSupport.
const (
	TaskSupportForbidden = "forbidden"
	TaskSupportOptional  = "optional"
	TaskSupportRequired  = "required"
)

// MarshalJSON writes the tool as tools/list lists it, with TaskSupport as
// execution.taskSupport.
func (t Tool) MarshalJSON() ([]byte, error) {
	type wire Tool
	type execution struct {
		TaskSupport string `json:"taskSupport"`
	}
	v := struct {
		wire
		Execution *execution `json:"execution,omitempty"`
	}{wire: wire(t)}
	if t.TaskSupport != "" {
		v.Execution = &execution{TaskSupport: t.TaskSupport}
	}
	// Not json.Marshal: it would escape <, > and & in descriptions, which
	// the frame encoder leaves alone.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// Icon is one of a tool's icons.
type Icon struct {
	Src      string   `json:"src"`
	MimeType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
}

// Annotations are the ToolAnnotations hints. Nil pointers are left out, so
// the spec's defaults apply.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Bool returns a pointer to b, for Annotations.
func Bool(b bool) *bool { return &b }

// ToolCall is what a ToolHandler receives.
type ToolCall struct {
	Server    *Server
	RequestID json.RawMessage // the client's JSON-RPC id, byte for byte; nil for a resumed task
	Name      string
	Arguments json.RawMessage // the arguments object; "{}" when the client sent none
	Meta      json.RawMessage // the call's params._meta; nil when absent

	// TaskID is the task the call runs as, "" for a plain call.
	// TaskCreatedAt is when that task was created (to the millisecond, as
	// reported to the client); it survives a restart, so a Resumable
	// handler can compute its outcome from it.
	TaskID        string
	TaskCreatedAt time.Time

	// ProtocolVersion is the modern revision the request declared in its
	// _meta (Options.Modern), "" for a request of the legacy era.
	ProtocolVersion string
	// ClientCapabilities are the client's capabilities (a JSON object):
	// those of the modern request's _meta, else those initialize declared;
	// nil when unknown.
	ClientCapabilities json.RawMessage

	task  *serverTask
	ext   *extTask    // the tasks extension's task the call runs as
	input *inputRound // a modern request's input (MRTR)
}

// Progress sends notifications/progress for the call with the
// _meta.progressToken the client sent, and the related-task _meta when the
// call is a task. total may be nil and message empty. Without a token it
// sends nothing and returns nil. progress must increase from one
// notification to the next; the caller sees to that. Safe for concurrent
// use, but notifications must stop once the handler has returned.
func (c *ToolCall) Progress(progress float64, total *float64, message string) error {
	token := c.progressToken()
	if token == nil {
		return nil
	}
	params := struct {
		Token    json.RawMessage `json:"progressToken"`
		Progress float64         `json:"progress"`
		Total    *float64        `json:"total,omitempty"`
		Message  string          `json:"message,omitempty"`
		Meta     map[string]any  `json:"_meta,omitempty"`
	}{Token: token, Progress: progress, Total: total, Message: message}
	if c.TaskID != "" {
		params.Meta = relatedTaskMeta(c.TaskID)
	}
	return c.Server.Notify("notifications/progress", params)
}

// progressToken returns _meta.progressToken, or nil when there is none.
func (c *ToolCall) progressToken() json.RawMessage {
	var meta struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	}
	if len(c.Meta) == 0 || json.Unmarshal(c.Meta, &meta) != nil {
		return nil
	}
	if len(meta.ProgressToken) == 0 || bytes.Equal(meta.ProgressToken, jsonNull) {
		return nil
	}
	return meta.ProgressToken
}

// Call sends the client a request on the call's behalf (elicitation/create,
// sampling/createMessage, roots/list) and blocks until the answer, ctx or
// the server's end, as Server.Call does. For a task, params (nil, or
// anything that encodes as a JSON object) get the related-task _meta, and
// the task's status is input_required while the answer is awaited.
//
// In a task of the tasks extension the request becomes one of the task's
// inputRequests and Call blocks until tasks/update answers it. In another
// modern request (ProtocolVersion set) nothing is sent and nothing
// blocks: Call returns the answer the client gave in this request's input,
// or ErrInputRequired. The handler must then return (what it returns is
// ignored); the client is asked through an input_required result, answers,
// and the handler runs again from the start, its asks now answered. The
// handler must therefore do nothing before an ask that it cannot do again.
// A method the client did not declare the capability for is
// ErrMissingClientCapability, one an input_required result cannot carry
// ErrNotInputRequest.
func (c *ToolCall) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if c.ext != nil || c.input != nil {
		capability, ok := inputMethods[method]
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrNotInputRequest, method)
		}
		if !hasCapability(c.ClientCapabilities, capability) {
			return nil, fmt.Errorf("%w: %s needs %s", ErrMissingClientCapability, method, capability)
		}
		raw, err := encodeJSON(params)
		if err != nil {
			return nil, fmt.Errorf("mcpserve: %s params: %w", method, err)
		}
		if c.ext != nil {
			return c.Server.askExt(ctx, c.ext, method, raw)
		}
		return c.input.ask(method, raw)
	}
	if c.task == nil {
		return c.Server.Call(ctx, method, params)
	}
	tagged, err := withRelatedTask(params, c.TaskID)
	if err != nil {
		return nil, fmt.Errorf("mcpserve: %s params: %w", method, err)
	}
	c.Server.awaitInput(c.task, true)
	defer c.Server.awaitInput(c.task, false)
	return c.Server.Call(ctx, method, tagged)
}

// Bind decodes the call's arguments into v, rejecting unknown fields.
func (c *ToolCall) Bind(v any) error {
	dec := json.NewDecoder(bytes.NewReader(c.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments for %s: %w", c.Name, err)
	}
	return nil
}

// ToolHandler runs a tool. A tool's own failure is a result with IsError set
// (see ErrorResult); a returned *Error becomes a JSON-RPC error response, and
// any other error becomes an IsError result carrying its message. If ctx is
// cancelled (the client sent notifications/cancelled, or the input ended) the
// result is discarded and nothing is sent.
type ToolHandler func(ctx context.Context, call *ToolCall) (*CallToolResult, error)

// CallToolResult is the result of tools/call.
type CallToolResult struct {
	// ResultType is set to ResultComplete for a modern request.
	ResultType        string `json:"resultType,omitempty"`
	Content           []any  `json:"content"`
	StructuredContent any    `json:"structuredContent,omitempty"`
	IsError           bool   `json:"isError,omitempty"`
	// Meta is the result's _meta. tasks/result sets the related-task entry.
	Meta map[string]any `json:"_meta,omitempty"`
}

// TextContent is a text content block.
type TextContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Text returns a text content block.
func Text(s string) TextContent { return TextContent{Type: "text", Text: s} }

// ImageContent is an image content block; Data is base64.
type ImageContent struct {
	Type     string `json:"type"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

// Image returns an image content block.
func Image(base64Data, mimeType string) ImageContent {
	return ImageContent{Type: "image", Data: base64Data, MimeType: mimeType}
}

// TextResult returns a result holding one text block.
func TextResult(s string) *CallToolResult {
	return &CallToolResult{Content: []any{Text(s)}}
}

// ErrorResult returns a tool execution error: a result with IsError set and
// the message as text, which the client should show the model.
func ErrorResult(format string, args ...any) *CallToolResult {
	return &CallToolResult{Content: []any{Text(fmt.Sprintf(format, args...))}, IsError: true}
}

// StructuredResult returns a result with structuredContent v and, for
// clients that ignore it, the same JSON as a text block.
func StructuredResult(v any) (*CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &CallToolResult{Content: []any{Text(string(b))}, StructuredContent: v}, nil
}

// ListToolsResult is the result of tools/list.
type ListToolsResult struct {
	Tools      []Tool `json:"tools"`
	NextCursor string `json:"nextCursor,omitempty"`
}
