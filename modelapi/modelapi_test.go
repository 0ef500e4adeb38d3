package modelapi

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/pipeline"
)

func testTools() []actors.Tool {
	return []actors.Tool{
		{Name: "mcp__notes__add", Server: "notes", Tool: "add", Description: "Add two numbers",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		{Name: "search", Server: "docs", Tool: "search", Title: "Docs", Description: "Search the docs"}, // prefix: false, no schema
	}
}

// Each format is the API's own shape: the members it names, an object
// schema always, nothing of MCP's or the host's.
func TestFormats(t *testing.T) {
	tools := testTools()
	a := Anthropic(tools)
	o := OpenAI(tools)
	r := OpenAIResponses(tools)
	g := Gemini(tools)
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"anthropic", a, `[{"name":"mcp__notes__add","description":"Add two numbers","input_schema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}},` +
			`{"name":"search","description":"Docs: Search the docs","input_schema":{"type":"object","properties":{}}}]`},
		{"openai", o, `[{"type":"function","function":{"name":"mcp__notes__add","description":"Add two numbers","parameters":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}}},` +
			`{"type":"function","function":{"name":"search","description":"Docs: Search the docs","parameters":{"type":"object","properties":{}}}}]`},
		{"openai responses", r, `[{"type":"function","name":"mcp__notes__add","description":"Add two numbers","parameters":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]},"strict":false},` +
			`{"type":"function","name":"search","description":"Docs: Search the docs","parameters":{"type":"object","properties":{}},"strict":false}]`},
		{"gemini", g, `{"functionDeclarations":[{"name":"mcp__notes__add","description":"Add two numbers","parametersJsonSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}},` +
			`{"name":"search","description":"Docs: Search the docs","parametersJsonSchema":{"type":"object","properties":{}}}]}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, b, tc.want)
		}
	}
}

// A result goes back as each API's message: the text the model is given,
// an image where the API takes one, a failure as an error.
func TestResults(t *testing.T) {
	ok, err := pipeline.DecodeResult(json.RawMessage(`{"content":[{"type":"text","text":"42"},{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"image","data":"aGk=","mimeType":"image/tiff"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	structured, err := pipeline.DecodeResult(json.RawMessage(`{"content":[{"type":"text","text":"{\"sum\":42}"}],"structuredContent":{"sum":42}}`))
	if err != nil {
		t.Fatal(err)
	}
	toolErr, err := pipeline.DecodeResult(json.RawMessage(`{"content":[{"type":"text","text":"no such file"}],"isError":true}`))
	if err != nil {
		t.Fatal(err)
	}
	failed := errors.New(`server "fs": unavailable`)
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"anthropic", AnthropicResult("tu_1", ok, nil), `{"type":"tool_result","tool_use_id":"tu_1","content":[{"type":"text","text":"` + jsonText(ok.Wire()) + `"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}}]}`},
		{"anthropic tool error", AnthropicResult("tu_2", toolErr, nil), `{"type":"tool_result","tool_use_id":"tu_2","content":[{"type":"text","text":"no such file"}],"is_error":true}`},
		{"anthropic failed", AnthropicResult("tu_3", nil, failed), `{"type":"tool_result","tool_use_id":"tu_3","content":[{"type":"text","text":"server \"fs\": unavailable"}],"is_error":true}`},
		{"openai", OpenAIResult("call_1", structured, nil), `{"role":"tool","tool_call_id":"call_1","content":"{\"sum\":42}"}`},
		{"openai responses", OpenAIResponsesResult("call_2", toolErr, nil), `{"type":"function_call_output","call_id":"call_2","output":"no such file"}`},
		{"gemini structured", GeminiResult("", "mcp__notes__add", structured, nil), `{"functionResponse":{"name":"mcp__notes__add","response":{"output":{"sum":42}}}}`},
		{"gemini text", GeminiResult("c1", "search", toolErr, nil), `{"functionResponse":{"id":"c1","name":"search","response":{"error":"no such file"}}}`},
		{"gemini failed", GeminiResult("", "search", nil, failed), `{"functionResponse":{"name":"search","response":{"error":"server \"fs\": unavailable"}}}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, b, tc.want)
		}
	}
}

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
