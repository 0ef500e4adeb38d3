package elicit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, server string, params json.RawMessage) *Request {
	t.Helper()
	req, err := Parse(server, params)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return req
}

// The conformance scenario elicitation-sep1034-client-defaults: the client
// accepts an empty form and must send the schema's defaults.
func TestCompleteDefaultsSEP1034(t *testing.T) {
	req := mustParse(t, "elicitation-defaults-test-server", json.RawMessage(`{
		"message": "Please provide your information (defaults available):",
		"requestedSchema": {
			"type": "object",
			"properties": {
				"name": {"type": "string", "default": "John Doe"},
				"age": {"type": "integer", "default": 30},
				"score": {"type": "number", "default": 95.5},
				"status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
				"verified": {"type": "boolean", "default": true}
			}
		}
	}`))
	want := map[string]any{
		"name":     "John Doe",
		"age":      int64(30),
		"score":    95.5,
		"status":   "active",
		"verified": true,
	}
	for _, content := range []map[string]any{nil, {}} {
		got, err := req.Complete(content)
		if err != nil {
			t.Fatalf("Complete(%v): %v", content, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Complete(%v) = %#v, want %#v", content, got, want)
		}
	}
	if got := req.Defaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("Defaults() = %#v, want %#v", got, want)
	}
	got := ResultJSON(Response{Action: ActionAccept, Content: want})
	const wire = `{"action":"accept","content":{"age":30,"name":"John Doe","score":95.5,"status":"active","verified":true}}`
	if string(got) != wire {
		t.Errorf("ResultJSON = %s, want %s", got, wire)
	}
}

func TestCompleteGivenValuesWinOverDefaults(t *testing.T) {
	req := mustParse(t, "s", formParams(`{
		"name": {"type": "string", "default": "John Doe"},
		"tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "default": ["a"]}
	}`))
	got, err := req.Complete(map[string]any{"name": "Ada", "tags": nil})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := map[string]any{"name": "Ada", "tags": []string{"a"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func TestCompleteDoesNotModifyContent(t *testing.T) {
	req := mustParse(t, "s", formParams(`{"n": {"type": "integer", "default": 1}, "m": {"type": "integer"}}`))
	content := map[string]any{"m": 2.0}
	if _, err := req.Complete(content); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"m": 2.0}; !reflect.DeepEqual(content, want) {
		t.Errorf("content changed to %v", content)
	}
}

func TestCompleteValid(t *testing.T) {
	req := mustParse(t, "s", formParams(`{
		"s": {"type": "string", "minLength": 2, "maxLength": 4},
		"n": {"type": "number", "minimum": -1.5, "maximum": 10},
		"i": {"type": "integer", "minimum": 0},
		"b": {"type": "boolean"},
		"e": {"type": "string", "oneOf": [{"const": "x", "title": "X"}]},
		"m": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2},
		"email": {"type": "string", "format": "email"},
		"uri": {"type": "string", "format": "uri"},
		"date": {"type": "string", "format": "date"},
		"dt": {"type": "string", "format": "date-time"},
		"pw": {"type": "string", "format": "password"}
	}`, "s"))
	tests := []struct {
		name    string
		content map[string]any
		want    map[string]any
	}{
		{"only the required", map[string]any{"s": "ab"}, map[string]any{"s": "ab"}},
		{"code points, not bytes", map[string]any{"s": "ééé€"}, map[string]any{"s": "ééé€"}},
		{
			name: "everything",
			content: map[string]any{
				"s": "abcd", "n": -1.5, "i": 3.0, "b": false, "e": "x", "m": []any{"a", "c"},
				"email": "ada@example.com", "uri": "https://example.com/x", "date": "2025-11-25",
				"dt": "2025-11-25T10:00:00.5+01:00", "pw": "anything at all",
			},
			want: map[string]any{
				"s": "abcd", "n": -1.5, "i": int64(3), "b": false, "e": "x", "m": []string{"a", "c"},
				"email": "ada@example.com", "uri": "https://example.com/x", "date": "2025-11-25",
				"dt": "2025-11-25T10:00:00.5+01:00", "pw": "anything at all",
			},
		},
		{
			name:    "go numbers and json.Number",
			content: map[string]any{"s": "ab", "n": 7, "i": json.Number("9007199254740993")},
			want:    map[string]any{"s": "ab", "n": 7.0, "i": int64(9007199254740993)},
		},
		{
			name:    "integral float in exponent form",
			content: map[string]any{"s": "ab", "i": json.Number("1e3"), "m": []string{"b"}},
			want:    map[string]any{"s": "ab", "i": int64(1000), "m": []string{"b"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := req.Complete(tt.content)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestCompleteInvalid(t *testing.T) {
	const secret = "hunter2-S3CRET"
	req := mustParse(t, "s", formParams(`{
		"password": {"type": "string", "minLength": 20, "maxLength": 30},
		"short": {"type": "string", "maxLength": 3},
		"n": {"type": "number", "minimum": 0, "maximum": 10},
		"i": {"type": "integer"},
		"b": {"type": "boolean"},
		"e": {"type": "string", "enum": ["a", "b"]},
		"m": {"type": "array", "items": {"anyOf": [{"const": "a"}, {"const": "b"}, {"const": "c"}]}, "minItems": 1, "maxItems": 2},
		"email": {"type": "string", "format": "email"},
		"uri": {"type": "string", "format": "uri"},
		"date": {"type": "string", "format": "date"},
		"dt": {"type": "string", "format": "date-time"}
	}`, "b"))
	tests := []struct {
		name    string
		content map[string]any
		field   string
	}{
		{"required missing", map[string]any{}, "b"},
		{"required nil", map[string]any{"b": nil}, "b"},
		{"too short", map[string]any{"b": true, "password": secret}, "password"},
		{"too long", map[string]any{"b": true, "short": secret}, "short"},
		{"string as number", map[string]any{"b": true, "n": secret}, "n"},
		{"below minimum", map[string]any{"b": true, "n": -0.5}, "n"},
		{"above maximum", map[string]any{"b": true, "n": 10.5}, "n"},
		{"not integral", map[string]any{"b": true, "i": 1.5}, "i"},
		{"integer as string", map[string]any{"b": true, "i": secret}, "i"},
		{"integer too large", map[string]any{"b": true, "i": 1e300}, "i"},
		{"bad json.Number", map[string]any{"b": true, "i": json.Number(secret)}, "i"},
		{"boolean as string", map[string]any{"b": "true"}, "b"},
		{"not a choice", map[string]any{"b": true, "e": secret}, "e"},
		{"multi not a choice", map[string]any{"b": true, "m": []any{"a", secret}}, "m"},
		{"multi not strings", map[string]any{"b": true, "m": []any{"a", 1.0}}, "m"},
		{"multi as string", map[string]any{"b": true, "m": "a"}, "m"},
		{"multi too few", map[string]any{"b": true, "m": []string{}}, "m"},
		{"multi too many", map[string]any{"b": true, "m": []string{"a", "b", "c"}}, "m"},
		{"email without at", map[string]any{"b": true, "email": secret}, "email"},
		{"email with space", map[string]any{"b": true, "email": "a b@example.com"}, "email"},
		{"relative uri", map[string]any{"b": true, "uri": secret}, "uri"},
		{"bad date", map[string]any{"b": true, "date": "2025-13-01"}, "date"},
		{"bad date-time", map[string]any{"b": true, "dt": "2025-11-25 10:00"}, "dt"},
		{"unknown field", map[string]any{"b": true, "extra": secret}, "extra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := req.Complete(tt.content)
			if err == nil {
				t.Fatalf("Complete succeeded: %v", got)
			}
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v (%T) is not an *InvalidError", err, err)
			}
			if ie.Field != tt.field {
				t.Errorf("Field = %q, want %q (error %v)", ie.Field, tt.field, err)
			}
			if !strings.Contains(err.Error(), `"`+tt.field+`"`) {
				t.Errorf("error %q does not name the field", err)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q quotes the value", err)
			}
		})
	}
}

func TestCompleteURLMode(t *testing.T) {
	req := mustParse(t, "s", json.RawMessage(`{"mode":"url","message":"m","url":"https://example.com","elicitationId":"e"}`))
	if got, err := req.Complete(nil); err != nil || got != nil {
		t.Errorf("Complete(nil) = %v, %v; want nil, nil", got, err)
	}
	if _, err := req.Complete(map[string]any{"x": "y"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Complete with content: %v, want ErrInvalid", err)
	}
}
