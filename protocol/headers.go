package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// This file holds the client side of 2026-07-28's custom headers (SEP-2243):
// a tool may annotate properties of its inputSchema with "x-mcp-header", and
// a client on the Streamable HTTP transport must then mirror those arguments
// of each tools/call into Mcp-Param-{Name} headers, and must leave out of
// tools/list a tool whose annotations break the spec's constraints.
// ParamHeaders reads and checks the annotations once per tools/list;
// ParamHeaderValues runs on every call and scans the arguments by hand.

// ParamHeaderPrefix starts the name of every header that mirrors a tool
// argument: Mcp-Param-{Name}.
const ParamHeaderPrefix = "Mcp-Param-"

// ParamHeader is one x-mcp-header annotation of a tool's inputSchema: the
// header Mcp-Param-{Name} mirrors the argument at Path (a chain of properties
// keys from the root), whose schema type is Type ("string", "integer" or
// "boolean").
type ParamHeader struct {
	Name string
	Path []string
	Type string
}

// HeaderName returns the name of the header that carries the argument,
// ParamHeaderPrefix+Name.
func (h ParamHeader) HeaderName() string { return ParamHeaderPrefix + h.Name }

// HeaderField is one HTTP header to send. Value is already encoded: it holds
// only bytes 0x20-0x7E and may be written as is.
type HeaderField struct {
	Name, Value string
}

// keyParamHeader is the schema keyword of SEP-2243.
const keyParamHeader = "x-mcp-header"

// ParamHeaders validates every x-mcp-header annotation in a tool's
// inputSchema and returns them, ordered by Path, or nil, nil when there are
// none. It fails, wrapping ErrInvalidParamHeader with the property and the
// reason, on any annotation that breaks a constraint of the spec; the client
// must then leave the whole tool out of tools/list. An annotation is valid
// when:
//
//   - its value is a non-empty string and an HTTP token (RFC 9110 1*tchar:
//     no space, colon, control character or non-ASCII byte);
//   - no other annotation of the schema has the same value, ignoring case;
//   - it sits on a property whose "type" is "string", "integer" or
//     "boolean" (not "number", "object", "array", "null", a list of types,
//     or no type);
//   - that property is reached from the root through "properties" keys
//     alone. An annotation anywhere else (under items, prefixItems,
//     additionalProperties, patternProperties, oneOf, anyOf, allOf, not,
//     if/then/else, $defs, definitions, dependentSchemas, or any keyword
//     this function does not know) makes the tool invalid, as does one on
//     the root schema itself.
//
// Only schema positions count: a property named "x-mcp-header", or an
// object with that member inside const, default, enum or examples (instance
// data, not schemas), is not an annotation. Of duplicate members of an
// object the last counts, as in encoding/json and JavaScript.
//
// ParamHeaders does not otherwise validate the schema. A schema whose text
// cannot spell the key x-mcp-header (it holds neither that string nor a
// \u escape) is returned nil, nil unparsed, which is the common case and
// costs one scan; a schema that can but is not valid JSON is an error. It
// decodes the schema with encoding/json, which is fine for a function that
// runs once per tools/list, not per call.
func ParamHeaders(inputSchema json.RawMessage) ([]ParamHeader, error) {
	if !bytes.Contains(inputSchema, []byte(keyParamHeader)) && !bytes.Contains(inputSchema, []byte(`\u`)) {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(inputSchema))
	d.UseNumber() // a "maximum": 1e400 must not fail the decode
	var root any
	if err := d.Decode(&root); err != nil {
		return nil, fmt.Errorf("%w: inputSchema is not valid json: %v", ErrInvalidParamHeader, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: inputSchema is not valid json: data after the value", ErrInvalidParamHeader)
	}
	w := headerWalk{seen: map[string]int{}}
	if err := w.schema(root, true); err != nil {
		return nil, err
	}
	return w.found, nil
}

// headerWalk collects the annotations of one schema.
type headerWalk struct {
	found []ParamHeader
	seen  map[string]int // lower-case name → index in found
	loc   []string       // JSON Pointer tokens of the value being walked
	path  []string       // properties keys that led to it, while reachable
}

// schema walks the schema v; reachable says whether only properties keys
// led to it, w.path holding them.
func (w *headerWalk) schema(v any, reachable bool) error {
	m, ok := v.(map[string]any)
	if !ok {
		// Boolean schemas hold no keywords. Other values in a schema
		// position are malformed; an object inside them is still searched.
		return w.any(v)
	}
	if name, ok := m[keyParamHeader]; ok {
		if err := w.annotation(m, name, reachable); err != nil {
			return err
		}
	}
	for _, k := range sortedSchemaKeys(m) {
		if k == keyParamHeader {
			continue
		}
		v := m[k]
		w.loc = append(w.loc, k)
		var err error
		switch k {
		case "properties":
			if props, ok := v.(map[string]any); ok {
				for _, name := range sortedSchemaKeys(props) {
					w.loc = append(w.loc, name)
					if reachable {
						w.path = append(w.path, name)
					}
					err = w.schema(props[name], reachable)
					if reachable {
						w.path = w.path[:len(w.path)-1]
					}
					w.loc = w.loc[:len(w.loc)-1]
					if err != nil {
						break
					}
				}
			} else {
				err = w.any(v)
			}
		case "$defs", "definitions", "patternProperties", "dependentSchemas", "dependencies":
			// Maps whose keys are names, not keywords, and whose values
			// are schemas (or, in draft-07 dependencies, lists of names).
			err = w.schemaMap(v)
		case "const", "default", "enum", "examples", "dependentRequired":
			// Instance data and lists of property names: no schemas.
		default:
			// items, prefixItems, additionalProperties, not, if, then,
			// else, oneOf, anyOf, allOf, contains, propertyNames, … and
			// keywords unknown to us: searched, never reachable.
			err = w.any(v)
		}
		w.loc = w.loc[:len(w.loc)-1]
		if err != nil {
			return err
		}
	}
	return nil
}

// schemaMap walks an object whose members are each a schema, none of them
// reachable.
func (w *headerWalk) schemaMap(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return w.any(v)
	}
	for _, k := range sortedSchemaKeys(m) {
		w.loc = append(w.loc, k)
		err := w.schema(m[k], false)
		w.loc = w.loc[:len(w.loc)-1]
		if err != nil {
			return err
		}
	}
	return nil
}

// any walks a value that is a schema, a list of schemas, or a scalar, none
// of them reachable.
func (w *headerWalk) any(v any) error {
	switch v := v.(type) {
	case map[string]any:
		return w.schema(v, false)
	case []any:
		for i, e := range v {
			w.loc = append(w.loc, strconv.Itoa(i))
			err := w.any(e)
			w.loc = w.loc[:len(w.loc)-1]
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// annotation checks the x-mcp-header member name of the schema m and records
// it.
func (w *headerWalk) annotation(m map[string]any, name any, reachable bool) error {
	path := w.path
	label := schemaText(name)
	var where string
	switch {
	case len(w.loc) == 0:
		where = "on the schema root"
	case reachable:
		where = "on property " + strconv.Quote(strings.Join(path, "."))
	default:
		where = "at " + strconv.Quote(jsonPointer(w.loc))
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w %s %s: %s", ErrInvalidParamHeader, label, where, fmt.Sprintf(format, args...))
	}
	switch {
	case len(w.loc) == 0:
		return fail("only a property may be annotated")
	case !reachable:
		return fail(`not statically reachable: only a chain of "properties" keys from the root may lead to an annotated property`)
	}
	s, ok := name.(string)
	if !ok {
		return fail("not a string")
	}
	if s == "" {
		return fail("empty")
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return fail("not an HTTP token (byte %q at offset %d)", s[i], i)
		}
	}
	typ, ok := m["type"].(string)
	switch {
	case !ok && m["type"] == nil:
		return fail(`property has no "type"; it must be "string", "integer" or "boolean"`)
	case !ok:
		return fail(`property "type" is %s; it must be one of "string", "integer", "boolean"`, schemaText(m["type"]))
	case typ != "string" && typ != "integer" && typ != "boolean":
		return fail(`property type %q is not allowed; it must be "string", "integer" or "boolean"`, typ)
	}
	key := strings.ToLower(s) // s is ASCII: tchar
	if i, dup := w.seen[key]; dup {
		prev := w.found[i]
		return fail("same name, ignoring case, as %q on property %q", prev.Name, strings.Join(prev.Path, "."))
	}
	w.seen[key] = len(w.found)
	w.found = append(w.found, ParamHeader{Name: s, Path: slices.Clone(path), Type: typ})
	return nil
}

// isTchar reports whether c is an RFC 9110 tchar: "!" / "#" / "$" / "%" /
// "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT /
// ALPHA.
func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func sortedSchemaKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// jsonPointer formats tokens as an RFC 6901 JSON Pointer.
func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

// schemaText renders a decoded value for an error message.
func schemaText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ParamHeaderValues returns the headers to send with a tools/call whose
// arguments object is args, for the annotations hs of the tool (from
// ParamHeaders): one HeaderField per annotation whose argument is present,
// named ParamHeaderPrefix+Name, in the order of hs. See
// AppendParamHeaderValues.
func ParamHeaderValues(hs []ParamHeader, args json.RawMessage) []HeaderField {
	return AppendParamHeaderValues(nil, hs, args)
}

// AppendParamHeaderValues appends to dst the headers ParamHeaderValues
// returns, without reflection.
//
// The argument is read at the exact Path (the last of duplicate members
// counts, as in encoding/json). It is converted by its JSON type, whatever
// type the schema declares, since a server compares the header with the
// body it got:
//
//   - a string as is, through EncodeHeaderValue;
//   - true and false as "true" and "false";
//   - an integral number (42, -7, 42.0, 4.2e1) as a decimal integer ("42"),
//     and "-0" as "0"; other numbers (3.5) as their JSON text;
//   - null, an object, an array, a missing value, or a step of Path that is
//     not an object: no header, as the spec says for null and missing.
//
// An integral number outside JavaScript's safe range, beyond ±(2^53−1), is
// not mirrored either: the spec requires integer values within it, and
// beyond it a JavaScript server cannot hold the body value exactly, so no
// header text is sure to match. Malformed args yield no headers.
func AppendParamHeaderValues(dst []HeaderField, hs []ParamHeader, args json.RawMessage) []HeaderField {
	for _, h := range hs {
		v := valueAt(args, h.Path...)
		if len(v) == 0 {
			continue
		}
		var s string
		switch v[0] {
		case '"':
			s = EncodeHeaderValue(decodeString(v))
		case 't':
			s = "true"
		case 'f':
			s = "false"
		case 'n', '{', '[':
			continue
		default:
			var ok bool
			if s, ok = numberHeaderValue(v); !ok {
				continue
			}
		}
		dst = append(dst, HeaderField{Name: h.HeaderName(), Value: s})
	}
	return dst
}

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER, 2^53−1.
const maxSafeInteger = 1<<53 - 1

// numberHeaderValue returns the header text of the valid JSON number num:
// a decimal integer if num is integral and within ±maxSafeInteger, num
// itself if it has a fractional part, and false if it is integral but out
// of range. It works on the digits, not on a float64, so that 1.0000000000000001
// is not taken for 1.
func numberHeaderValue(num []byte) (string, bool) {
	neg := num[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	j := skipDigits(num, i)
	if j == len(num) { // plain integer: the common case
		digits := num[i:j]
		if len(digits) > 16 { // JSON has no leading zeros: ≥ 10^16
			return "", false
		}
		u, _ := strconv.ParseUint(string(digits), 10, 64)
		return formatSafeInteger(neg, u)
	}
	// The value is the integer D, the digits of the integer and fraction
	// parts, times 10^scale.
	d := append([]byte(nil), num[i:j]...)
	var scale int64
	if j < len(num) && num[j] == '.' {
		k := skipDigits(num, j+1)
		d = append(d, num[j+1:k]...)
		scale = -int64(k - j - 1)
		j = k
	}
	if j < len(num) { // 'e' or 'E'
		j++
		expNeg := num[j] == '-'
		if num[j] == '+' || num[j] == '-' {
			j++
		}
		var exp int64
		for ; j < len(num); j++ {
			if exp < 1<<40 { // saturate: the length of num bounds scale far below
				exp = exp*10 + int64(num[j]-'0')
			}
		}
		if expNeg {
			exp = -exp
		}
		scale += exp
	}
	for len(d) > 0 && d[0] == '0' {
		d = d[1:]
	}
	if len(d) == 0 {
		return "0", true
	}
	for d[len(d)-1] == '0' {
		d = d[:len(d)-1]
		scale++
	}
	switch {
	case scale < 0: // a nonzero last digit after the point
		return string(num), true
	case int64(len(d))+scale > 16:
		return "", false
	}
	for ; scale > 0; scale-- {
		d = append(d, '0')
	}
	u, _ := strconv.ParseUint(string(d), 10, 64)
	return formatSafeInteger(neg, u)
}

func formatSafeInteger(neg bool, u uint64) (string, bool) {
	switch {
	case u > maxSafeInteger:
		return "", false
	case u == 0:
		return "0", true
	case neg:
		return "-" + strconv.FormatUint(u, 10), true
	}
	return strconv.FormatUint(u, 10), true
}

// Markers of a Base64-encoded header value.
const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// EncodeHeaderValue returns s as the value of an Mcp-Param-{Name} or
// Mcp-Name header. It returns s itself when s is plain: only bytes
// 0x20-0x7E, no space at either end, and not of the form
// "=?base64?…?=". Otherwise it returns "=?base64?" + the standard, padded
// Base64 of s's bytes + "?=": for non-ASCII text (UTF-8), any control
// character including tab, CR and LF, DEL, leading or trailing spaces, and
// values that would read as already encoded. The result holds only bytes
// 0x20-0x7E. The empty string is plain: an empty argument is sent as an
// empty header, not omitted.
//
// This is the rule of the official conformance suite, which is stricter than
// RFC 9110 in one point: a tab, though legal inside a field value, is
// encoded too.
func EncodeHeaderValue(s string) string {
	if !needsBase64(s) {
		return s
	}
	n := base64.StdEncoding.EncodedLen(len(s))
	b := make([]byte, 0, len(base64Prefix)+n+len(base64Suffix))
	b = append(b, base64Prefix...)
	b = base64.StdEncoding.AppendEncode(b, []byte(s))
	b = append(b, base64Suffix...)
	return string(b)
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return true
		}
	}
	// The prefix and suffix may overlap ("=?base64?="): encoding a value
	// that needs none costs nothing, reading one as encoded would.
	return s[0] == ' ' || s[len(s)-1] == ' ' ||
		strings.HasPrefix(s, base64Prefix) && strings.HasSuffix(s, base64Suffix)
}

// MirroredName is what a 2026-07-28 request's Mcp-Name header mirrors of
// its body: a tools/call's or prompts/get's name, a resources/read's uri,
// a tasks/get's, tasks/update's or tasks/cancel's taskId. named is false
// for the methods that name nothing.
func MirroredName(method string, params json.RawMessage) (name string, named bool) {
	var p struct {
		Name   string `json:"name"`
		URI    string `json:"uri"`
		TaskID string `json:"taskId"`
	}
	switch method {
	case MethodToolsCall, MethodPromptsGet:
		_ = json.Unmarshal(params, &p)
		return p.Name, true
	case MethodResourcesRead:
		_ = json.Unmarshal(params, &p)
		return p.URI, true
	case MethodTasksGet, MethodTasksUpdate, MethodTasksCancel:
		_ = json.Unmarshal(params, &p)
		return p.TaskID, true
	}
	return "", false
}
