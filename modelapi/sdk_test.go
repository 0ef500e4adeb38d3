package modelapi_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/peers"
	"github.com/mcpvisor/mcpvisor/modelapi"
	"github.com/mcpvisor/mcpvisor/pipeline"
)

// sdkTool is what an official SDK read of a tool (modelsdkcheck).
type sdkTool struct {
	Name, Description, SchemaType string
	Properties                    []string
	Strict                        *bool
}

// sdkResult is what an official SDK read of a tool result.
type sdkResult struct {
	ID, Name string
	IsError  bool
	Texts    []string
	Images   []string
	Response json.RawMessage
}

// What package modelapi writes is read back, member by member, by each
// API's official SDK (anthropic-sdk-go, openai-go, genai: their types are
// generated from the APIs' published specifications), so a member named
// otherwise than the API names it fails here.
func TestOfficialSDKsReadTheFormats(t *testing.T) {
	check := peers.ModelSDKCheck(t)
	tools := []actors.Tool{
		{Name: "mcp__notes__add", Description: "Add two numbers",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		{Name: "mcp__docs__search", Title: "Docs", Description: "Search the docs"},
	}
	res, err := pipeline.DecodeResult(json.RawMessage(`{"content":[{"type":"text","text":"done"},{"type":"image","data":"aGk=","mimeType":"image/png"}],"structuredContent":{"sum":42}}`))
	if err != nil {
		t.Fatal(err)
	}
	toolErr, err := pipeline.DecodeResult(json.RawMessage(`{"content":[{"type":"text","text":"no such file"}],"isError":true}`))
	if err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(map[string]any{
		"anthropicTools":  modelapi.Anthropic(tools),
		"anthropicResult": modelapi.AnthropicResult("toolu_1", toolErr, nil),
		"openaiTools":     modelapi.OpenAI(tools),
		"openaiResult":    modelapi.OpenAIResult("call_1", res, nil),
		"responsesTools":  modelapi.OpenAIResponses(tools),
		"responsesResult": modelapi.OpenAIResponsesResult("call_2", toolErr, nil),
		"geminiTool":      modelapi.Gemini(tools),
		"geminiPart":      modelapi.GeminiResult("fc_1", "mcp__notes__add", res, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(check)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("modelsdkcheck: %v: %s", err, stderr.String())
	}
	var read struct {
		AnthropicTools, OpenAITools, ResponsesTools, GeminiTools   []sdkTool
		AnthropicResult, OpenAIResult, ResponsesResult, GeminiPart sdkResult
	}
	if err := json.Unmarshal(out, &read); err != nil {
		t.Fatalf("modelsdkcheck printed %s: %v", out, err)
	}
	for api, got := range map[string][]sdkTool{"anthropic": read.AnthropicTools, "openai": read.OpenAITools, "responses": read.ResponsesTools, "gemini": read.GeminiTools} {
		if len(got) != 2 {
			t.Errorf("%s: the SDK read %d tools: %+v", api, len(got), got)
			continue
		}
		if got[0].Name != "mcp__notes__add" || got[0].Description != "Add two numbers" || got[0].SchemaType != "object" || !slices.Equal(got[0].Properties, []string{"a", "b"}) {
			t.Errorf("%s: the SDK read the first tool as %+v", api, got[0])
		}
		if got[1].Name != "mcp__docs__search" || got[1].Description != "Docs: Search the docs" || got[1].SchemaType != "object" {
			t.Errorf("%s: the SDK read the second tool as %+v", api, got[1])
		}
		if api == "responses" && (got[0].Strict == nil || *got[0].Strict) {
			t.Errorf("responses: strict read as %v, want false", got[0].Strict)
		}
	}
	if r := read.AnthropicResult; r.ID != "toolu_1" || !r.IsError || !slices.Equal(r.Texts, []string{"no such file"}) {
		t.Errorf("anthropic: the SDK read the tool result as %+v", r)
	}
	if r := read.OpenAIResult; r.ID != "call_1" || !slices.Equal(r.Texts, []string{`{"sum":42}`}) {
		t.Errorf("openai: the SDK read the tool message as %+v", r)
	}
	if r := read.ResponsesResult; r.ID != "call_2" || !slices.Equal(r.Texts, []string{"no such file"}) {
		t.Errorf("responses: the SDK read the function call output as %+v", r)
	}
	if r := read.GeminiPart; r.ID != "fc_1" || r.Name != "mcp__notes__add" || string(r.Response) != `{"output":{"sum":42}}` {
		t.Errorf("gemini: the SDK read the function response as %+v (%s)", r, r.Response)
	}

	// An image goes to Anthropic as an image block the SDK reads.
	in, _ = json.Marshal(map[string]any{"anthropicResult": modelapi.AnthropicResult("toolu_2", res, nil),
		"openaiResult": modelapi.OpenAIResult("c", res, nil), "responsesResult": modelapi.OpenAIResponsesResult("c", res, nil),
		"geminiTool": modelapi.Gemini(nil), "geminiPart": modelapi.GeminiResult("", "x", res, nil)})
	cmd = exec.Command(check)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = &stderr
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("modelsdkcheck: %v: %s", err, stderr.String())
	}
	if err := json.Unmarshal(out, &read); err != nil {
		t.Fatal(err)
	}
	if r := read.AnthropicResult; !slices.Equal(r.Images, []string{"image/png:aGk="}) || r.IsError {
		t.Errorf("anthropic: the SDK read the result with an image as %+v", r)
	}
}
