package protocol

import (
	"encoding/json"
	"testing"
)

// FuzzParseCreateTaskResult checks that a result taken for a task is valid
// JSON without content, holding the task it returned.
func FuzzParseCreateTaskResult(f *testing.F) {
	for _, s := range []string{
		`{"task":{"taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"b","ttl":null}}`,
		`{"taskId":"t","status":"completed","ttl":5}`,
		`{"content":[{"type":"text","text":"x"}],"task":{"taskId":"t","status":"working"}}`,
		`{"t\u0061sk":{"taskId":"t","status":"working"}}`,
		`{"task":{"taskId":"","status":"working"}}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		task, ok := ParseCreateTaskResult(b)
		if !ok {
			if task != nil {
				t.Fatalf("not a task but returned %+v", task)
			}
			return
		}
		if !json.Valid(b) || task.TaskID == "" || task.Status == "" {
			t.Fatalf("ParseCreateTaskResult(%q) = %+v", b, task)
		}
		var call map[string]json.RawMessage
		if json.Unmarshal(b, &call) != nil {
			t.Fatalf("task result %q is not an object", b)
		}
		var res CallToolResult
		if json.Unmarshal(b, &res) == nil && res.Content != nil {
			t.Fatalf("task result %q decodes with content", b)
		}
	})
}

// FuzzMergeMeta checks that MergeMeta yields an object holding value under
// key whenever it succeeds, and succeeds on every object.
func FuzzMergeMeta(f *testing.F) {
	f.Add([]byte(`{"a":1,"k":2}`), "k", []byte(`{"taskId":"t"}`))
	f.Add([]byte(""), "progressToken", []byte(`"p"`))
	f.Add([]byte("{\n\"a\" : [1,\n2]}"), "a\u2028", []byte("[\n]"))
	f.Fuzz(func(t *testing.T, meta []byte, key string, value []byte) {
		got, err := MergeMeta(meta, key, value)
		var obj map[string]json.RawMessage
		metaIsObject := json.Unmarshal(meta, &obj) == nil && obj != nil
		if err != nil {
			if json.Valid(value) && (metaIsObject || isBlank(meta) || string(trimSpace(meta)) == "null") {
				t.Fatalf("MergeMeta(%q, %q, %q) failed: %v", meta, key, value, err)
			}
			return
		}
		var out map[string]json.RawMessage
		if err := json.Unmarshal(got, &out); err != nil {
			t.Fatalf("MergeMeta(%q, %q, %q) = %q: %v", meta, key, value, got, err)
		}
		var want, have any
		if json.Unmarshal(value, &want) != nil || json.Unmarshal(out[string(decodeKey(key))], &have) != nil {
			t.Fatalf("MergeMeta(%q, %q, %q) = %q lost the value", meta, key, value, got)
		}
	})
}

// decodeKey returns key as encoding/json reads it back: invalid UTF-8
// becomes U+FFFD.
func decodeKey(key string) string {
	b, _ := json.Marshal(key)
	var s string
	_ = json.Unmarshal(b, &s)
	return s
}
