package protocol

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestToolDestructive(t *testing.T) {
	yes, no := new(bool), new(bool)
	*yes = true
	tests := []struct {
		name string
		ann  *ToolAnnotations
		want bool
	}{
		{"no annotations", nil, true},
		{"empty annotations", &ToolAnnotations{}, true},
		{"read-only", &ToolAnnotations{ReadOnlyHint: yes}, false},
		{"read-only wins over destructive", &ToolAnnotations{ReadOnlyHint: yes, DestructiveHint: yes}, false},
		{"not read-only, no destructive hint", &ToolAnnotations{ReadOnlyHint: no}, true},
		{"not destructive", &ToolAnnotations{DestructiveHint: no}, false},
		{"not read-only, not destructive", &ToolAnnotations{ReadOnlyHint: no, DestructiveHint: no}, false},
		{"destructive", &ToolAnnotations{DestructiveHint: yes}, true},
		{"other hints only", &ToolAnnotations{IdempotentHint: yes, OpenWorldHint: no, Title: "x"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := Tool{Name: "t", Annotations: tt.ann}
			if got := tool.Destructive(); got != tt.want {
				t.Errorf("Destructive() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestToolDisplayName(t *testing.T) {
	tests := []struct {
		tool Tool
		want string
	}{
		{Tool{Name: "n"}, "n"},
		{Tool{Name: "n", Annotations: &ToolAnnotations{Title: "a"}}, "a"},
		{Tool{Name: "n", Title: "t", Annotations: &ToolAnnotations{Title: "a"}}, "t"},
	}
	for _, tt := range tests {
		if got := tt.tool.DisplayName(); got != tt.want {
			t.Errorf("DisplayName() = %q, want %q", got, tt.want)
		}
	}
}

func TestMarshal(t *testing.T) {
	size := int64(120)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"empty call result has content []", CallToolResult{}, `{"content":[]}`},
		{"empty call result by pointer", &CallToolResult{}, `{"content":[]}`},
		{
			"call result",
			CallToolResult{Content: []ContentBlock{{Type: ContentText, Text: `{"n":1}`}}, StructuredContent: raw(`{"n":1}`), IsError: true, Meta: raw(`{"k":1}`)},
			`{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1},"isError":true,"_meta":{"k":1}}`,
		},
		{"empty text block keeps text", ContentBlock{Type: ContentText}, `{"type":"text","text":""}`},
		{"image block", ContentBlock{Type: ContentImage, Data: "iVBO", MimeType: "image/png"}, `{"type":"image","data":"iVBO","mimeType":"image/png"}`},
		{
			"resource link",
			ContentBlock{Type: ContentResourceLink, URI: "file:///a", Name: "a", Size: &size, Annotations: raw(`{"priority":1}`)},
			`{"type":"resource_link","uri":"file:///a","name":"a","size":120,"annotations":{"priority":1}}`,
		},
		{
			"embedded resource with empty text",
			ContentBlock{Type: ContentResource, Resource: &ResourceContents{URI: "file:///e"}},
			`{"type":"resource","resource":{"uri":"file:///e","text":""}}`,
		},
		{"blob resource", ResourceContents{URI: "u", MimeType: "image/png", Blob: "AA=="}, `{"uri":"u","mimeType":"image/png","blob":"AA=="}`},
		{"empty tools list has tools []", ListToolsResult{}, `{"tools":[]}`},
		{
			"tool",
			Tool{Name: "read", InputSchema: raw(`{"type":"object"}`), Annotations: &ToolAnnotations{ReadOnlyHint: new(bool)}, Execution: &ToolExecution{TaskSupport: TaskSupportOptional}},
			`{"name":"read","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false},"execution":{"taskSupport":"optional"}}`,
		},
		{
			"initialize params",
			InitializeParams{ProtocolVersion: ProtocolVersion, Capabilities: ClientCapabilities{Roots: &RootsCapability{ListChanged: true}}, ClientInfo: Implementation{Name: "mcpvisor", Version: "0.1.0", WebsiteURL: "https://example.org"}},
			`{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"mcpvisor","version":"0.1.0","websiteUrl":"https://example.org"}}`,
		},
		{
			"initialize params, no capabilities",
			InitializeParams{ProtocolVersion: ProtocolVersion, ClientInfo: Implementation{Name: "c", Version: "1"}},
			`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`,
		},
		{"cancelled", CancelledParams{RequestID: raw(`7`), Reason: "timeout"}, `{"requestId":7,"reason":"timeout"}`},
		{"progress", ProgressParams{ProgressToken: raw(`"t"`), Progress: 0.5, Message: "half"}, `{"progressToken":"t","progress":0.5,"message":"half"}`},
		{"list tools params", ListToolsParams{Cursor: "c2"}, `{"cursor":"c2"}`},
		{"call tool params", CallToolParams{Name: "x", Arguments: raw(`{}`)}, `{"name":"x","arguments":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("json.Marshal = %s\n         want %s", got, tt.want)
			}
		})
	}
}

func TestUnmarshalSpecExamples(t *testing.T) {
	t.Run("initialize result", func(t *testing.T) {
		in := `{"protocolVersion":"2025-11-25","capabilities":{"logging":{},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true},"tasks":{"list":{}},"experimental":{"x":{"a":1}}},"serverInfo":{"name":"ExampleServer","title":"Example Server Display Name","version":"1.0.0","description":"An example","icons":[{"src":"https://example.com/i.png","mimeType":"image/png","sizes":["48x48"],"theme":"light"}],"websiteUrl":"https://example.com"},"instructions":"Optional instructions for the client","_meta":{"m":true}}`
		var got InitializeResult
		if err := json.Unmarshal([]byte(in), &got); err != nil {
			t.Fatal(err)
		}
		want := InitializeResult{
			ProtocolVersion: "2025-11-25",
			Capabilities: ServerCapabilities{
				Tools:        &ListChangedCapability{ListChanged: true},
				Resources:    &ResourcesCapability{Subscribe: true, ListChanged: true},
				Prompts:      &ListChangedCapability{ListChanged: true},
				Logging:      raw(`{}`),
				Tasks:        raw(`{"list":{}}`),
				Experimental: map[string]json.RawMessage{"x": raw(`{"a":1}`)},
			},
			ServerInfo: Implementation{
				Name: "ExampleServer", Title: "Example Server Display Name", Version: "1.0.0", Description: "An example",
				WebsiteURL: "https://example.com",
				Icons:      []Icon{{Src: "https://example.com/i.png", MimeType: "image/png", Sizes: []string{"48x48"}, Theme: "light"}},
			},
			Instructions: "Optional instructions for the client",
			Meta:         raw(`{"m":true}`),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("tools list keeps schemas raw", func(t *testing.T) {
		in := `{"tools":[{"name":"get_weather","title":"Weather","description":"Get weather","inputSchema":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"execution":{"taskSupport":"forbidden"},"_meta":{"k":"v"}}],"nextCursor":"n2"}`
		var got ListToolsResult
		if err := json.Unmarshal([]byte(in), &got); err != nil {
			t.Fatal(err)
		}
		tool := got.Tools[0]
		if string(tool.InputSchema) != `{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}` || got.NextCursor != "n2" || tool.Destructive() || tool.Execution.TaskSupport != TaskSupportForbidden {
			t.Errorf("decoded %+v", got)
		}
		again, _ := json.Marshal(got)
		if string(again) != in {
			t.Errorf("re-encoded:\n%s\nwant\n%s", again, in)
		}
	})
	t.Run("call result with every block type", func(t *testing.T) {
		in := `{"content":[{"type":"text","text":"hi"},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"audio","data":"AA==","mimeType":"audio/wav"},{"type":"resource_link","uri":"file:///x","name":"x","mimeType":"text/plain","size":3},{"type":"resource","resource":{"uri":"file:///y","mimeType":"text/plain","text":"y"},"annotations":{"audience":["user"]}}],"structuredContent":{"t":22.5},"isError":false}`
		var got CallToolResult
		if err := json.Unmarshal([]byte(in), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Content) != 5 || got.Content[4].Resource.Text != "y" || string(got.StructuredContent) != `{"t":22.5}` {
			t.Errorf("decoded %+v", got)
		}
		again, _ := json.Marshal(got)
		// Members come out in struct order; isError false is omitted.
		want := `{"content":[{"type":"text","text":"hi"},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"audio","data":"AA==","mimeType":"audio/wav"},{"type":"resource_link","mimeType":"text/plain","uri":"file:///x","name":"x","size":3},{"type":"resource","resource":{"uri":"file:///y","mimeType":"text/plain","text":"y"},"annotations":{"audience":["user"]}}],"structuredContent":{"t":22.5}}`
		if string(again) != want {
			t.Errorf("re-encoded:\n%s\nwant\n%s", again, want)
		}
	})
	t.Run("logging and progress", func(t *testing.T) {
		var lm LoggingMessageParams
		if err := json.Unmarshal([]byte(`{"level":"error","logger":"db","data":{"error":"x"}}`), &lm); err != nil || lm.Level != "error" || lm.Logger != "db" || string(lm.Data) != `{"error":"x"}` {
			t.Errorf("logging: %+v, %v", lm, err)
		}
		var pp ProgressParams
		if err := json.Unmarshal([]byte(`{"progressToken":"abc","progress":50,"total":100,"message":"m"}`), &pp); err != nil || *pp.Total != 100 || pp.Progress != 50 || string(pp.ProgressToken) != `"abc"` {
			t.Errorf("progress: %+v, %v", pp, err)
		}
	})
}
