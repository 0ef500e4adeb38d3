package protocol

import (
	"encoding/json"
	"fmt"
)

// The requests a server sends to the client (elicitation, sampling, roots)
// and the capability shapes that enable them.

// Elicitation modes. A request without a mode is form mode.
const (
	ElicitModeForm = "form"
	ElicitModeURL  = "url"
)

// ElicitRequestParams are the params of elicitation/create, and one entry of
// URLElicitationRequiredData. Form mode uses RequestedSchema; URL mode uses
// URL and ElicitationID.
type ElicitRequestParams struct {
	Mode    string `json:"mode,omitempty"`
	Message string `json:"message"`
	// RequestedSchema is a flat object schema of primitive properties.
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	// ElicitationID is opaque to the client, unique per server.
	ElicitationID string          `json:"elicitationId,omitempty"`
	Task          *TaskMetadata   `json:"task,omitempty"`
	Meta          json.RawMessage `json:"_meta,omitempty"`
}

// EffectiveMode returns Mode, or ElicitModeForm when it is empty, as the
// spec requires.
func (p *ElicitRequestParams) EffectiveMode() string {
	if p.Mode == "" {
		return ElicitModeForm
	}
	return p.Mode
}

// Elicitation actions.
const (
	ElicitAccept  = "accept"  // the user submitted (form) or consented (URL)
	ElicitDecline = "decline" // the user explicitly refused
	ElicitCancel  = "cancel"  // the user dismissed the request
)

// ElicitResult is the client's answer to elicitation/create. Content holds
// the form's answers when Action is accept in form mode: each value is a
// string, a number, a bool or a []string.
type ElicitResult struct {
	Action  string          `json:"action"`
	Content map[string]any  `json:"content,omitempty"`
	Meta    json.RawMessage `json:"_meta,omitempty"`
}

// Validate checks that Action is one of the three actions. It returns an
// error wrapping ErrInvalidResult.
func (r *ElicitResult) Validate() error {
	switch r.Action {
	case ElicitAccept, ElicitDecline, ElicitCancel:
		return nil
	}
	return fmt.Errorf("%w: elicitation action %q", ErrInvalidResult, r.Action)
}

// ElicitationCompleteParams are the params of
// notifications/elicitation/complete. Unknown or repeated ids must be
// ignored.
type ElicitationCompleteParams struct {
	ElicitationID string `json:"elicitationId"`
}

// URLElicitationRequiredData is the data of a CodeURLElicitationRequired
// error: URL-mode elicitations the user must complete before a retry.
type URLElicitationRequiredData struct {
	Elicitations []ElicitRequestParams `json:"elicitations"`
}

// MarshalJSON writes a nil Elicitations as [], since it is required.
func (d URLElicitationRequiredData) MarshalJSON() ([]byte, error) {
	type wire URLElicitationRequiredData
	if d.Elicitations == nil {
		d.Elicitations = []ElicitRequestParams{}
	}
	return json.Marshal(wire(d))
}

// Message roles, in sampling and prompts.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Content block types that appear only in sampling messages.
const (
	ContentToolUse    = "tool_use"
	ContentToolResult = "tool_result"
)

// SamplingMessage is one message of sampling/createMessage. Content is a
// single block or an array of blocks (text, image, audio, tool_use,
// tool_result), kept raw.
type SamplingMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Meta    json.RawMessage `json:"_meta,omitempty"`
}

// CreateMessageParams are the params of sampling/createMessage. Tools and
// ToolChoice may be present only if the client declared sampling.tools.
type CreateMessageParams struct {
	Messages         []SamplingMessage `json:"messages"`
	ModelPreferences json.RawMessage   `json:"modelPreferences,omitempty"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	// IncludeContext is "none" (the default), "thisServer" or "allServers";
	// the last two need the sampling.context capability.
	IncludeContext string          `json:"includeContext,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	MaxTokens      int             `json:"maxTokens"`
	StopSequences  []string        `json:"stopSequences,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	Tools          json.RawMessage `json:"tools,omitempty"`
	ToolChoice     json.RawMessage `json:"toolChoice,omitempty"`
	Task           *TaskMetadata   `json:"task,omitempty"`
	Meta           json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON writes a nil Messages as [], since messages is required.
func (p CreateMessageParams) MarshalJSON() ([]byte, error) {
	type wire CreateMessageParams
	if p.Messages == nil {
		p.Messages = []SamplingMessage{}
	}
	return json.Marshal(wire(p))
}

// Stop reasons of a CreateMessageResult; any other string is allowed too.
const (
	StopEndTurn      = "endTurn"
	StopStopSequence = "stopSequence"
	StopMaxTokens    = "maxTokens"
	StopToolUse      = "toolUse"
)

// CreateMessageResult is the client's answer to sampling/createMessage.
// Content is a single block or an array of blocks, kept raw.
type CreateMessageResult struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Model      string          `json:"model"`
	StopReason string          `json:"stopReason,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// Validate checks the members the schema requires: a user or assistant
// role, content that is an object or an array, and a model name. It returns
// an error wrapping ErrInvalidResult.
func (r *CreateMessageResult) Validate() error {
	if r.Role != RoleUser && r.Role != RoleAssistant {
		return fmt.Errorf("%w: sampling role %q", ErrInvalidResult, r.Role)
	}
	if c := trimSpace(r.Content); len(c) == 0 || (c[0] != '{' && c[0] != '[') || !json.Valid(c) {
		return fmt.Errorf("%w: sampling content is not a block or an array", ErrInvalidResult)
	}
	if r.Model == "" {
		return fmt.Errorf("%w: sampling result has no model", ErrInvalidResult)
	}
	return nil
}

// Root is one entry of a roots/list result. URI must be a file:// URI.
type Root struct {
	URI  string          `json:"uri"`
	Name string          `json:"name,omitempty"`
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// ListRootsResult is the client's answer to roots/list.
type ListRootsResult struct {
	Roots []Root          `json:"roots"`
	Meta  json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON writes a nil Roots as [], since roots is required.
func (r ListRootsResult) MarshalJSON() ([]byte, error) {
	type wire ListRootsResult
	if r.Roots == nil {
		r.Roots = []Root{}
	}
	return json.Marshal(wire(r))
}

// ElicitationCapability is the client's elicitation capability, to marshal
// into ClientCapabilities.Elicitation. Declare at least one mode; {} means
// form only.
type ElicitationCapability struct {
	Form *struct{} `json:"form,omitempty"`
	URL  *struct{} `json:"url,omitempty"`
}

// SamplingCapability is the client's sampling capability, to marshal into
// ClientCapabilities.Sampling. Tools allows tools and toolChoice in
// requests; Context allows includeContext other than "none".
type SamplingCapability struct {
	Tools   *struct{} `json:"tools,omitempty"`
	Context *struct{} `json:"context,omitempty"`
}

// TaskToolCalls reports whether the server declared tasks.requests.tools.call.
// Without it no tools/call to the server may be task-augmented.
func (c ServerCapabilities) TaskToolCalls() bool {
	return declared(c.Tasks, "requests", "tools", "call")
}

// TasksCancel reports whether the server declared tasks.cancel, which
// tasks/cancel needs.
func (c ServerCapabilities) TasksCancel() bool { return declared(c.Tasks, "cancel") }

// TasksList reports whether the server declared tasks.list, which
// tasks/list needs.
func (c ServerCapabilities) TasksList() bool { return declared(c.Tasks, "list") }

// LoggingDeclared reports whether the server declared logging, which
// logging/setLevel needs.
func (c ServerCapabilities) LoggingDeclared() bool { return declaredRaw(c.Logging) }

// CompletionsDeclared reports whether the server declared completions,
// which completion/complete needs.
func (c ServerCapabilities) CompletionsDeclared() bool { return declaredRaw(c.Completions) }

// declaredRaw reports whether a raw capability is present and neither null
// nor false.
func declaredRaw(raw json.RawMessage) bool {
	v := trimSpace(raw)
	return len(v) > 0 && !isNull(v) && string(v) != "false"
}
