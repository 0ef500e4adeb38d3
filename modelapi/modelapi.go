// Package modelapi hands the host's tools to the model APIs in their own
// formats, and a call's result back as the message each expects:
// Anthropic's Messages API, OpenAI's Chat Completions and Responses APIs,
// and Google's Gemini API. json.Marshal(host.Tools()) is MCP's shape
// (camelCase inputSchema, the host's own fields), which none of them
// takes.
//
//	tools := modelapi.Anthropic(session.Tools())
//	// ... the model answers a tool_use block {id, name, input} ...
//	res, err := session.Call(ctx, use.Name, use.Input)
//	block := modelapi.AnthropicResult(use.ID, res, err)
//
// A tool goes by the name the host exposes it under (Tool.Name), which
// the host already keeps to what the model APIs take, at most 64
// characters of [A-Za-z0-9_-] (Options.MaxToolName maps any other), and a
// call by that name reaches the tool. The package imports the host's
// lower floors only (actors, pipeline).
package modelapi

import (
	"encoding/json"
	"strings"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/pipeline"
)

// AnthropicTool is a tool as the Messages API takes it in "tools".
type AnthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Anthropic converts tools for the Messages API.
func Anthropic(tools []actors.Tool) []AnthropicTool {
	out := make([]AnthropicTool, len(tools))
	for i, t := range tools {
		out[i] = AnthropicTool{Name: t.Name, Description: description(t), InputSchema: objectSchema(t.InputSchema)}
	}
	return out
}

// OpenAITool is a tool as Chat Completions takes it in "tools".
type OpenAITool struct {
	Type     string         `json:"type"` // "function"
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is a Chat Completions tool's function.
type OpenAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// OpenAI converts tools for Chat Completions.
func OpenAI(tools []actors.Tool) []OpenAITool {
	out := make([]OpenAITool, len(tools))
	for i, t := range tools {
		out[i] = OpenAITool{Type: "function", Function: OpenAIFunction{Name: t.Name, Description: description(t), Parameters: objectSchema(t.InputSchema)}}
	}
	return out
}

// OpenAIResponsesTool is a tool as the Responses API takes it in "tools":
// the function's members beside "type".
type OpenAIResponsesTool struct {
	Type        string          `json:"type"` // "function"
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"` // false: MCP schemas are not written for strict mode
}

// OpenAIResponses converts tools for the Responses API.
func OpenAIResponses(tools []actors.Tool) []OpenAIResponsesTool {
	out := make([]OpenAIResponsesTool, len(tools))
	for i, t := range tools {
		out[i] = OpenAIResponsesTool{Type: "function", Name: t.Name, Description: description(t), Parameters: objectSchema(t.InputSchema)}
	}
	return out
}

// GeminiTool is the Gemini API's "tools" entry holding every function.
type GeminiTool struct {
	FunctionDeclarations []GeminiFunction `json:"functionDeclarations"`
}

// GeminiFunction is one of a Gemini tool's function declarations, its
// parameters given as JSON Schema (parametersJsonSchema), as MCP gives
// them, rather than in the OpenAPI subset of "parameters".
type GeminiFunction struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
}

// Gemini converts tools for the Gemini API: one tool of function
// declarations.
func Gemini(tools []actors.Tool) GeminiTool {
	out := GeminiTool{FunctionDeclarations: make([]GeminiFunction, len(tools))}
	for i, t := range tools {
		out.FunctionDeclarations[i] = GeminiFunction{Name: t.Name, Description: description(t), ParametersJSONSchema: objectSchema(t.InputSchema)}
	}
	return out
}

// description is the tool's description, its title before it when it has
// one the description does not start with.
func description(t actors.Tool) string {
	if t.Title != "" && !strings.HasPrefix(t.Description, t.Title) {
		if t.Description == "" {
			return t.Title
		}
		return t.Title + ": " + t.Description
	}
	return t.Description
}

// objectSchema is the tool's input schema, or an empty object's when it
// has none: every API wants an object schema.
func objectSchema(s json.RawMessage) json.RawMessage {
	if len(s) == 0 || string(s) == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return s
}

// AnthropicToolResult is a tool_result content block of a user message.
type AnthropicToolResult struct {
	Type      string           `json:"type"` // "tool_result"
	ToolUseID string           `json:"tool_use_id"`
	Content   []AnthropicBlock `json:"content"`
	IsError   bool             `json:"is_error,omitempty"`
}

// AnthropicBlock is a text or image block of a tool result.
type AnthropicBlock struct {
	Type   string           `json:"type"` // "text" or "image"
	Text   string           `json:"text,omitempty"`
	Source *AnthropicSource `json:"source,omitempty"`
}

// AnthropicSource is an image block's base64 data.
type AnthropicSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// anthropicImages are the image types the Messages API takes.
var anthropicImages = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// AnthropicResult is the tool_result block answering tool_use id with the
// call's outcome: the text the model is given (Result.Wire), the images
// the API takes as image blocks, and a failed call, or a tool error, as
// is_error with its message.
func AnthropicResult(toolUseID string, res *pipeline.Result, err error) AnthropicToolResult {
	text, isErr := outcome(res, err)
	out := AnthropicToolResult{Type: "tool_result", ToolUseID: toolUseID, IsError: isErr,
		Content: []AnthropicBlock{{Type: "text", Text: text}}}
	if res != nil && err == nil {
		for _, b := range res.Content {
			if b.Type == "image" && b.Data != "" && anthropicImages[b.MimeType] {
				out.Content = append(out.Content, AnthropicBlock{Type: "image", Source: &AnthropicSource{Type: "base64", MediaType: b.MimeType, Data: b.Data}})
			}
		}
	}
	return out
}

// OpenAIToolMessage is the Chat Completions message answering a tool call.
type OpenAIToolMessage struct {
	Role       string `json:"role"` // "tool"
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// OpenAIResult is the tool message answering tool call id: the text the
// model is given, or the failure's message.
func OpenAIResult(toolCallID string, res *pipeline.Result, err error) OpenAIToolMessage {
	text, _ := outcome(res, err)
	return OpenAIToolMessage{Role: "tool", ToolCallID: toolCallID, Content: text}
}

// OpenAIResponsesOutput is the Responses API input item answering a
// function call.
type OpenAIResponsesOutput struct {
	Type   string `json:"type"` // "function_call_output"
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

// OpenAIResponsesResult is the function_call_output answering call id.
func OpenAIResponsesResult(callID string, res *pipeline.Result, err error) OpenAIResponsesOutput {
	text, _ := outcome(res, err)
	return OpenAIResponsesOutput{Type: "function_call_output", CallID: callID, Output: text}
}

// GeminiPart is a content part holding a function response.
type GeminiPart struct {
	FunctionResponse GeminiFunctionResponse `json:"functionResponse"`
}

// GeminiFunctionResponse answers a functionCall of the same name (and id,
// when the call had one).
type GeminiFunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// GeminiResult is the part answering the functionCall name (the model's
// name for the tool) with id: {"output": ...} with the structured result
// when there is one, else its text, or {"error": message} for a failure,
// as the Gemini API's documentation lays out a response.
func GeminiResult(id, name string, res *pipeline.Result, err error) GeminiPart {
	text, isErr := outcome(res, err)
	var response []byte
	switch {
	case isErr:
		response, _ = json.Marshal(map[string]string{"error": text})
	case res.Type == pipeline.ResultJSON && json.Valid(res.JSON):
		response, _ = json.Marshal(map[string]json.RawMessage{"output": res.JSON})
	default:
		response, _ = json.Marshal(map[string]string{"output": text})
	}
	return GeminiPart{FunctionResponse: GeminiFunctionResponse{ID: id, Name: name, Response: response}}
}

// outcome is the text the model is given for a call and whether it
// failed: a call that returned an error, or a tool error.
func outcome(res *pipeline.Result, err error) (string, bool) {
	switch {
	case err != nil:
		return err.Error(), true
	case res == nil:
		return "", false
	}
	return res.Wire(), res.IsError
}
