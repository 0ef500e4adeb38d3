package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The tools of the conformance suite's http-invalid-tool-headers scenario,
// as its server lists them.
var suiteInvalidTools = []struct {
	name, schema string
}{
	{"invalid_empty_header", `{"type":"object","properties":{"value":{"type":"string","x-mcp-header":""}},"required":["value"]}`},
	{"invalid_object_header", `{"type":"object","properties":{"data":{"type":"object","x-mcp-header":"Data"}},"required":["data"]}`},
	{"invalid_array_header", `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"},"x-mcp-header":"Items"}},"required":["items"]}`},
	{"invalid_null_header", `{"type":"object","properties":{"nil":{"type":"null","x-mcp-header":"Nil"}},"required":["nil"]}`},
	{"invalid_number_header", `{"type":"object","properties":{"score":{"type":"number","x-mcp-header":"Score"}},"required":["score"]}`},
	{"invalid_duplicate_same_case", `{"type":"object","properties":{"field1":{"type":"string","x-mcp-header":"Region"},"field2":{"type":"string","x-mcp-header":"Region"}},"required":["field1","field2"]}`},
	{"invalid_duplicate_diff_case", `{"type":"object","properties":{"field1":{"type":"string","x-mcp-header":"MyField"},"field2":{"type":"string","x-mcp-header":"myfield"}},"required":["field1","field2"]}`},
	{"invalid_space_in_name", `{"type":"object","properties":{"value":{"type":"string","x-mcp-header":"My Region"}},"required":["value"]}`},
	{"invalid_colon_in_name", `{"type":"object","properties":{"value":{"type":"string","x-mcp-header":"Region:Primary"}},"required":["value"]}`},
	{"invalid_non_ascii_name", `{"type":"object","properties":{"value":{"type":"string","x-mcp-header":"Région"}},"required":["value"]}`},
	{"invalid_control_char_name", `{"type":"object","properties":{"value":{"type":"string","x-mcp-header":"Region\t1"}},"required":["value"]}`},
}

const suiteValidTool = `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`

// The test_custom_headers tool of the suite's http-custom-headers scenario
// (descriptions dropped), and the arguments it asks a client to call it with.
const (
	suiteCustomHeadersSchema = `{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"priority":{"type":"integer","x-mcp-header":"Priority"},
		"verbose":{"type":"boolean","x-mcp-header":"Verbose"},
		"debug":{"type":"boolean","x-mcp-header":"Debug"},
		"empty_val":{"type":"string","x-mcp-header":"EmptyVal"},
		"method_val":{"type":"string","x-mcp-header":"Method"},
		"float_val":{"type":"number"},
		"non_ascii_val":{"type":"string","x-mcp-header":"NonAscii"},
		"whitespace_val":{"type":"string","x-mcp-header":"Whitespace"},
		"leading_space_val":{"type":"string","x-mcp-header":"LeadingSpace"},
		"trailing_space_val":{"type":"string","x-mcp-header":"TrailingSpace"},
		"internal_space_val":{"type":"string","x-mcp-header":"InternalSpace"},
		"control_char_val":{"type":"string","x-mcp-header":"ControlChar"},
		"crlf_val":{"type":"string","x-mcp-header":"CrLf"},
		"tab_val":{"type":"string","x-mcp-header":"Tab"},
		"query":{"type":"string"}},
		"required":["region","priority","query"]}`
	suiteCustomHeadersArgs = `{"region":"us-west1","priority":42,"verbose":false,"debug":true,"empty_val":"",
		"method_val":"test-method","float_val":3.14159,"non_ascii_val":"Hello, 世界",
		"whitespace_val":" padded ","leading_space_val":" us-west1","trailing_space_val":"us-west1 ",
		"internal_space_val":"us west 1","control_char_val":"line1\nline2","crlf_val":"line1\r\nline2",
		"tab_val":"\tindented","query":"SELECT * FROM users"}`
	suiteNullSchema = `{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"priority":{"type":"integer","x-mcp-header":"Priority"},
		"verbose":{"type":"boolean","x-mcp-header":"Verbose"},
		"query":{"type":"string"}},"required":["region","priority","query"]}`
	suiteNullArgs = `{"region":"us-east1","priority":1,"verbose":null,"query":"SELECT 1"}`
)

func TestParamHeadersSuiteInvalidTools(t *testing.T) {
	for _, tt := range suiteInvalidTools {
		t.Run(tt.name, func(t *testing.T) {
			hs, err := ParamHeaders(raw(tt.schema))
			if !errors.Is(err, ErrInvalidParamHeader) {
				t.Fatalf("ParamHeaders = %+v, %v; want ErrInvalidParamHeader", hs, err)
			}
			if hs != nil {
				t.Errorf("returned %+v with the error", hs)
			}
		})
	}
	t.Run("valid_tool", func(t *testing.T) {
		hs, err := ParamHeaders(raw(suiteValidTool))
		if err != nil {
			t.Fatal(err)
		}
		want := []ParamHeader{{Name: "Region", Path: []string{"region"}, Type: "string"}}
		if !equalParamHeaders(hs, want) {
			t.Errorf("ParamHeaders = %+v, want %+v", hs, want)
		}
	})
}

func TestParamHeadersErrorMessage(t *testing.T) {
	tests := []struct {
		schema string
		want   string
	}{
		{
			`{"properties":{"value":{"type":"string","x-mcp-header":"My Region"}}}`,
			`invalid x-mcp-header "My Region" on property "value": not an HTTP token (byte ' ' at offset 2)`,
		},
		{
			`{"properties":{"a":{"properties":{"b":{"type":"number","x-mcp-header":"B"}}}}}`,
			`invalid x-mcp-header "B" on property "a.b": property type "number" is not allowed`,
		},
		{
			`{"properties":{"f1":{"type":"string","x-mcp-header":"MyField"},"f2":{"type":"string","x-mcp-header":"myfield"}}}`,
			`invalid x-mcp-header "myfield" on property "f2": same name, ignoring case, as "MyField" on property "f1"`,
		},
		{
			`{"properties":{"tags":{"type":"array","items":{"type":"string","x-mcp-header":"Tag"}}}}`,
			`invalid x-mcp-header "Tag" at "/properties/tags/items": not statically reachable`,
		},
		{
			`{"$defs":{"a/b~":{"type":"string","x-mcp-header":"D"}}}`,
			`invalid x-mcp-header "D" at "/$defs/a~1b~0": not statically reachable`,
		},
		{`{"type":"object","x-mcp-header":"Root"}`, `invalid x-mcp-header "Root" on the schema root: only a property`},
		{`{"properties":{"v":{"type":"string","x-mcp-header":7}}}`, `invalid x-mcp-header 7 on property "v": not a string`},
		{`{"properties":{"v":{"x-mcp-header":"V"}}}`, `invalid x-mcp-header "V" on property "v": property has no "type"`},
		{`{"properties":{"v":{"type":["string","null"],"x-mcp-header":"V"}}}`, `property "type" is ["string","null"]`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := ParamHeaders(raw(tt.schema))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParamHeaders(%s) error = %v, want it to contain %q", tt.schema, err, tt.want)
			}
		})
	}
}

func TestParamHeaders(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   []ParamHeader // nil with ok: no annotations
		ok     bool
	}{
		{"nil schema", ``, nil, true},
		{"no annotations", `{"type":"object","properties":{"a":{"type":"string"}}}`, nil, true},
		{"mentioned in a description", `{"type":"object","description":"x-mcp-header is not used","properties":{}}`, nil, true},
		{"python-style escapes, no annotation", `{"type":"object","description":"caf\u00e9","properties":{"a":{"type":"string"}}}`, nil, true},
		{"boolean schema", `true`, nil, true},
		{
			"three types",
			`{"type":"object","properties":{"s":{"type":"string","x-mcp-header":"S"},"i":{"type":"integer","x-mcp-header":"I"},"b":{"type":"boolean","x-mcp-header":"B"}}}`,
			[]ParamHeader{
				{Name: "B", Path: []string{"b"}, Type: "boolean"},
				{Name: "I", Path: []string{"i"}, Type: "integer"},
				{Name: "S", Path: []string{"s"}, Type: "string"},
			},
			true,
		},
		{
			"nested properties",
			`{"type":"object","properties":{"opts":{"type":"object","properties":{"limit":{"type":"integer","x-mcp-header":"Limit"}}},"r":{"type":"string","x-mcp-header":"R"}}}`,
			[]ParamHeader{
				{Name: "Limit", Path: []string{"opts", "limit"}, Type: "integer"},
				{Name: "R", Path: []string{"r"}, Type: "string"},
			},
			true,
		},
		{
			"every tchar",
			"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"!#$%&'*+-.^_`|~09azAZ\"}}}",
			[]ParamHeader{{Name: "!#$%&'*+-.^_`|~09azAZ", Path: []string{"v"}, Type: "string"}},
			true,
		},
		{
			"escaped key is still the keyword",
			`{"properties":{"v":{"type":"string","x-mcp-h\u0065ader":"V"}}}`,
			[]ParamHeader{{Name: "V", Path: []string{"v"}, Type: "string"}},
			true,
		},
		{"escaped key, unreachable", `{"items":{"type":"string","x-mcp-h\u0065ader":"V"}}`, nil, false},
		{
			"a property named x-mcp-header is not an annotation",
			`{"properties":{"x-mcp-header":{"type":"object","properties":{"x-mcp-header":{"type":"string","x-mcp-header":"H"}}}}}`,
			[]ParamHeader{{Name: "H", Path: []string{"x-mcp-header", "x-mcp-header"}, Type: "string"}},
			true,
		},
		{
			"instance data is not an annotation",
			`{"properties":{"v":{"type":"object","default":{"x-mcp-header":"D"},"const":{"x-mcp-header":1},"enum":[{"x-mcp-header":"E"}],"examples":[{"x-mcp-header":"X"}]}},"dependentRequired":{"x-mcp-header":["v"]}}`,
			nil,
			true,
		},
		{
			"property names inside unreachable schemas",
			`{"properties":{"list":{"type":"array","items":{"type":"object","properties":{"x-mcp-header":{"type":"string"}}}}},"$defs":{"x-mcp-header":{"type":"string"}}}`,
			nil,
			true,
		},
		{
			"duplicate member: the last one counts",
			`{"properties":{"v":{"type":"number","x-mcp-header":"Old","type":"string","x-mcp-header":"New"}}}`,
			[]ParamHeader{{Name: "New", Path: []string{"v"}, Type: "string"}},
			true,
		},
		{"non-string value: number", `{"properties":{"v":{"type":"string","x-mcp-header":1}}}`, nil, false},
		{"non-string value: null", `{"properties":{"v":{"type":"string","x-mcp-header":null}}}`, nil, false},
		{"non-string value: true", `{"properties":{"v":{"type":"string","x-mcp-header":true}}}`, nil, false},
		{"non-string value: object", `{"properties":{"v":{"type":"string","x-mcp-header":{}}}}`, nil, false},
		{"DEL in name", "{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"A\\u007f\"}}}", nil, false},
		{"LF in name", `{"properties":{"v":{"type":"string","x-mcp-header":"A\nB"}}}`, nil, false},
		{"CR in name", `{"properties":{"v":{"type":"string","x-mcp-header":"A\rB"}}}`, nil, false},
		{"slash in name", `{"properties":{"v":{"type":"string","x-mcp-header":"A/B"}}}`, nil, false},
		{"quote in name", `{"properties":{"v":{"type":"string","x-mcp-header":"A\"B"}}}`, nil, false},
		{"missing type", `{"properties":{"v":{"x-mcp-header":"V"}}}`, nil, false},
		{"type array", `{"properties":{"v":{"type":["string"],"x-mcp-header":"V"}}}`, nil, false},
		{"type not a string", `{"properties":{"v":{"type":1,"x-mcp-header":"V"}}}`, nil, false},
		{"unknown type", `{"properties":{"v":{"type":"str","x-mcp-header":"V"}}}`, nil, false},
		{"on the root", `{"type":"string","x-mcp-header":"Root"}`, nil, false},
		{
			"duplicate across nesting levels",
			`{"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"object","properties":{"c":{"type":"string","x-mcp-header":"x"}}}}}`,
			nil, false,
		},
		{"invalid json", `{"properties":{"v":{"type":"string","x-mcp-header":"V"}}`, nil, false},
		{"trailing data", `{"properties":{"v":{"type":"string","x-mcp-header":"V"}}} {}`, nil, false},
		{"one bad among good", `{"properties":{"a":{"type":"string","x-mcp-header":"A"},"z":{"type":"number","x-mcp-header":"Z"}}}`, nil, false},
	}
	// An annotation behind each keyword that is not properties.
	for _, where := range []string{
		`{"items":%s}`,
		`{"items":[%s]}`,
		`{"prefixItems":[%s]}`,
		`{"additionalProperties":%s}`,
		`{"unevaluatedProperties":%s}`,
		`{"patternProperties":{"^a":%s}}`,
		`{"propertyNames":%s}`,
		`{"contains":%s}`,
		`{"oneOf":[{"type":"object"},%s]}`,
		`{"anyOf":[%s]}`,
		`{"allOf":[%s]}`,
		`{"not":%s}`,
		`{"if":%s}`,
		`{"then":%s}`,
		`{"else":%s}`,
		`{"$defs":{"d":%s}}`,
		`{"definitions":{"d":%s}}`,
		`{"dependentSchemas":{"a":%s}}`,
		`{"dependencies":{"a":%s}}`,
		`{"x-vendor":%s}`,
		`{"properties":[%s]}`,
		`{"properties":{"a":{"type":"object","oneOf":[{"properties":{"b":%s}}]}}}`,
		`{"properties":{"a":{"type":"array","items":{"properties":{"b":%s}}}}}`,
		`{"$defs":{"d":{"properties":{"b":%s}}},"properties":{"a":{"$ref":"#/$defs/d"}}}`,
	} {
		schema := fmt.Sprintf(where, `{"type":"string","x-mcp-header":"Hidden"}`)
		tests = append(tests, struct {
			name   string
			schema string
			want   []ParamHeader
			ok     bool
		}{"unreachable " + schema, schema, nil, false})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParamHeaders(raw(tt.schema))
			if !tt.ok {
				if !errors.Is(err, ErrInvalidParamHeader) {
					t.Fatalf("ParamHeaders(%s) = %+v, %v; want ErrInvalidParamHeader", tt.schema, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParamHeaders(%s): %v", tt.schema, err)
			}
			if !equalParamHeaders(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("ParamHeaders(%s) = %#v, want %#v", tt.schema, got, tt.want)
			}
		})
	}
}

func TestParamHeadersDeepSchema(t *testing.T) {
	// As deep as encoding/json allows: neither a stack overflow nor a miss.
	const depth = 2000
	s := strings.Repeat(`{"items":`, depth) + `{"type":"string","x-mcp-header":"Deep"}` + strings.Repeat(`}`, depth)
	if _, err := ParamHeaders(raw(s)); !errors.Is(err, ErrInvalidParamHeader) {
		t.Errorf("deep unreachable annotation: %v", err)
	}
	s = `{"properties":` + strings.Repeat(`{"p":{"properties":`, depth) + `{"v":{"type":"integer","x-mcp-header":"Deep"}}` + strings.Repeat(`}}`, depth) + `}`
	hs, err := ParamHeaders(raw(s))
	if err != nil || len(hs) != 1 || len(hs[0].Path) != depth+1 {
		t.Fatalf("deep reachable annotation: %v, %d headers", err, len(hs))
	}
	args := strings.Repeat(`{"p":`, depth) + `{"v":7}` + strings.Repeat(`}`, depth)
	if got := ParamHeaderValues(hs, raw(args)); len(got) != 1 || got[0] != (HeaderField{"Mcp-Param-Deep", "7"}) {
		t.Errorf("deep value: %+v", got)
	}
}

func TestParamHeaderValuesSuite(t *testing.T) {
	hs, err := ParamHeaders(raw(suiteCustomHeadersSchema))
	if err != nil {
		t.Fatal(err)
	}
	got := headerMap(ParamHeaderValues(hs, raw(suiteCustomHeadersArgs)))
	want := map[string]string{
		"Mcp-Param-Region":        "us-west1",
		"Mcp-Param-Priority":      "42",
		"Mcp-Param-Verbose":       "false",
		"Mcp-Param-Debug":         "true",
		"Mcp-Param-EmptyVal":      "",
		"Mcp-Param-Method":        "test-method",
		"Mcp-Param-NonAscii":      "=?base64?SGVsbG8sIOS4lueVjA==?=",
		"Mcp-Param-Whitespace":    "=?base64?IHBhZGRlZCA=?=",
		"Mcp-Param-LeadingSpace":  "=?base64?IHVzLXdlc3Qx?=",
		"Mcp-Param-TrailingSpace": "=?base64?dXMtd2VzdDEg?=",
		"Mcp-Param-InternalSpace": "us west 1",
		"Mcp-Param-ControlChar":   "=?base64?bGluZTEKbGluZTI=?=",
		"Mcp-Param-CrLf":          "=?base64?bGluZTENCmxpbmUy?=",
		"Mcp-Param-Tab":           "=?base64?CWluZGVudGVk?=",
	}
	for name, v := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if g != v {
			t.Errorf("%s: %q, want %q", name, g, v)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected header %s: %q", name, got[name])
		}
	}

	// The suite's own check, ported, on every mirrored argument.
	var args map[string]any
	if err := json.Unmarshal([]byte(suiteCustomHeadersArgs), &args); err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		body := args[h.Path[0]]
		var bodyText string
		switch v := body.(type) {
		case bool:
			bodyText = strconv.FormatBool(v)
		case float64:
			bodyText = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			bodyText = v.(string)
		}
		if msg := suiteCheck(got[h.HeaderName()], bodyText, h.Type); msg != "" {
			t.Errorf("%s: suite says %s", h.HeaderName(), msg)
		}
	}
}

func TestParamHeaderValuesSuiteNull(t *testing.T) {
	hs, err := ParamHeaders(raw(suiteNullSchema))
	if err != nil {
		t.Fatal(err)
	}
	got := ParamHeaderValues(hs, raw(suiteNullArgs))
	want := []HeaderField{{"Mcp-Param-Priority", "1"}, {"Mcp-Param-Region", "us-east1"}} // in path order
	if !slices.Equal(got, want) {
		t.Errorf("ParamHeaderValues = %+v, want %+v", got, want)
	}
}

func TestParamHeaderValues(t *testing.T) {
	hs := []ParamHeader{
		{Name: "A", Path: []string{"a"}, Type: "string"},
		{Name: "N", Path: []string{"n"}, Type: "integer"},
		{Name: "Deep", Path: []string{"o", "p", "q"}, Type: "boolean"},
	}
	tests := []struct {
		name string
		args string
		want []HeaderField
	}{
		{"nil args", ``, nil},
		{"null args", `null`, nil},
		{"empty object", `{}`, nil},
		{"not an object", `["x"]`, nil},
		{"malformed", `{"a":"x"`, nil},
		{"trailing data", `{"a":"x"} {}`, nil},
		{"string", `{"a":"x"}`, []HeaderField{{"Mcp-Param-A", "x"}}},
		{"empty string is sent", `{"a":""}`, []HeaderField{{"Mcp-Param-A", ""}}},
		{"escaped string", `{"a":"caf\u00e9"}`, []HeaderField{{"Mcp-Param-A", "=?base64?Y2Fmw6k=?="}}},
		{"escaped key", `{"\u0061":"x"}`, []HeaderField{{"Mcp-Param-A", "x"}}},
		{"duplicate: the last counts", `{"a":"old","a":"new"}`, []HeaderField{{"Mcp-Param-A", "new"}}},
		{"null omitted", `{"a":null,"n":null}`, nil},
		{"object omitted", `{"a":{"b":1}}`, nil},
		{"array omitted", `{"a":["x"]}`, nil},
		{"nested", `{"o":{"p":{"q":true}}}`, []HeaderField{{"Mcp-Param-Deep", "true"}}},
		{"nested false", ` { "o" : { "p" : { "q" : false } } } `, []HeaderField{{"Mcp-Param-Deep", "false"}}},
		{"nested step null", `{"o":{"p":null}}`, nil},
		{"nested step string", `{"o":"p"}`, nil},
		{"nested leaf missing", `{"o":{"p":{}}}`, nil},
		{"nested leaf null", `{"o":{"p":{"q":null}}}`, nil},
		{
			"order of hs, other members ignored",
			`{"z":1,"o":{"p":{"q":true}},"n":-7,"a":"x"}`,
			[]HeaderField{{"Mcp-Param-A", "x"}, {"Mcp-Param-N", "-7"}, {"Mcp-Param-Deep", "true"}},
		},
		{"type mismatch: number for string", `{"a":3.5}`, []HeaderField{{"Mcp-Param-A", "3.5"}}},
		{"type mismatch: boolean for integer", `{"n":true}`, []HeaderField{{"Mcp-Param-N", "true"}}},
		{"type mismatch: string for integer", `{"n":"42"}`, []HeaderField{{"Mcp-Param-N", "42"}}},
		{"type mismatch: string for boolean", `{"o":{"p":{"q":"yes"}}}`, []HeaderField{{"Mcp-Param-Deep", "yes"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args json.RawMessage
			if tt.args != "" {
				args = raw(tt.args)
			}
			got := ParamHeaderValues(hs, args)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ParamHeaderValues(%s) = %+v, want %+v", tt.args, got, tt.want)
			}
		})
	}
	t.Run("appends", func(t *testing.T) {
		dst := []HeaderField{{"Mcp-Method", "tools/call"}}
		got := AppendParamHeaderValues(dst, hs, raw(`{"a":"x"}`))
		want := []HeaderField{{"Mcp-Method", "tools/call"}, {"Mcp-Param-A", "x"}}
		if !slices.Equal(got, want) {
			t.Errorf("AppendParamHeaderValues = %+v, want %+v", got, want)
		}
	})
}

func TestParamHeaderValuesNumbers(t *testing.T) {
	hs := []ParamHeader{{Name: "N", Path: []string{"n"}, Type: "integer"}}
	tests := []struct {
		num  string
		want string // "-" means omitted
	}{
		{"42", "42"},
		{"-7", "-7"},
		{"0", "0"},
		{"-0", "0"},
		{"0.0", "0"},
		{"-0.0e5", "0"},
		{"0e999999999999999999999", "0"},
		{"42.0", "42"},
		{"4.2e1", "42"},
		{"4.2E+1", "42"},
		{"4200e-2", "42"},
		{"1e2", "100"},
		{"-1.50e1", "-15"},
		{"3.5", "3.5"},
		{"-0.5", "-0.5"},
		{"1.5e-400", "1.5e-400"},
		{"1.0000000000000001", "1.0000000000000001"},
		{"9007199254740991", "9007199254740991"},
		{"-9007199254740991", "-9007199254740991"},
		{"9007199254740991.0", "9007199254740991"},
		{"90071992547409910e-1", "9007199254740991"},
		{"9007199254740992", "-"},
		{"-9007199254740992", "-"},
		{"9007199254740992.0", "-"},
		{"1e16", "-"},
		{"1e400", "-"},
		{"1e999999999999999999999", "-"},
		{"12345678901234567890", "-"},
		{"9007199254740991.5", "9007199254740991.5"},
	}
	for _, tt := range tests {
		t.Run(tt.num, func(t *testing.T) {
			got := ParamHeaderValues(hs, raw(`{"n":`+tt.num+`}`))
			switch {
			case tt.want == "-" && len(got) != 0:
				t.Errorf("%s: %+v, want no header", tt.num, got)
			case tt.want != "-" && (len(got) != 1 || got[0].Value != tt.want):
				t.Errorf("%s: %+v, want %q", tt.num, got, tt.want)
			}
			if len(got) == 1 && suiteCheck(got[0].Value, tt.num, "integer") != "" {
				t.Errorf("%s: the suite rejects %q: %s", tt.num, got[0].Value, suiteCheck(got[0].Value, tt.num, "integer"))
			}
		})
	}
}

func TestEncodeHeaderValue(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		// The spec's table.
		{"us-west1", "us-west1"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
		// The suite's values.
		{"", ""},
		{"test-method", "test-method"},
		{" us-west1", "=?base64?IHVzLXdlc3Qx?="},
		{"us-west1 ", "=?base64?dXMtd2VzdDEg?="},
		{"us west 1", "us west 1"},
		{"line1\r\nline2", "=?base64?bGluZTENCmxpbmUy?="},
		{"\tindented", "=?base64?CWluZGVudGVk?="},
		// More.
		{"a\tb", "=?base64?YQli?="},
		{"\x7f", "=?base64?fw==?="},
		{"\xff", "=?base64?/w==?="},
		{"~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}", "~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}"},
		{"=?base64?=", "=?base64?PT9iYXNlNjQ/PQ==?="},
		{"=?base64?", "=?base64?"},
		{"=?BASE64?x?=", "=?BASE64?x?="},
		{"x=?base64?y?=", "x=?base64?y?="},
		{"=?base64?y?= ", "=?base64?PT9iYXNlNjQ/eT89IA==?="},
		{"read_file", "read_file"},
		{"file:///tmp/a b.txt", "file:///tmp/a b.txt"},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			if got := EncodeHeaderValue(tt.in); got != tt.want {
				t.Errorf("EncodeHeaderValue(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if msg := suiteCheck(EncodeHeaderValue(tt.in), tt.in, "string"); utf8.ValidString(tt.in) && msg != "" {
				t.Errorf("the suite rejects EncodeHeaderValue(%q): %s", tt.in, msg)
			}
		})
	}
}

// FuzzEncodeHeaderValue checks that every encoded value is a legal header
// value that reads back as the input, and that the suite accepts it.
func FuzzEncodeHeaderValue(f *testing.F) {
	for _, s := range []string{"", "us-west1", "Hello, 世界", " padded ", "line1\r\nline2", "=?base64?literal?=", "=?base64?=", "\t", "\x00", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkEncoded(t, EncodeHeaderValue(s), s, true)
		if utf8.ValidString(s) {
			if msg := suiteCheck(EncodeHeaderValue(s), s, "string"); msg != "" {
				t.Fatalf("the suite rejects EncodeHeaderValue(%q): %s", s, msg)
			}
		}
	})
}

// FuzzParamHeaders checks that ParamHeaders never panics, that what it
// accepts obeys the constraints, and that ParamHeaderValues agrees with an
// encoding/json reading of the arguments.
func FuzzParamHeaders(f *testing.F) {
	f.Add([]byte(suiteValidTool), []byte(`{"region":"us-west1"}`))
	f.Add([]byte(suiteCustomHeadersSchema), []byte(suiteCustomHeadersArgs))
	f.Add([]byte(suiteNullSchema), []byte(suiteNullArgs))
	for _, tt := range suiteInvalidTools {
		f.Add([]byte(tt.schema), []byte(`{"value":"v"}`))
	}
	f.Add([]byte(`{"properties":{"o":{"properties":{"i":{"type":"integer","x-mcp-header":"I"}}}}}`), []byte(`{"o":{"i":4.2e1}}`))
	f.Add([]byte(`{"items":{"type":"string","x-mcp-h\u0065ader":"V"}}`), []byte(`{"a":"=?base64?x?="}`))
	f.Add([]byte(`{"properties":{"x-mcp-header":{"type":"boolean","x-mcp-header":"X"}}}`), []byte(`{"x-mcp-header":true,"a":null}`))
	f.Add([]byte(`{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}`), []byte(`{"a":"\u00e9\t","b":{"c":-0.0}}`))
	f.Add([]byte(`{`), []byte(`{"b":{"c":1e308},"c":9007199254740993}`))
	// Headers on fixed paths, so that args are fuzzed even when the schema
	// is rejected.
	fixed := []ParamHeader{
		{Name: "A", Path: []string{"a"}, Type: "string"},
		{Name: "BC", Path: []string{"b", "c"}, Type: "integer"},
		{Name: "C", Path: []string{"c"}, Type: "boolean"},
	}
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		hs, err := ParamHeaders(schema)
		if err != nil {
			if !errors.Is(err, ErrInvalidParamHeader) || hs != nil {
				t.Fatalf("ParamHeaders(%q) = %+v, %v", schema, hs, err)
			}
		}
		seen := map[string]bool{}
		for _, h := range hs {
			if h.Name == "" || len(h.Path) == 0 || !slices.Contains([]string{"string", "integer", "boolean"}, h.Type) {
				t.Fatalf("ParamHeaders(%q) accepted %+v", schema, h)
			}
			for i := 0; i < len(h.Name); i++ {
				if !isTchar(h.Name[i]) {
					t.Fatalf("ParamHeaders(%q) accepted name %q", schema, h.Name)
				}
			}
			if seen[strings.ToLower(h.Name)] {
				t.Fatalf("ParamHeaders(%q) accepted duplicate %q", schema, h.Name)
			}
			seen[strings.ToLower(h.Name)] = true
		}
		if len(hs) > 0 && !json.Valid(schema) {
			t.Fatalf("ParamHeaders accepted invalid json %q", schema)
		}
		checkValues(t, append(slices.Clone(fixed), hs...), args)
	})
}

// checkValues compares ParamHeaderValues(hs, args) with what encoding/json
// finds in args.
func checkValues(t *testing.T, hs []ParamHeader, args []byte) {
	t.Helper()
	got := ParamHeaderValues(hs, args)
	if !utf8.Valid(args) {
		// Keys with invalid UTF-8 match differently (valueAt compares raw
		// bytes); only check the encoding.
		for _, f := range got {
			checkEncoded(t, f.Value, "", false)
		}
		return
	}
	var root any
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	if !json.Valid(args) || d.Decode(&root) != nil {
		if len(got) != 0 {
			t.Fatalf("headers %+v from invalid args %q", got, args)
		}
		return
	}
	i := 0
	for _, h := range hs {
		v, present := root, true
		for _, k := range h.Path {
			m, ok := v.(map[string]any)
			if !ok {
				present = false
				break
			}
			if v, ok = m[k]; !ok {
				present = false
				break
			}
		}
		var want string
		switch v := v.(type) {
		case string:
			want = v
		case bool:
			want = strconv.FormatBool(v)
		case json.Number:
			var ok bool
			if want, ok = refNumber(string(v)); !ok {
				present = false
			}
			if want == "?" { // too large to check: take what we got
				if i < len(got) && got[i].Name == h.HeaderName() {
					i++
				}
				continue
			}
		default:
			present = false
		}
		if !present {
			if i < len(got) && got[i].Name == h.HeaderName() {
				t.Fatalf("args %q: header %+v for absent %v", args, got[i], h.Path)
			}
			continue
		}
		if i >= len(got) || got[i].Name != h.HeaderName() {
			t.Fatalf("args %q: no header for %v = %q; got %+v", args, h.Path, want, got)
		}
		checkEncoded(t, got[i].Value, want, true)
		i++
	}
	if i != len(got) {
		t.Fatalf("args %q: extra headers %+v", args, got[i:])
	}
}

// refNumber is the header text of a JSON number, by big.Rat: "?" when the
// exponent is too large to compute quickly.
func refNumber(num string) (string, bool) {
	if e := strings.IndexAny(num, "eE"); e >= 0 && len(num)-e > 6 {
		return "?", true
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return "", false
	}
	if !r.IsInt() {
		return num, true
	}
	n := r.Num()
	if n.CmpAbs(big.NewInt(maxSafeInteger)) > 0 {
		return "", false
	}
	return n.String(), true
}

var base64Value = regexp.MustCompile(`^=\?base64\?(.*)\?=$`)

// checkEncoded checks that v is a legal header value and, if check, that it
// reads back as want.
func checkEncoded(t *testing.T, v, want string, check bool) {
	t.Helper()
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			t.Fatalf("value %q holds byte %#x", v, c)
		}
	}
	decoded := v
	if m := base64Value.FindStringSubmatch(v); m != nil {
		b, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil {
			t.Fatalf("value %q: %v", v, err)
		}
		decoded = string(b)
	} else if needsBase64(v) {
		t.Fatalf("plain value %q needs Base64", v)
	}
	if check && decoded != want {
		t.Fatalf("value %q reads back as %q, want %q", v, decoded, want)
	}
}

// suiteCheck is the conformance suite's check of an Mcp-Param value (its
// functions Ns, Ps, Ms and Fs), ported: "" means the suite accepts header
// as the encoding of body, else its complaint. typ "integer" compares as
// numbers.
func suiteCheck(header, body, typ string) string {
	needsBase64 := strings.TrimFunc(body, isJSSpace) != body
	for _, r := range utf16Units(body) {
		if r < 32 || r > 126 {
			needsBase64 = true
		}
	}
	decode := func(s string) string {
		if m := base64Value.FindStringSubmatch(s); m != nil && !strings.ContainsAny(m[1], "\n\r\u2028\u2029") {
			b, _ := base64.StdEncoding.DecodeString(m[1])
			return string(b)
		}
		return s
	}
	if needsBase64 && !base64Value.MatchString(header) {
		return fmt.Sprintf("value %q requires Base64 encoding but header was sent as plain: %q", body, header)
	}
	got := decode(header)
	if typ == "integer" || typ == "number" {
		h, err1 := strconv.ParseFloat(strings.TrimSpace(got), 64)
		b, err2 := strconv.ParseFloat(body, 64)
		if (err1 != nil && !errors.Is(err1, strconv.ErrRange)) || (err2 != nil && !errors.Is(err2, strconv.ErrRange)) {
			return fmt.Sprintf("non-numeric value: header=%q, body=%q", got, body)
		}
		if h != b {
			return fmt.Sprintf("numeric header value %v does not match body value %v", h, b)
		}
		return ""
	}
	if got != body {
		return fmt.Sprintf("header value %q (raw %q) does not match body value %q", got, header, body)
	}
	return ""
}

func utf16Units(s string) []rune {
	var units []rune
	for _, r := range s {
		if r >= 0x10000 {
			units = append(units, 0xd800, 0xdc00) // surrogates: both > 126
			continue
		}
		units = append(units, r)
	}
	return units
}

// isJSSpace is JavaScript's String.prototype.trim set.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return 0x2000 <= r && r <= 0x200a
}

func headerMap(fs []HeaderField) map[string]string {
	m := map[string]string{}
	for _, f := range fs {
		if _, dup := m[f.Name]; dup {
			panic("duplicate header " + f.Name)
		}
		m[f.Name] = f.Value
	}
	return m
}

func equalParamHeaders(a, b []ParamHeader) bool {
	return slices.EqualFunc(a, b, func(x, y ParamHeader) bool {
		return x.Name == y.Name && x.Type == y.Type && slices.Equal(x.Path, y.Path)
	})
}

func TestMirroredName(t *testing.T) {
	for _, tc := range []struct {
		method, params, want string
		named                bool
	}{
		{MethodToolsCall, `{"name":"mcp__a__b","arguments":{}}`, "mcp__a__b", true},
		{MethodPromptsGet, `{"name":"p"}`, "p", true},
		{MethodResourcesRead, `{"uri":"ui://s/x"}`, "ui://s/x", true},
		{MethodTasksCancel, `{"taskId":"t1"}`, "t1", true},
		{MethodToolsList, `{}`, "", false},
		{MethodToolsCall, `not json`, "", true},
	} {
		got, named := MirroredName(tc.method, []byte(tc.params))
		if got != tc.want || named != tc.named {
			t.Errorf("MirroredName(%s, %s) = %q, %v; want %q, %v", tc.method, tc.params, got, named, tc.want, tc.named)
		}
	}
}
