package protocol

import "encoding/json"

// Prompt is one entry of a prompts/list result.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon           `json:"icons,omitempty"`
	Meta        json.RawMessage  `json:"_meta,omitempty"`
}

// PromptArgument is an argument a prompt accepts.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// ListPromptsResult is one page of prompts/list; an empty NextCursor ends
// it.
type ListPromptsResult struct {
	Prompts    []Prompt        `json:"prompts"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON writes a nil Prompts as [], since prompts is required.
func (r ListPromptsResult) MarshalJSON() ([]byte, error) {
	type wire ListPromptsResult
	if r.Prompts == nil {
		r.Prompts = []Prompt{}
	}
	return json.Marshal(wire(r))
}

// GetPromptParams are the params of prompts/get.
type GetPromptParams struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
	Meta      json.RawMessage   `json:"_meta,omitempty"`
}

// GetPromptResult is the result of prompts/get.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON writes a nil Messages as [], since messages is required.
func (r GetPromptResult) MarshalJSON() ([]byte, error) {
	type wire GetPromptResult
	if r.Messages == nil {
		r.Messages = []PromptMessage{}
	}
	return json.Marshal(wire(r))
}

// PromptMessage is one message of a prompt; Role is RoleUser or
// RoleAssistant.
type PromptMessage struct {
	Role    string       `json:"role"`
	Content ContentBlock `json:"content"`
}
