// Command modelsdkcheck reads the model APIs' tool and tool-result formats
// that package modelapi writes with the official SDKs' own types
// (anthropic-sdk-go, openai-go, Google's genai), which are generated from
// the APIs' published specifications, and prints what each SDK read: a
// member the SDK does not know under that name reads as empty. genai's
// types are decoded strictly (an unknown member is an error).
//
// It reads one JSON object on stdin, {"anthropicTools", "anthropicResult",
// "openaiTools", "openaiResult", "responsesTools", "responsesResult",
// "geminiTool", "geminiPart"}, and writes one on stdout with the same keys.
// It is a test peer of the mcpvisor module (internal/peers.ModelSDKCheck).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"
)

type input struct {
	AnthropicTools  []json.RawMessage `json:"anthropicTools"`
	AnthropicResult json.RawMessage   `json:"anthropicResult"`
	OpenAITools     []json.RawMessage `json:"openaiTools"`
	OpenAIResult    json.RawMessage   `json:"openaiResult"`
	ResponsesTools  []json.RawMessage `json:"responsesTools"`
	ResponsesResult json.RawMessage   `json:"responsesResult"`
	GeminiTool      json.RawMessage   `json:"geminiTool"`
	GeminiPart      json.RawMessage   `json:"geminiPart"`
}

// tool is what an SDK read of a tool.
type tool struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	SchemaType  string   `json:"schemaType"`
	Properties  []string `json:"properties"`
	Strict      *bool    `json:"strict,omitempty"`
}

// result is what an SDK read of a tool result.
type result struct {
	ID       string          `json:"id"`
	Name     string          `json:"name,omitempty"`
	IsError  bool            `json:"isError"`
	Texts    []string        `json:"texts"`
	Images   []string        `json:"images,omitempty"` // media type:data
	Response json.RawMessage `json:"response,omitempty"`
}

type output struct {
	AnthropicTools  []tool `json:"anthropicTools"`
	AnthropicResult result `json:"anthropicResult"`
	OpenAITools     []tool `json:"openaiTools"`
	OpenAIResult    result `json:"openaiResult"`
	ResponsesTools  []tool `json:"responsesTools"`
	ResponsesResult result `json:"responsesResult"`
	GeminiTools     []tool `json:"geminiTools"`
	GeminiPart      result `json:"geminiPart"`
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fail("stdin", err)
	}
	var out output
	for _, raw := range in.AnthropicTools {
		var p anthropic.ToolParam
		if err := json.Unmarshal(raw, &p); err != nil {
			fail("anthropic tool", err)
		}
		out.AnthropicTools = append(out.AnthropicTools, tool{Name: p.Name, Description: p.Description.Value,
			SchemaType: string(p.InputSchema.Type), Properties: keys(p.InputSchema.Properties)})
	}
	var ar anthropic.ToolResultBlockParam
	if err := json.Unmarshal(in.AnthropicResult, &ar); err != nil {
		fail("anthropic tool result", err)
	}
	out.AnthropicResult = result{ID: ar.ToolUseID, IsError: ar.IsError.Value}
	for _, c := range ar.Content {
		switch {
		case c.OfText != nil:
			out.AnthropicResult.Texts = append(out.AnthropicResult.Texts, c.OfText.Text)
		case c.OfImage != nil && c.OfImage.Source.OfBase64 != nil:
			out.AnthropicResult.Images = append(out.AnthropicResult.Images, string(c.OfImage.Source.OfBase64.MediaType)+":"+c.OfImage.Source.OfBase64.Data)
		}
	}
	for _, raw := range in.OpenAITools {
		var p openai.ChatCompletionFunctionToolParam
		if err := json.Unmarshal(raw, &p); err != nil {
			fail("openai tool", err)
		}
		out.OpenAITools = append(out.OpenAITools, tool{Name: p.Function.Name, Description: p.Function.Description.Value,
			SchemaType: str(p.Function.Parameters["type"]), Properties: keys(p.Function.Parameters["properties"])})
	}
	var om openai.ChatCompletionToolMessageParam
	if err := json.Unmarshal(in.OpenAIResult, &om); err != nil {
		fail("openai tool message", err)
	}
	out.OpenAIResult = result{ID: om.ToolCallID, Texts: []string{om.Content.OfString.Value}}
	for _, raw := range in.ResponsesTools {
		var p responses.FunctionToolParam
		if err := json.Unmarshal(raw, &p); err != nil {
			fail("responses tool", err)
		}
		strict := p.Strict.Value
		out.ResponsesTools = append(out.ResponsesTools, tool{Name: p.Name, Description: p.Description.Value,
			SchemaType: str(p.Parameters["type"]), Properties: keys(p.Parameters["properties"]), Strict: &strict})
	}
	var ro responses.ResponseInputItemFunctionCallOutputParam
	if err := json.Unmarshal(in.ResponsesResult, &ro); err != nil {
		fail("responses function call output", err)
	}
	out.ResponsesResult = result{ID: ro.CallID.Value, Texts: []string{ro.Output.OfString.Value}}
	var gt genai.Tool
	strict(in.GeminiTool, &gt, "gemini tool")
	for _, f := range gt.FunctionDeclarations {
		schema, _ := f.ParametersJsonSchema.(map[string]any)
		out.GeminiTools = append(out.GeminiTools, tool{Name: f.Name, Description: f.Description,
			SchemaType: str(schema["type"]), Properties: keys(schema["properties"])})
	}
	var gp genai.Part
	strict(in.GeminiPart, &gp, "gemini part")
	if gp.FunctionResponse != nil {
		resp, _ := json.Marshal(gp.FunctionResponse.Response)
		out.GeminiPart = result{ID: gp.FunctionResponse.ID, Name: gp.FunctionResponse.Name, Response: resp}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("stdout", err)
	}
}

// strict decodes raw into v refusing unknown members.
func strict(raw json.RawMessage, v any, what string) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		fail(what, err)
	}
}

// keys are the sorted keys of a JSON object read as any.
func keys(v any) []string {
	m, _ := v.(map[string]any)
	return slices.Sorted(maps.Keys(m))
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "modelsdkcheck: %s: %v\n", what, err)
	os.Exit(1)
}
