package elicit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// formParams wraps a requestedSchema's properties into elicitation/create params.
func formParams(properties string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if required == nil {
		req = []byte("[]")
	}
	return json.RawMessage(`{"message":"m","requestedSchema":{"type":"object","properties":` +
		properties + `,"required":` + string(req) + `}}`)
}

func TestParseEnums(t *testing.T) {
	tests := []struct {
		name   string
		prop   string
		multi  bool
		typ    string
		values []Option
	}{
		{
			name:   "untitled single",
			prop:   `{"type":"string","enum":["a","b"]}`,
			typ:    TypeString,
			values: []Option{{"a", "a"}, {"b", "b"}},
		},
		{
			name:   "titled single",
			prop:   `{"type":"string","oneOf":[{"const":"a","title":"Alpha"},{"const":"b","title":"Beta"}]}`,
			typ:    TypeString,
			values: []Option{{"a", "Alpha"}, {"b", "Beta"}},
		},
		{
			name:   "legacy enumNames",
			prop:   `{"type":"string","enum":["a","b"],"enumNames":["Alpha","Beta"]}`,
			typ:    TypeString,
			values: []Option{{"a", "Alpha"}, {"b", "Beta"}},
		},
		{
			name:   "untitled multi",
			prop:   `{"type":"array","items":{"type":"string","enum":["a","b"]},"minItems":1,"maxItems":2}`,
			multi:  true,
			typ:    TypeArray,
			values: []Option{{"a", "a"}, {"b", "b"}},
		},
		{
			name:   "titled multi",
			prop:   `{"type":"array","items":{"anyOf":[{"const":"a","title":"Alpha"},{"const":"b","title":"Beta"}]}}`,
			multi:  true,
			typ:    TypeArray,
			values: []Option{{"a", "Alpha"}, {"b", "Beta"}},
		},
		{
			name:   "titled choice without a title shows its value",
			prop:   `{"type":"string","oneOf":[{"const":"a"}]}`,
			typ:    TypeString,
			values: []Option{{"a", "a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := Parse("s", formParams(`{"choice":`+tt.prop+`}`))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(req.Fields) != 1 {
				t.Fatalf("got %d fields, want 1", len(req.Fields))
			}
			f := req.Fields[0]
			if f.Type != tt.typ || f.Multi != tt.multi {
				t.Errorf("type %q multi %v, want %q %v", f.Type, f.Multi, tt.typ, tt.multi)
			}
			if !reflect.DeepEqual(f.Options, tt.values) {
				t.Errorf("options %v, want %v", f.Options, tt.values)
			}
		})
	}
}

func TestParseForm(t *testing.T) {
	params := json.RawMessage(`{
		"message": "Who are you?",
		"requestedSchema": {
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type": "object",
			"properties": {
				"zeta": {"type": "string", "title": "Zeta", "description": "last letter", "minLength": 1, "maxLength": 5, "format": "email"},
				"alpha": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
				"mid": {"type": "number"},
				"ok": {"type": "boolean", "default": true}
			},
			"required": ["zeta", "ok"]
		},
		"_meta": {"io.modelcontextprotocol/related-task": {"taskId": "task-7"}}
	}`)
	req, err := Parse("srv", params)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if req.Mode != ModeForm || req.Server != "srv" || req.Message != "Who are you?" || req.RelatedTask != "task-7" {
		t.Errorf("got mode %q server %q message %q task %q", req.Mode, req.Server, req.Message, req.RelatedTask)
	}
	var names []string
	for _, f := range req.Fields {
		names = append(names, f.Name)
	}
	if want := []string{"zeta", "alpha", "mid", "ok"}; !reflect.DeepEqual(names, want) {
		t.Errorf("field order %v, want the schema's %v", names, want)
	}
	zeta := req.Fields[0]
	if zeta.Title != "Zeta" || zeta.Description != "last letter" || zeta.Format != "email" ||
		*zeta.MinLength != 1 || *zeta.MaxLength != 5 || !zeta.Required {
		t.Errorf("zeta = %+v", zeta)
	}
	alpha := req.Fields[1]
	if *alpha.Minimum != 0 || *alpha.Maximum != 150 || string(alpha.Default) != "30" || alpha.Required {
		t.Errorf("alpha = %+v", alpha)
	}
	if !req.Fields[3].Required {
		t.Error("ok not required")
	}
	var schema map[string]any
	if err := json.Unmarshal(req.Schema, &schema); err != nil || schema["$schema"] == nil {
		t.Errorf("Schema not kept as sent: %s", req.Schema)
	}
}

func TestParseConfirmation(t *testing.T) {
	req, err := Parse("s", json.RawMessage(`{"mode":"form","message":"Proceed?","requestedSchema":{"type":"object","properties":{}}}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(req.Fields) != 0 {
		t.Errorf("fields %v, want none", req.Fields)
	}
}

func TestParseURL(t *testing.T) {
	req, err := Parse("pay", json.RawMessage(`{"mode":"url","message":"Pay here","url":"https://Pay.Example.com:8443/checkout?x=1","elicitationId":"e-1"}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if req.Mode != ModeURL || req.URL != "https://Pay.Example.com:8443/checkout?x=1" || req.ElicitationID != "e-1" {
		t.Errorf("got %+v", req)
	}
	if got := req.Host(); got != "pay.example.com:8443" {
		t.Errorf("Host() = %q", got)
	}
	if req.Fields != nil || req.Schema != nil {
		t.Errorf("url mode has a form: %+v", req)
	}
}

func TestParseSensitive(t *testing.T) {
	params := formParams(`{
		"user": {"type": "string"},
		"pin": {"type": "string", "format": "password"},
		"otp": {"type": "string", "writeOnly": true},
		"DB_Password": {"type": "string"},
		"keyPassphrase": {"type": "string"},
		"client_SECRET": {"type": "string"},
		"apiToken": {"type": "string"},
		"tokens": {"type": "integer"},
		"email": {"type": "string", "format": "email"}
	}`)
	req, err := Parse("s", params)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []string{"pin", "otp", "DB_Password", "keyPassphrase", "client_SECRET", "apiToken", "tokens"}
	if got := req.Sensitive(); !reflect.DeepEqual(got, want) {
		t.Errorf("Sensitive() = %v, want %v", got, want)
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name   string
		params string
		field  string // the InvalidError's Field
	}{
		{"not json", `{`, ""},
		{"not an object", `[1]`, ""},
		{"no message", `{"requestedSchema":{"type":"object","properties":{}}}`, "message"},
		{"unknown mode", `{"mode":"sms","message":"m"}`, "mode"},
		{"form without schema", `{"message":"m"}`, "requestedSchema"},
		{"schema not object type", `{"message":"m","requestedSchema":{"type":"array"}}`, "requestedSchema"},
		{"schema not an object", `{"message":"m","requestedSchema":"x"}`, "requestedSchema"},
		{"properties not an object", `{"message":"m","requestedSchema":{"type":"object","properties":[]}}`, "requestedSchema"},
		{"nested object", string(formParams(`{"addr":{"type":"object","properties":{"city":{"type":"string"}}}}`)), "addr"},
		{"no type", string(formParams(`{"x":{"title":"X"}}`)), "x"},
		{"type list", string(formParams(`{"x":{"type":["string","null"]}}`)), "x"},
		{"null type", string(formParams(`{"x":{"type":"null"}}`)), "x"},
		{"array of free strings", string(formParams(`{"x":{"type":"array","items":{"type":"string"}}}`)), "x"},
		{"array without items", string(formParams(`{"x":{"type":"array"}}`)), "x"},
		{"array of numbers", string(formParams(`{"x":{"type":"array","items":{"type":"number","enum":[1]}}}`)), "x"},
		{"enum of numbers", string(formParams(`{"x":{"type":"string","enum":[1,2]}}`)), "x"},
		{"empty enum", string(formParams(`{"x":{"type":"string","enum":[]}}`)), "x"},
		{"choice without const", string(formParams(`{"x":{"type":"string","oneOf":[{"title":"A"}]}}`)), "x"},
		{"enumNames mismatch", string(formParams(`{"x":{"type":"string","enum":["a","b"],"enumNames":["A"]}}`)), "x"},
		{"integer with enum", string(formParams(`{"x":{"type":"integer","enum":["1"]}}`)), "x"},
		{"min above max", string(formParams(`{"x":{"type":"string","minLength":5,"maxLength":2}}`)), "x"},
		{"negative length", string(formParams(`{"x":{"type":"string","minLength":-1}}`)), "x"},
		{"minimum above maximum", string(formParams(`{"x":{"type":"number","minimum":5,"maximum":2}}`)), "x"},
		{"default of wrong type", string(formParams(`{"x":{"type":"integer","default":"thirty"}}`)), "x"},
		{"default not integral", string(formParams(`{"x":{"type":"integer","default":1.5}}`)), "x"},
		{"default not a choice", string(formParams(`{"x":{"type":"string","enum":["a"],"default":"b"}}`)), "x"},
		{"required not a property", string(formParams(`{"x":{"type":"string"}}`, "y")), "y"},
		{"duplicate property", string(formParams(`{"x":{"type":"string"},"x":{"type":"number"}}`)), "x"},
		{"url mode without url", `{"mode":"url","message":"m","elicitationId":"e"}`, "url"},
		{"url mode bad url", `{"mode":"url","message":"m","url":"javascript:alert(1)","elicitationId":"e"}`, "url"},
		{"url mode without id", `{"mode":"url","message":"m","url":"https://example.com"}`, "elicitationId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := Parse("s", json.RawMessage(tt.params))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", req)
			}
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v (%T) is not an *InvalidError", err, err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
			}
			if ie.Field != tt.field {
				t.Errorf("Field = %q, want %q (error %v)", ie.Field, tt.field, err)
			}
			if strings.Contains(err.Error(), "alert(1)") {
				t.Errorf("error quotes the input: %v", err)
			}
		})
	}
}
