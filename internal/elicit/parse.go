package elicit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// createParams is ElicitRequestParams, form and url variants together.
type createParams struct {
	Mode            Mode            `json:"mode"`
	Message         *string         `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             *string         `json:"url"`
	ElicitationID   *string         `json:"elicitationId"`
	Meta            struct {
		RelatedTask struct {
			TaskID string `json:"taskId"`
		} `json:"io.modelcontextprotocol/related-task"`
	} `json:"_meta"`
}

type requestedSchema struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
	Required   []string        `json:"required"`
}

type choice struct {
	Const *string `json:"const"`
	Title string  `json:"title"`
}

// propertySchema is PrimitiveSchemaDefinition, every variant together.
type propertySchema struct {
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Format      string          `json:"format"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	Enum        []string        `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []choice        `json:"oneOf"`
	AnyOf       []choice        `json:"anyOf"`
	Items       *itemsSchema    `json:"items"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
	Default     json.RawMessage `json:"default"`
	WriteOnly   bool            `json:"writeOnly"`
	// Present only to refuse nested objects.
	Properties json.RawMessage `json:"properties"`
}

type itemsSchema struct {
	Type  string   `json:"type"`
	Enum  []string `json:"enum"`
	AnyOf []choice `json:"anyOf"`
}

// sensitiveNames are the substrings of a field name that mark it sensitive.
var sensitiveNames = []string{"password", "passphrase", "secret", "token"}

// Parse decodes the params of an elicitation/create request sent by server.
//
// A request without mode is form mode. A form's requestedSchema must be a
// flat object whose properties are strings, numbers, integers, booleans or
// multi-selects of string choices; enums may be untitled (enum), titled
// (oneOf of const and title) or legacy (enum with enumNames), and
// multi-selects use items.enum or items.anyOf. A url-mode request needs a
// URL that passes ValidateURL and an elicitationId.
//
// A field is sensitive when its format is "password", it is writeOnly, or
// its name contains, ignoring case, password, passphrase, secret or token.
//
// Every error is an *InvalidError, to be answered with JSON-RPC -32602.
func Parse(server string, params json.RawMessage) (*Request, error) {
	var p createParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalid("", "params must be a JSON object")
	}
	if p.Message == nil {
		return nil, invalid("message", "is required")
	}
	req := &Request{
		Server:      server,
		Mode:        p.Mode,
		Message:     *p.Message,
		RelatedTask: p.Meta.RelatedTask.TaskID,
	}
	switch req.Mode {
	case "", ModeForm:
		req.Mode = ModeForm
		if len(p.RequestedSchema) == 0 || string(p.RequestedSchema) == "null" {
			return nil, invalid("requestedSchema", "is required in form mode")
		}
		fields, err := parseSchema(p.RequestedSchema)
		if err != nil {
			return nil, err
		}
		req.Fields = fields
		req.Schema = append(json.RawMessage(nil), p.RequestedSchema...)
	case ModeURL:
		if p.URL == nil {
			return nil, invalid("url", "is required in url mode")
		}
		if err := ValidateURL(*p.URL); err != nil {
			return nil, err
		}
		if p.ElicitationID == nil || *p.ElicitationID == "" {
			return nil, invalid("elicitationId", "is required in url mode")
		}
		req.URL = *p.URL
		req.ElicitationID = *p.ElicitationID
	default:
		return nil, invalid("mode", fmt.Sprintf("%q is not a supported mode", string(req.Mode)))
	}
	return req, nil
}

func parseSchema(raw json.RawMessage) ([]Field, error) {
	var s requestedSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, invalid("requestedSchema", "must be a JSON object")
	}
	if s.Type != "object" {
		return nil, invalid("requestedSchema", `must have type "object"`)
	}
	names, props, err := orderedObject(s.Properties)
	if err != nil {
		return nil, err
	}
	fields := make([]Field, 0, len(names))
	index := make(map[string]int, len(names))
	for i, name := range names {
		f, err := parseField(name, props[i])
		if err != nil {
			return nil, err
		}
		index[name] = len(fields)
		fields = append(fields, f)
	}
	for _, name := range s.Required {
		i, ok := index[name]
		if !ok {
			return nil, invalid(name, "is required but not a property")
		}
		fields[i].Required = true
	}
	return fields, nil
}

// orderedObject splits a JSON object into its keys and values in document
// order, which encoding/json's map decoding would lose. Null or absent is
// an empty object.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	bad := invalid("requestedSchema", "properties must be a JSON object")
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, bad
	}
	var (
		names  []string
		values []json.RawMessage
		seen   = make(map[string]bool)
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, bad
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, bad
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, bad
		}
		if seen[name] {
			return nil, nil, invalid(name, "is a duplicate property")
		}
		seen[name] = true
		names = append(names, name)
		values = append(values, v)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, nil, bad
	}
	return names, values, nil
}

func parseField(name string, raw json.RawMessage) (Field, error) {
	var p propertySchema
	if err := json.Unmarshal(raw, &p); err != nil {
		return Field{}, invalid(name, "has a malformed schema: "+jsonReason(err))
	}
	f := Field{
		Name:        name,
		Title:       p.Title,
		Description: p.Description,
		Type:        p.Type,
		Format:      p.Format,
		MinLength:   p.MinLength,
		MaxLength:   p.MaxLength,
		Minimum:     p.Minimum,
		Maximum:     p.Maximum,
		MinItems:    p.MinItems,
		MaxItems:    p.MaxItems,
	}
	if len(p.Properties) > 0 && string(p.Properties) != "null" {
		return Field{}, invalid(name, "is a nested object; only primitive properties are allowed")
	}
	switch p.Type {
	case TypeString:
		opts, err := stringOptions(name, p)
		if err != nil {
			return Field{}, err
		}
		f.Options = opts
	case TypeNumber, TypeInteger, TypeBoolean:
		if p.Enum != nil || p.OneOf != nil {
			return Field{}, invalid(name, "has choices, which only strings and arrays may have")
		}
	case TypeArray:
		opts, err := itemOptions(name, p.Items)
		if err != nil {
			return Field{}, err
		}
		f.Options, f.Multi = opts, true
	case "":
		return Field{}, invalid(name, "has no type")
	default:
		return Field{}, invalid(name, fmt.Sprintf("has type %q; only string, number, integer, boolean and array of choices are allowed", p.Type))
	}
	if err := checkBounds(name, p); err != nil {
		return Field{}, err
	}
	f.Sensitive = p.Format == "password" || p.WriteOnly || sensitiveName(name)
	if len(p.Default) > 0 && string(p.Default) != "null" {
		var v any
		if err := json.Unmarshal(p.Default, &v); err != nil {
			return Field{}, invalid(name, "has a malformed default")
		}
		if _, reason := f.check(v); reason != "" {
			return Field{}, invalid(name, "has a default that does not fit its schema: it "+reason)
		}
		f.Default = append(json.RawMessage(nil), p.Default...)
	}
	return f, nil
}

func stringOptions(name string, p propertySchema) ([]Option, error) {
	switch {
	case p.OneOf != nil && p.Enum != nil:
		return nil, invalid(name, "has both enum and oneOf")
	case p.OneOf != nil:
		return choices(name, p.OneOf)
	case p.EnumNames != nil && len(p.EnumNames) != len(p.Enum):
		return nil, invalid(name, "has enumNames of a different length than enum")
	case p.Enum != nil:
		if len(p.Enum) == 0 {
			return nil, invalid(name, "has an empty enum")
		}
		opts := make([]Option, len(p.Enum))
		for i, v := range p.Enum {
			opts[i] = Option{Value: v, Title: v}
			if p.EnumNames != nil && p.EnumNames[i] != "" {
				opts[i].Title = p.EnumNames[i]
			}
		}
		return opts, nil
	}
	return nil, nil
}

func itemOptions(name string, items *itemsSchema) ([]Option, error) {
	if items == nil {
		return nil, invalid(name, "is an array without items; only arrays of choices are allowed")
	}
	if items.Type != "" && items.Type != TypeString {
		return nil, invalid(name, "has items that are not strings")
	}
	switch {
	case items.AnyOf != nil && items.Enum != nil:
		return nil, invalid(name, "has items with both enum and anyOf")
	case items.AnyOf != nil:
		return choices(name, items.AnyOf)
	case len(items.Enum) > 0:
		opts := make([]Option, len(items.Enum))
		for i, v := range items.Enum {
			opts[i] = Option{Value: v, Title: v}
		}
		return opts, nil
	}
	return nil, invalid(name, "is an array without choices; only arrays of choices are allowed")
}

func choices(name string, cs []choice) ([]Option, error) {
	if len(cs) == 0 {
		return nil, invalid(name, "has no choices")
	}
	opts := make([]Option, len(cs))
	for i, c := range cs {
		if c.Const == nil {
			return nil, invalid(name, "has a choice without const")
		}
		opts[i] = Option{Value: *c.Const, Title: c.Title}
		if c.Title == "" {
			opts[i].Title = *c.Const
		}
	}
	return opts, nil
}

func checkBounds(name string, p propertySchema) error {
	for _, b := range []struct {
		min, max *int
		what     string
	}{{p.MinLength, p.MaxLength, "length"}, {p.MinItems, p.MaxItems, "items"}} {
		if (b.min != nil && *b.min < 0) || (b.max != nil && *b.max < 0) {
			return invalid(name, "has a negative "+b.what+" bound")
		}
		if b.min != nil && b.max != nil && *b.min > *b.max {
			return invalid(name, "has min "+b.what+" above max "+b.what)
		}
	}
	if p.Minimum != nil && p.Maximum != nil && *p.Minimum > *p.Maximum {
		return invalid(name, "has minimum above maximum")
	}
	return nil
}

func sensitiveName(name string) bool {
	lower := strings.ToLower(name)
	for _, s := range sensitiveNames {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// jsonReason names the JSON problem without quoting the input.
func jsonReason(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return "not a JSON object"
	}
	t := te.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	kind := "object"
	switch t.Kind() {
	case reflect.String:
		kind = "string"
	case reflect.Bool:
		kind = "boolean"
	case reflect.Slice:
		kind = "array"
	case reflect.Int, reflect.Float64:
		kind = "number"
	}
	return te.Field + " must be a JSON " + kind
}
