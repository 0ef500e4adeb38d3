package protocol

import (
	"encoding/json"
	"fmt"
)

// Keys of _meta that 2025-11-25 reserves.
const (
	// MetaProgressToken is the _meta key by which a request opts in to
	// notifications/progress.
	MetaProgressToken = "progressToken"
	// MetaRelatedTask ties a message to a task: {"taskId":"…"}.
	MetaRelatedTask = "io.modelcontextprotocol/related-task"
	// MetaModelImmediateResponse is interim text for the model that a
	// CreateTaskResult may carry in its _meta.
	MetaModelImmediateResponse = "io.modelcontextprotocol/model-immediate-response"
)

// ProgressTokenMeta returns the _meta object {"progressToken":token}.
func ProgressTokenMeta(token string) json.RawMessage {
	b := make([]byte, 0, len(`{"progressToken":""}`)+len(token))
	b = append(b, `{"progressToken":`...)
	b = appendString(b, token)
	return append(b, '}')
}

// MergeMeta returns meta with key set to value, replacing any member of that
// name. An empty or null meta yields a new object. Members it keeps stay as
// written, except that raw newlines become spaces so the result fits in a
// stdio frame. It does not modify meta. It fails, wrapping ErrInvalidMeta, if
// meta is not a JSON object or value is not valid JSON.
func MergeMeta(meta json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	if !json.Valid(value) {
		return nil, fmt.Errorf("%w: value for %q is not valid json", ErrInvalidMeta, key)
	}
	out := make([]byte, 0, len(meta)+len(key)+len(value)+8)
	out = append(out, '{')
	if !isBlank(meta) && !isNull(trimSpace(meta)) {
		ok := eachMember(meta, func(m member, text []byte) {
			if string(m.key) == key {
				return
			}
			out = appendRaw(out, text)
			out = append(out, ',')
		})
		if !ok {
			return nil, fmt.Errorf("%w: not a json object", ErrInvalidMeta)
		}
	}
	out = appendString(out, key)
	out = append(out, ':')
	out = appendRaw(out, trimSpace(value))
	return append(out, '}'), nil
}

// RelatedTaskID returns the taskId of meta's related-task member, or "" if
// meta has none or is not an object.
func RelatedTaskID(meta json.RawMessage) string {
	return stringAt(meta, MetaRelatedTask, "taskId")
}

// ModelImmediateResponse returns the model-immediate-response string of a
// CreateTaskResult's _meta, or "" if there is none.
func ModelImmediateResponse(meta json.RawMessage) string {
	return stringAt(meta, MetaModelImmediateResponse)
}

// eachMember calls fn for each top-level member of the object raw, with the
// member's text from its key to the end of its value. It reports whether raw
// is one well-formed JSON object; fn may have been called even when not.
func eachMember(raw []byte, fn func(m member, text []byte)) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return skipSpace(raw, i+1) == len(raw)
	}
	for {
		m, _, ok := scanMember(raw, i)
		if !ok {
			return false
		}
		fn(m, raw[i:m.end])
		i = m.next
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return skipSpace(raw, i+1) == len(raw)
		default:
			return false
		}
	}
}

// valueAt returns the raw value at path inside the object raw, taking the
// last of duplicate members as encoding/json does. It returns nil if a step
// is missing or not an object. Keys match exactly.
func valueAt(raw []byte, path ...string) []byte {
	for _, key := range path {
		var found []byte
		if !eachMember(raw, func(m member, _ []byte) {
			if string(m.key) == key {
				found = m.value
			}
		}) {
			return nil
		}
		if found == nil {
			return nil
		}
		raw = found
	}
	return raw
}

// stringAt returns the string at path inside raw, or "" if there is none.
func stringAt(raw []byte, path ...string) string {
	v := valueAt(raw, path...)
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	return decodeString(v)
}

// declared reports whether the capability at path inside raw is present and
// neither null nor false. The spec writes declared features as {}.
func declared(raw []byte, path ...string) bool {
	return declaredRaw(valueAt(raw, path...))
}

// trimSpace drops JSON whitespace around b.
func trimSpace(b []byte) []byte {
	b = b[skipSpace(b, 0):]
	for len(b) > 0 {
		switch b[len(b)-1] {
		case ' ', '\t', '\n', '\r':
			b = b[:len(b)-1]
		default:
			return b
		}
	}
	return b
}
