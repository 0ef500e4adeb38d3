package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Tool is one tool the server offers. Handler is not sent on the wire.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`

	Handler ToolHandler `json:"-"`
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
	RequestID json.RawMessage // the client's JSON-RPC id, byte for byte
	Name      string
	Arguments json.RawMessage // the arguments object; "{}" when the client sent none
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
	Content           []any `json:"content"`
	StructuredContent any   `json:"structuredContent,omitempty"`
	IsError           bool  `json:"isError,omitempty"`
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
