package protocol

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestMergeMeta(t *testing.T) {
	tests := []struct {
		name  string
		meta  string
		key   string
		value string
		want  string // "" means an error
	}{
		{"nil meta", ``, "progressToken", `"p1"`, `{"progressToken":"p1"}`},
		{"blank meta", " \n", "k", `1`, `{"k":1}`},
		{"null meta", `null`, "k", `1`, `{"k":1}`},
		{"empty object", `{}`, "k", `{"a":[1]}`, `{"k":{"a":[1]}}`},
		{"keeps others in order", `{"a":1,"b":{"c":2}}`, "k", `true`, `{"a":1,"b":{"c":2},"k":true}`},
		{"replaces", `{"a":1,"k":"old","b":2}`, "k", `"new"`, `{"a":1,"b":2,"k":"new"}`},
		{"replaces duplicates", `{"k":1,"k":2}`, "k", `3`, `{"k":3}`},
		{"replaces escaped key", `{"\u006b":1}`, "k", `3`, `{"k":3}`},
		{
			"related task key",
			`{"progressToken":7}`, MetaRelatedTask, `{"taskId":"t-1"}`,
			`{"progressToken":7,"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}`,
		},
		{"escapes key", `{}`, "a\"b\n", `1`, `{"a\"b\n":1}`},
		{"newlines become spaces", "{\n  \"a\": 1\n}", "k", "[\n1\n]", `{"a": 1,"k":[ 1 ]}`},
		{"meta array", `[1]`, "k", `1`, ``},
		{"meta string", `"x"`, "k", `1`, ``},
		{"meta malformed", `{"a":`, "k", `1`, ``},
		{"meta trailing", `{} {}`, "k", `1`, ``},
		{"value malformed", `{}`, "k", `{`, ``},
		{"value empty", `{}`, "k", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in json.RawMessage
			if tt.meta != "" {
				in = raw(tt.meta)
			}
			before := string(in)
			got, err := MergeMeta(in, tt.key, raw(tt.value))
			if tt.want == "" {
				if !errors.Is(err, ErrInvalidMeta) {
					t.Fatalf("MergeMeta(%s) = %s, %v; want ErrInvalidMeta", tt.meta, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("MergeMeta(%s, %q, %s) = %s, want %s", tt.meta, tt.key, tt.value, got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("result %s is not valid json", got)
			}
			if string(in) != before {
				t.Errorf("meta modified: %s", in)
			}
		})
	}
}

func TestRelatedTaskID(t *testing.T) {
	tests := []struct {
		meta string
		want string
	}{
		{``, ""},
		{`null`, ""},
		{`{}`, ""},
		{`{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}`, "t-1"},
		{`{"progressToken":1, "io.modelcontextprotocol/related-task" : { "taskId" : "a\u00e9\"b" } }`, "aé\"b"},
		{`{"io.modelcontextprotocol/related-task":{"taskId":7}}`, ""},
		{`{"io.modelcontextprotocol/related-task":"t-1"}`, ""},
		{`{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}`, ""},
		{`{"taskId":"t-1"}`, ""},
		{`[{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}]`, ""},
	}
	for _, tt := range tests {
		if got := RelatedTaskID(raw(tt.meta)); got != tt.want {
			t.Errorf("RelatedTaskID(%s) = %q, want %q", tt.meta, got, tt.want)
		}
	}
}

func TestModelImmediateResponse(t *testing.T) {
	meta := raw(`{"io.modelcontextprotocol/model-immediate-response":"started the build"}`)
	if got := ModelImmediateResponse(meta); got != "started the build" {
		t.Errorf("ModelImmediateResponse = %q", got)
	}
	if got := ModelImmediateResponse(raw(`{"io.modelcontextprotocol/model-immediate-response":{}}`)); got != "" {
		t.Errorf("ModelImmediateResponse of an object = %q, want empty", got)
	}
}

func TestProgressTokenMeta(t *testing.T) {
	for _, token := range []string{"", "p-1", "a\"b\\c\n\u2028é\x01"} {
		got := ProgressTokenMeta(token)
		var m map[string]string
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatalf("ProgressTokenMeta(%q) = %s: %v", token, got, err)
		}
		if len(m) != 1 || m[MetaProgressToken] != token {
			t.Errorf("ProgressTokenMeta(%q) = %s", token, got)
		}
	}
	if got := string(ProgressTokenMeta("p-1")); got != `{"progressToken":"p-1"}` {
		t.Errorf("ProgressTokenMeta = %s", got)
	}
}
