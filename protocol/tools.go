package protocol

import "encoding/json"

// Tool is one entry of a tools/list result. Schemas stay raw: the host hands
// them on without decoding them.
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is required: a JSON Schema object (2020-12 unless it says
	// otherwise in $schema) whose root type is "object".
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Icons        []Icon           `json:"icons,omitempty"`
	Execution    *ToolExecution   `json:"execution,omitempty"`
	Meta         json.RawMessage  `json:"_meta,omitempty"`
}

// ToolAnnotations are hints from the server. They are untrusted unless the
// server is: never let an untrusted server's hints relax a policy.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`    // default false
	DestructiveHint *bool  `json:"destructiveHint,omitempty"` // default true; meaningful only if not read-only
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`  // default false
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`   // default true
}

// ToolExecution says whether a tool may or must run as a task.
type ToolExecution struct {
	TaskSupport string `json:"taskSupport,omitempty"`
}

// Values of ToolExecution.TaskSupport; empty means TaskSupportForbidden.
const (
	TaskSupportForbidden = "forbidden"
	TaskSupportOptional  = "optional"
	TaskSupportRequired  = "required"
)

// Destructive reports whether a call to the tool may destroy something,
// reading the hints with the spec's defaults: a read-only tool is not
// destructive; otherwise destructiveHint decides, and a tool that says
// nothing is taken to be destructive.
func (t *Tool) Destructive() bool {
	a := t.Annotations
	if a == nil {
		return true
	}
	if a.ReadOnlyHint != nil && *a.ReadOnlyHint {
		return false
	}
	if a.DestructiveHint != nil {
		return *a.DestructiveHint
	}
	return true
}

// DisplayName is the name to show a person: title, then annotations.title,
// then name.
func (t *Tool) DisplayName() string {
	switch {
	case t.Title != "":
		return t.Title
	case t.Annotations != nil && t.Annotations.Title != "":
		return t.Annotations.Title
	}
	return t.Name
}

// ListToolsParams are the params of tools/list. The cursor is opaque.
type ListToolsParams struct {
	Cursor string `json:"cursor,omitempty"`
}

// ListToolsResult is one page of tools/list; an empty NextCursor ends it.
type ListToolsResult struct {
	Tools      []Tool `json:"tools"`
	NextCursor string `json:"nextCursor,omitempty"`
	Cache
}

// MarshalJSON writes a nil Tools as [], since tools is required.
func (r ListToolsResult) MarshalJSON() ([]byte, error) {
	type wire ListToolsResult
	if r.Tools == nil {
		r.Tools = []Tool{}
	}
	return json.Marshal(wire(r))
}

// CallToolParams are the params of tools/call. The host writes them with
// AppendCallTool; the type is for decoding and for tests.
type CallToolParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
}

// CallToolResult is the result of tools/call. IsError marks the tool's own
// failure (bad input, an API error), which the model should see: it is not a
// protocol error.
type CallToolResult struct {
	Content []ContentBlock `json:"content"`
	// StructuredContent is an object conforming to the tool's OutputSchema.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON writes a nil Content as [], since content is required.
func (r CallToolResult) MarshalJSON() ([]byte, error) {
	type wire CallToolResult
	if r.Content == nil {
		r.Content = []ContentBlock{}
	}
	return json.Marshal(wire(r))
}
