package actors

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// A catalog's schemas and _meta are JSON whatever the server or the journal
// held, so json.Marshal of the list cannot fail on one bad entry.
func TestCatalogKeepsOnlyJSON(t *testing.T) {
	listed := []protocol.Tool{
		{Name: "good", InputSchema: json.RawMessage(` {"type":"object"} `), OutputSchema: json.RawMessage(`{"type":"object"}`), Meta: json.RawMessage(`{"k":1}`)},
		{Name: "null", InputSchema: json.RawMessage(`null`), OutputSchema: json.RawMessage(`null`), Meta: json.RawMessage(`null`)},
		{Name: "string", InputSchema: json.RawMessage(`"not a schema"`)},
	}
	c := buildCatalog(&ServerSpec{Name: "s"}, listed, nil, false, DefaultMaxToolName, nil)
	b, err := json.Marshal(c.tools)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	want := `[{"name":"mcp__s__good","server":"s","tool":"good","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"destructive":true,"_meta":{"k":1},"available":false},` +
		`{"name":"mcp__s__null","server":"s","tool":"null","destructive":true,"available":false},` +
		`{"name":"mcp__s__string","server":"s","tool":"string","inputSchema":"not a schema","destructive":true,"available":false}]`
	if string(b) != want {
		t.Errorf("json.Marshal(catalog) =\n%s\nwant\n%s", b, want)
	}
	if len(c.warnings) != 1 || !strings.Contains(c.warnings[0], `tool "string": inputSchema is not a JSON object`) {
		t.Errorf("warnings = %q", c.warnings)
	}

	// The journal's records round-trip; bytes that are not JSON are
	// dropped, the rest of the tool kept.
	back := ToolsFromRecords("s", ToolRecords(c.tools))
	if diff := cmp.Diff(c.tools, back); diff != "" {
		t.Errorf("catalog through its records (-want +got):\n%s", diff)
	}
	broken := ToolsFromRecords("s", []persistence.ToolRecord{{Name: "mcp__s__x", Tool: "x",
		InputSchema: []byte(`{"type":`), OutputSchema: []byte{0xff}, Meta: []byte(`{}`)}})
	if _, err := json.Marshal(broken); err != nil {
		t.Fatalf("json.Marshal of a restored catalog with broken schemas: %v", err)
	}
	if tl := broken[0]; tl.InputSchema != nil || tl.OutputSchema != nil || string(tl.Meta) != `{}` || tl.Name != "mcp__s__x" {
		t.Errorf("restored %+v", tl)
	}
}

func TestToolMCP(t *testing.T) {
	ro := true
	tests := []struct {
		name string
		tool Tool
		want protocol.Tool
	}{
		{"no schema", Tool{Name: "mcp__s__a", Server: "s", Tool: "a", Description: "d"},
			protocol.Tool{Name: "mcp__s__a", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		{"bare", Tool{Name: "a", Server: "s", Tool: "a"},
			protocol.Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		{"mapped name: the own one is the title", Tool{Name: "mcp__s__a_b", Server: "s", Tool: "a.b"},
			protocol.Tool{Name: "mcp__s__a_b", Title: "a.b", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		{"mapped name with a title", Tool{Name: "a_b", Server: "s", Tool: "a.b", Title: "A b"},
			protocol.Tool{Name: "a_b", Title: "A b", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		{"every field", Tool{Name: "mcp__s__a", Server: "s", Tool: "a", Title: "A", Description: "d",
			InputSchema: json.RawMessage(`{"type":"object","required":["x"]}`), OutputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: &protocol.ToolAnnotations{ReadOnlyHint: &ro}, Destructive: false, TaskSupport: "optional",
			Icons: []protocol.Icon{{Src: "https://example.com/i.png"}}, Meta: json.RawMessage(`{"k":1}`), Available: true},
			protocol.Tool{Name: "mcp__s__a", Title: "A", Description: "d",
				InputSchema: json.RawMessage(`{"type":"object","required":["x"]}`), OutputSchema: json.RawMessage(`{"type":"object"}`),
				Annotations: &protocol.ToolAnnotations{ReadOnlyHint: &ro}, Icons: []protocol.Icon{{Src: "https://example.com/i.png"}},
				Meta: json.RawMessage(`{"k":1}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.tool.MCP()); diff != "" {
				t.Errorf("MCP() (-want +got):\n%s", diff)
			}
		})
	}
}
