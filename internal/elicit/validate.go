package elicit

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults returns the schema defaults of a form, decoded and typed as
// Complete returns them, for a UI to pre-fill the form. Fields without a
// default are absent. It is empty in url mode.
func (r *Request) Defaults() map[string]any {
	d := make(map[string]any)
	for i := range r.Fields {
		if v, ok := r.Fields[i].defaultValue(); ok {
			d[r.Fields[i].Name] = v
		}
	}
	return d
}

// Complete checks the content of an accept and returns it ready to send.
//
// In form mode it first applies the schema defaults (SEP-1034) to omitted
// fields (a nil value counts as omitted), then checks every field against
// its schema: required fields are present; types match (numbers may be any
// Go number or json.Number, and integers must be integral); strings respect
// minLength and maxLength, and numbers minimum and maximum; choices are among
// the options, and multi-selects respect minItems and maxItems; email, uri,
// date and date-time formats are checked loosely; and no field outside the
// schema is present. The result is a new map whose values are string,
// float64 (number), int64 (integer), bool or []string (multi-select).
//
// In url mode the content must be empty, and the result is nil.
//
// The error is an *InvalidError naming the first field at fault, in form
// order; it never quotes the value. content is not modified.
func (r *Request) Complete(content map[string]any) (map[string]any, error) {
	if r.Mode == ModeURL {
		if len(content) > 0 {
			return nil, invalid("", "content must be empty when accepting a url-mode elicitation")
		}
		return nil, nil
	}
	out := make(map[string]any, len(r.Fields))
	for i := range r.Fields {
		f := &r.Fields[i]
		v, ok := content[f.Name]
		if !ok || v == nil {
			if d, ok := f.defaultValue(); ok {
				out[f.Name] = d
			} else if f.Required {
				return nil, invalid(f.Name, "is required")
			}
			continue
		}
		norm, reason := f.check(v)
		if reason != "" {
			return nil, invalid(f.Name, reason)
		}
		out[f.Name] = norm
	}
	var unknown []string
	for name := range content {
		if _, ok := r.Field(name); !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, invalid(unknown[0], "is not a field of the form")
	}
	return out, nil
}

// defaultValue decodes the field's default. Parse checked it against the
// schema, so only a hand-built Field can fail here, and then it has none.
func (f *Field) defaultValue() (any, bool) {
	if len(f.Default) == 0 {
		return nil, false
	}
	var v any
	if err := json.Unmarshal(f.Default, &v); err != nil || v == nil {
		return nil, false
	}
	norm, reason := f.check(v)
	if reason != "" {
		return nil, false
	}
	return norm, true
}

// check validates v against the field and returns it in canonical form, or
// the reason it does not fit ("must be ..."). The reason never quotes v.
func (f *Field) check(v any) (any, string) {
	switch f.Type {
	case TypeString:
		s, ok := v.(string)
		if !ok {
			return nil, "must be a string"
		}
		return s, f.checkString(s)
	case TypeNumber:
		x, ok := toFloat(v)
		if !ok {
			return nil, "must be a number"
		}
		return x, f.checkRange(x)
	case TypeInteger:
		n, ok := toInt(v)
		if !ok {
			return nil, "must be an integer"
		}
		return n, f.checkRange(float64(n))
	case TypeBoolean:
		b, ok := v.(bool)
		if !ok {
			return nil, "must be a boolean"
		}
		return b, ""
	case TypeArray:
		items, ok := toStrings(v)
		if !ok {
			return nil, "must be a list of strings"
		}
		return items, f.checkItems(items)
	}
	return nil, "has an unsupported type"
}

func (f *Field) checkString(s string) string {
	if len(f.Options) > 0 {
		if !f.hasOption(s) {
			return "must be one of the choices"
		}
		return ""
	}
	n := utf8.RuneCountInString(s)
	if f.MinLength != nil && n < *f.MinLength {
		return fmt.Sprintf("must be at least %d characters", *f.MinLength)
	}
	if f.MaxLength != nil && n > *f.MaxLength {
		return fmt.Sprintf("must be at most %d characters", *f.MaxLength)
	}
	if !formatOK(f.Format, s) {
		return "must be a valid " + f.Format
	}
	return ""
}

func (f *Field) checkRange(x float64) string {
	if f.Minimum != nil && x < *f.Minimum {
		return "must be at least " + strconv.FormatFloat(*f.Minimum, 'g', -1, 64)
	}
	if f.Maximum != nil && x > *f.Maximum {
		return "must be at most " + strconv.FormatFloat(*f.Maximum, 'g', -1, 64)
	}
	return ""
}

func (f *Field) checkItems(items []string) string {
	for _, s := range items {
		if !f.hasOption(s) {
			return "must hold only the listed choices"
		}
	}
	if f.MinItems != nil && len(items) < *f.MinItems {
		return fmt.Sprintf("must have at least %d choices", *f.MinItems)
	}
	if f.MaxItems != nil && len(items) > *f.MaxItems {
		return fmt.Sprintf("must have at most %d choices", *f.MaxItems)
	}
	return ""
}

func (f *Field) hasOption(s string) bool {
	for _, o := range f.Options {
		if o.Value == s {
			return true
		}
	}
	return false
}

// formatOK checks the formats the spec names, loosely: the host cannot know
// what the server will accept, only catch obvious slips. Other formats,
// password among them, are not checked.
func formatOK(format, s string) bool {
	switch format {
	case "email":
		at := strings.LastIndexByte(s, '@')
		return at > 0 && at < len(s)-1 && !strings.ContainsFunc(s, unicode.IsSpace)
	case "uri":
		u, err := url.Parse(s)
		return err == nil && u.Scheme != "" && !strings.ContainsFunc(s, unicode.IsSpace)
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "date-time":
		_, err := time.Parse(time.RFC3339, s)
		return err == nil
	}
	return true
}

func toFloat(v any) (float64, bool) {
	var x float64
	switch n := v.(type) {
	case float64:
		x = n
	case float32:
		x = float64(n)
	case int:
		x = float64(n)
	case int8:
		x = float64(n)
	case int16:
		x = float64(n)
	case int32:
		x = float64(n)
	case int64:
		x = float64(n)
	case uint:
		x = float64(n)
	case uint8:
		x = float64(n)
	case uint16:
		x = float64(n)
	case uint32:
		x = float64(n)
	case uint64:
		x = float64(n)
	case json.Number:
		var err error
		if x, err = n.Float64(); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return x, !math.IsNaN(x) && !math.IsInf(x, 0)
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint:
		return int64(n), uint64(n) <= math.MaxInt64
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		return int64(n), n <= math.MaxInt64
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
	}
	x, ok := toFloat(v)
	// 2^63 is exactly representable; every float64 below it and integral
	// converts without loss.
	if !ok || x != math.Trunc(x) || x < -(1<<63) || x >= 1<<63 {
		return 0, false
	}
	return int64(x), true
}

func toStrings(v any) ([]string, bool) {
	switch l := v.(type) {
	case []string:
		out := make([]string, len(l))
		copy(out, l)
		return out, true
	case []any:
		out := make([]string, len(l))
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}
