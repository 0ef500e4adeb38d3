package pipeline

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/schema"
)

func TestSchemaCheckOutput(t *testing.T) {
	tool := actors.Tool{
		Name:         "mcp__weather__air",
		OutputSchema: []byte(`{"type":"object","properties":{"aqi":{"type":"integer"},"summary":{"type":"string"}},"required":["aqi"]}`),
	}
	tests := []struct {
		name    string
		tool    actors.Tool
		result  *Result
		wantErr string // "" for nil
	}{
		{"valid", tool, &Result{Type: ResultJSON, JSON: json.RawMessage(`{"aqi":3,"summary":"good"}`)}, ""},
		{"invalid", tool, &Result{Type: ResultJSON, JSON: json.RawMessage(`{"aqi":"high","summary":1}`)},
			"tool mcp__weather__air: structuredContent does not match the outputSchema:\n" +
				"- at '/aqi': got string, want integer\n" +
				"- at '/summary': got number, want string"},
		{"missing property", tool, &Result{Type: ResultJSON, JSON: json.RawMessage(`{}`)},
			"tool mcp__weather__air: structuredContent does not match the outputSchema:\n" +
				"- at (root): missing property 'aqi'"},
		{"missing structuredContent", tool, &Result{Type: ResultString, Text: "aqi 3"},
			"tool mcp__weather__air: structuredContent does not match the outputSchema: structuredContent is missing"},
		{"tool error skipped", tool, &Result{Type: ResultString, IsError: true, Text: "upstream down"}, ""},
		{"tool error with bad content skipped", tool, &Result{Type: ResultJSON, IsError: true, JSON: json.RawMessage(`{"aqi":"x"}`)}, ""},
		{"no outputSchema", actors.Tool{Name: "mcp__a__b"}, &Result{Type: ResultString, Text: "x"}, ""},
		{"null outputSchema", actors.Tool{Name: "mcp__a__b", OutputSchema: []byte("null")}, &Result{Type: ResultString, Text: "x"}, ""},
		{"unsupported outputSchema", actors.Tool{Name: "mcp__a__b", OutputSchema: []byte(`{"$schema":"x:y"}`)}, &Result{Type: ResultJSON, JSON: json.RawMessage(`{}`)},
			`tool mcp__a__b: outputSchema: JSON Schema dialect "x:y" is not supported (2020-12, 2019-09, draft-07, draft-06, draft-04 are)`},
	}
	var c schemaCache
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.checkOutput(&tt.tool, tt.result)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("checkOutput = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("checkOutput = nil, want %q", tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
				t.Errorf("checkOutput error (-want +got):\n%s", diff)
			}
		})
	}

	err := c.checkOutput(&tool, &Result{Type: ResultJSON, JSON: json.RawMessage(`{"aqi":1.5}`)})
	var serr *SchemaError
	if !errors.As(err, &serr) || serr.Tool != tool.Name || serr.Kind != SchemaStructuredContent || serr.Detail != "- at '/aqi': got number, want integer" {
		t.Errorf("checkOutput = %#v, want a *SchemaError for /aqi", err)
	}
}

func TestSchemaCheckArguments(t *testing.T) {
	tool := actors.Tool{
		Name:        "mcp__notes__add",
		InputSchema: []byte(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`),
	}
	tests := []struct {
		name, args string
		tool       actors.Tool
		want       string // the tool error's text, "" for nil
	}{
		{"valid", `{"a":2,"b":40}`, tool, ""},
		{"wrong type", `{"a":"2","b":40}`, tool, "invalid arguments for mcp__notes__add:\n- at '/a': got string, want integer"},
		{"missing and extra", `{"a":2,"c":1}`, tool, "invalid arguments for mcp__notes__add:\n" +
			"- at (root): additional properties 'c' not allowed\n" +
			"- at (root): missing property 'b'"},
		{"nil means {}", ``, tool, "invalid arguments for mcp__notes__add:\n- at (root): missing properties 'a', 'b'"},
		{"null means {}", `null`, tool, "invalid arguments for mcp__notes__add:\n- at (root): missing properties 'a', 'b'"},
		{"no inputSchema", `{"x":1}`, actors.Tool{Name: "mcp__a__b"}, ""},
		{"empty object schema", ``, actors.Tool{Name: "mcp__a__b", InputSchema: []byte(`{"type":"object"}`)}, ""},
		{"unsupported inputSchema", `{}`, actors.Tool{Name: "mcp__a__b", InputSchema: []byte(`{"$schema":"x:y"}`)},
			`cannot check arguments for mcp__a__b: inputSchema: JSON Schema dialect "x:y" is not supported (2020-12, 2019-09, draft-07, draft-06, draft-04 are)`},
	}
	var c schemaCache
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.checkArguments(&tt.tool, json.RawMessage(tt.args))
			if tt.want == "" {
				if got != nil {
					t.Errorf("checkArguments = %+v, want nil", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("checkArguments = nil, want a tool error %q", tt.want)
			}
			if got.Type != ResultString || !got.IsError || got.Wire() != tt.want {
				t.Errorf("checkArguments = %+v (wire %q), want a string tool error %q", got, got.Wire(), tt.want)
			}
		})
	}
}

func TestSchemaCheckOutputUnusableSchema(t *testing.T) {
	tests := []struct {
		name, schema string
		want         error
	}{
		{"unsupported dialect", `{"$schema":"x:y"}`, schema.ErrUnsupportedDialect},
		{"invalid schema", `{"type":12}`, schema.ErrInvalidSchema},
	}
	var c schemaCache
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.checkOutput(&actors.Tool{Name: "mcp__a__b", OutputSchema: []byte(tt.schema)}, &Result{Type: ResultJSON, JSON: json.RawMessage(`{}`)})
			var serr *SchemaError
			if !errors.Is(err, tt.want) || errors.As(err, &serr) {
				t.Errorf("checkOutput = %v, want an error wrapping %v", err, tt.want)
			}
		})
	}
}
