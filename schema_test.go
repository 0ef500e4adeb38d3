package mcpvisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSchemaDialects(t *testing.T) {
	// tuple is valid only where "items" may be an array (draft-07 and
	// older); prefixItems means something only in 2020-12.
	const tuple = `"type":"array","items":[{"type":"integer"}]`
	tests := []struct {
		name, schema, doc string
		wantMismatch      bool
		wantErr           error
	}{
		{"2020-12 by default", `{"type":"array","prefixItems":[{"type":"integer"}]}`, `["x"]`, true, nil},
		{"2020-12 by default, valid", `{"type":"array","prefixItems":[{"type":"integer"}]}`, `[1,"x"]`, false, nil},
		{"2020-12 by default rejects a draft-07 tuple", `{` + tuple + `}`, `["x"]`, false, ErrInvalidSchema},
		{"2020-12 declared", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"integer"}]}`, `["x"]`, true, nil},
		{"draft-07 with #", `{"$schema":"http://json-schema.org/draft-07/schema#",` + tuple + `}`, `["x"]`, true, nil},
		{"draft-07 without #", `{"$schema":"http://json-schema.org/draft-07/schema",` + tuple + `}`, `["x"]`, true, nil},
		{"draft-07 valid", `{"$schema":"http://json-schema.org/draft-07/schema#",` + tuple + `}`, `[1]`, false, nil},
		{"draft-07 ignores prefixItems", `{"$schema":"http://json-schema.org/draft-07/schema#","prefixItems":[{"type":"integer"}]}`, `["x"]`, false, nil},
		{"2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","dependentRequired":{"a":["b"]}}`, `{"a":1}`, true, nil},
		{"draft-06", `{"$schema":"http://json-schema.org/draft-06/schema#","const":1}`, `2`, true, nil},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"number","maximum":3,"exclusiveMaximum":true}`, `3`, true, nil},
		{"unknown dialect", `{"$schema":"https://example.com/my-dialect","type":"object"}`, `{}`, false, ErrUnsupportedDialect},
		{"draft-03", `{"$schema":"http://json-schema.org/draft-03/schema#"}`, `{}`, false, ErrUnsupportedDialect},
		{"$schema not a string", `{"$schema":7}`, `{}`, false, ErrInvalidSchema},
		{"invalid schema", `{"type":12}`, `1`, false, ErrInvalidSchema},
		{"not JSON", `{"type":`, `1`, false, ErrInvalidSchema},
		{"relative $ref", `{"$ref":"other.json"}`, `1`, false, ErrInvalidSchema},
		{"file $ref", `{"$ref":"file:///etc/passwd"}`, `1`, false, ErrInvalidSchema},
		{"meta-schema $ref is bundled", `{"$ref":"https://json-schema.org/draft/2020-12/schema"}`, `{"type":12}`, true, nil},
		{"local $ref", `{"$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`, `{"a":"x"}`, true, nil},
		{"ECMA pattern RE2 cannot compile is not enforced", `{"type":"string","pattern":"^(?!-)"}`, `"-x"`, false, nil},
		{"RE2 pattern is enforced", `{"type":"string","pattern":"^[a-z]+$"}`, `"-x"`, true, nil},
	}
	var c schemaCache
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.validate(json.RawMessage(tt.schema), json.RawMessage(tt.doc))
			var serr *SchemaError
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("validate = %v, want %v", err, tt.wantErr)
				}
			case tt.wantMismatch:
				if !errors.As(err, &serr) {
					t.Errorf("validate = %v, want a *SchemaError", err)
				}
			case err != nil:
				t.Errorf("validate = %v, want nil", err)
			}
		})
	}
}

func TestSchemaUnsupportedDialectMessage(t *testing.T) {
	var c schemaCache
	err := c.validate(json.RawMessage(`{"$schema":"https://example.com/my-dialect"}`), json.RawMessage(`{}`))
	want := `JSON Schema dialect "https://example.com/my-dialect" is not supported (2020-12, 2019-09, draft-07, draft-06, draft-04 are)`
	if err == nil || err.Error() != want || !errors.Is(err, ErrUnsupportedDialect) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func TestSchemaRemoteRefRefused(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `{"type":"integer"}`)
	}))
	defer srv.Close()

	var c schemaCache
	for _, schema := range []string{
		fmt.Sprintf(`{"$ref":%q}`, srv.URL+"/int.json"),
		fmt.Sprintf(`{"$schema":%q}`, srv.URL+"/meta.json"),
		fmt.Sprintf(`{"properties":{"a":{"$ref":%q}}}`, srv.URL+"/int.json#/x"),
		fmt.Sprintf(`{"$id":%q,"properties":{"a":{"$ref":"int.json"}}}`, srv.URL+"/root.json"),
	} {
		err := c.validate(json.RawMessage(schema), json.RawMessage(`{"a":1}`))
		if !errors.Is(err, ErrInvalidSchema) && !errors.Is(err, ErrUnsupportedDialect) {
			t.Errorf("%s: validate = %v, want a refused schema", schema, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the validator fetched %d remote schemas, want none", n)
	}
}

func TestSchemaInvalidSchemaMessage(t *testing.T) {
	var c schemaCache
	err := c.validate(json.RawMessage(`{"type":"array","items":[{"type":"integer"}]}`), json.RawMessage(`[]`))
	want := "invalid JSON Schema: not valid against the 2020-12 meta-schema:\n" +
		"- at (root): 'allOf' failed\n" +
		"  - at '/items': got array, want boolean or object"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func TestSchemaCheckOutput(t *testing.T) {
	tool := Tool{
		Name:         "mcp__weather__air",
		OutputSchema: []byte(`{"type":"object","properties":{"aqi":{"type":"integer"},"summary":{"type":"string"}},"required":["aqi"]}`),
	}
	tests := []struct {
		name    string
		tool    Tool
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
		{"no outputSchema", Tool{Name: "mcp__a__b"}, &Result{Type: ResultString, Text: "x"}, ""},
		{"null outputSchema", Tool{Name: "mcp__a__b", OutputSchema: []byte("null")}, &Result{Type: ResultString, Text: "x"}, ""},
		{"unsupported outputSchema", Tool{Name: "mcp__a__b", OutputSchema: []byte(`{"$schema":"x:y"}`)}, &Result{Type: ResultJSON, JSON: json.RawMessage(`{}`)},
			`tool mcp__a__b: outputSchema: JSON Schema dialect "x:y" is not supported (2020-12, 2019-09, draft-07, draft-06, draft-04 are)`},
	}
	var c schemaCache
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.checkOutput(tt.tool, tt.result)
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

	err := c.checkOutput(tool, &Result{Type: ResultJSON, JSON: json.RawMessage(`{"aqi":1.5}`)})
	var serr *SchemaError
	if !errors.As(err, &serr) || serr.Tool != tool.Name || serr.Kind != SchemaStructuredContent || serr.Detail != "- at '/aqi': got number, want integer" {
		t.Errorf("checkOutput = %#v, want a *SchemaError for /aqi", err)
	}
}

func TestSchemaCheckArguments(t *testing.T) {
	tool := Tool{
		Name:        "mcp__notes__add",
		InputSchema: []byte(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`),
	}
	tests := []struct {
		name, args string
		tool       Tool
		want       string // the tool error's text, "" for nil
	}{
		{"valid", `{"a":2,"b":40}`, tool, ""},
		{"wrong type", `{"a":"2","b":40}`, tool, "invalid arguments for mcp__notes__add:\n- at '/a': got string, want integer"},
		{"missing and extra", `{"a":2,"c":1}`, tool, "invalid arguments for mcp__notes__add:\n" +
			"- at (root): additional properties 'c' not allowed\n" +
			"- at (root): missing property 'b'"},
		{"nil means {}", ``, tool, "invalid arguments for mcp__notes__add:\n- at (root): missing properties 'a', 'b'"},
		{"null means {}", `null`, tool, "invalid arguments for mcp__notes__add:\n- at (root): missing properties 'a', 'b'"},
		{"no inputSchema", `{"x":1}`, Tool{Name: "mcp__a__b"}, ""},
		{"empty object schema", ``, Tool{Name: "mcp__a__b", InputSchema: []byte(`{"type":"object"}`)}, ""},
		{"unsupported inputSchema", `{}`, Tool{Name: "mcp__a__b", InputSchema: []byte(`{"$schema":"x:y"}`)},
			`cannot check arguments for mcp__a__b: inputSchema: JSON Schema dialect "x:y" is not supported (2020-12, 2019-09, draft-07, draft-06, draft-04 are)`},
	}
	var c schemaCache
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.checkArguments(tt.tool, json.RawMessage(tt.args))
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

func TestSchemaCompilesOnce(t *testing.T) {
	var c schemaCache
	a := json.RawMessage(`{"type":"integer"}`)
	b := json.RawMessage(`{"type":"string"}`)
	bad := json.RawMessage(`{"type":12}`)
	for range 5 {
		c.validate(a, json.RawMessage(`1`))
		c.validate(b, json.RawMessage(`"s"`))
		c.validate(bad, json.RawMessage(`1`))
		c.checkArguments(Tool{Name: "t", InputSchema: []byte(a)}, nil)
	}
	if n := c.compiles.Load(); n != 3 {
		t.Errorf("compiled %d times, want 3 (once per distinct schema, failures included)", n)
	}
}

func TestSchemaConcurrent(t *testing.T) {
	var c schemaCache
	schemas := make([]json.RawMessage, 4)
	for i := range schemas {
		schemas[i] = json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"n":{"type":"integer","maximum":%d}}}`, i))
	}
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k := (g + i) % len(schemas)
				// n == k is valid, n == k+1 is over the maximum.
				if c.validate(schemas[k], json.RawMessage(fmt.Sprintf(`{"n":%d}`, k))) != nil {
					wrong.Add(1)
				}
				var serr *SchemaError
				if !errors.As(c.validate(schemas[k], json.RawMessage(fmt.Sprintf(`{"n":%d}`, k+1))), &serr) ||
					!strings.Contains(serr.Detail, "/n") {
					wrong.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := wrong.Load(); n != 0 {
		t.Errorf("%d wrong verdicts under concurrent use", n)
	}
	if n := c.compiles.Load(); n != int64(len(schemas)) {
		t.Errorf("compiled %d times, want %d", n, len(schemas))
	}
}
