package protocol

import (
	"encoding/json"
	"testing"
)

func TestParseTaskHandle(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		ok        bool
		ttl, poll int64
	}{
		{"handle", `{"resultType":"task","taskId":"t1","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":60000,"pollIntervalMs":500}`, true, 60000, 500},
		{"unlimited", `{"taskId":"t1","status":"working","ttlMs":null,"resultType":"task"}`, true, 0, 0},
		{"complete result", `{"resultType":"complete","content":[{"type":"text","text":"task"}]}`, false, 0, 0},
		{"legacy CreateTaskResult", `{"task":{"taskId":"t1","status":"working","ttl":1000}}`, false, 0, 0},
		{"no id", `{"resultType":"task","status":"working"}`, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task, ok := ParseTaskHandle(json.RawMessage(tc.raw))
			if ok != tc.ok {
				t.Fatalf("ParseTaskHandle ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			legacy := task.Task()
			if legacy.TaskID != "t1" || legacy.Status != "working" {
				t.Errorf("Task() = %+v", legacy)
			}
			if got := deref(legacy.TTL); got != tc.ttl {
				t.Errorf("TTL = %d, want %d", got, tc.ttl)
			}
			if got := deref(legacy.PollInterval); got != tc.poll {
				t.Errorf("PollInterval = %d, want %d", got, tc.poll)
			}
		})
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func TestWithExtension(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{`{"elicitation":{}}`, `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{`{"extensions":{"x/y":{"a":1}}}`, `{"extensions":{"io.modelcontextprotocol/tasks":{},"x/y":{"a":1}}}`},
		{`{"extensions":{"io.modelcontextprotocol/tasks":{"v":2}}}`, `{"extensions":{"io.modelcontextprotocol/tasks":{"v":2}}}`},
	} {
		got, err := WithExtension(json.RawMessage(tc.in), TasksExtension)
		if err != nil {
			t.Fatalf("WithExtension(%s): %v", tc.in, err)
		}
		if string(got) != tc.want {
			t.Errorf("WithExtension(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if !DeclaresExtension(got, TasksExtension) {
			t.Errorf("DeclaresExtension(%s) = false", got)
		}
	}
	if _, err := WithExtension(json.RawMessage(`[1]`), TasksExtension); err == nil {
		t.Error("WithExtension of an array: no error")
	}
}
