package protocol

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCreateTaskResult(t *testing.T) {
	ttl, poll := int64(60000), int64(5000)
	tests := []struct {
		name string
		raw  string
		want *Task // nil: not a task
	}{
		{
			"create task result",
			`{"task":{"taskId":"t-1","status":"working","statusMessage":"started","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":60000,"pollInterval":5000},"_meta":{"io.modelcontextprotocol/model-immediate-response":"working on it"}}`,
			&Task{TaskID: "t-1", Status: TaskWorking, StatusMessage: "started", CreatedAt: "2025-11-25T10:30:00Z", LastUpdatedAt: "2025-11-25T10:30:00Z", TTL: &ttl, PollInterval: &poll},
		},
		{
			"bare task, ttl null",
			` {"taskId":"t-2","status":"completed","createdAt":"a","lastUpdatedAt":"b","ttl":null,"_meta":{"k":1}} `,
			&Task{TaskID: "t-2", Status: TaskCompleted, CreatedAt: "a", LastUpdatedAt: "b", Meta: raw(`{"k":1}`)},
		},
		{"task with unknown status", `{"task":{"taskId":"t","status":"paused"}}`, &Task{TaskID: "t", Status: "paused"}},
		{"escaped key", `{"t\u0061sk":{"taskId":"t","status":"working"}}`, &Task{TaskID: "t", Status: TaskWorking}},
		{"call tool result", `{"content":[{"type":"text","text":"hi"}],"isError":false}`, nil},
		{"call tool result with a task member", `{"content":[],"task":{"taskId":"t","status":"working"}}`, nil},
		{"content in any case", `{"Content":[],"taskId":"t","status":"working"}`, nil},
		{"structured content only", `{"structuredContent":{"taskId":"t","status":"working"}}`, nil},
		{"empty object", `{}`, nil},
		{"empty taskId", `{"task":{"taskId":"","status":"working"}}`, nil},
		{"no status", `{"task":{"taskId":"t"}}`, nil},
		{"empty status", `{"taskId":"t","status":""}`, nil},
		{"taskId not a string", `{"task":{"taskId":7,"status":"working"}}`, nil},
		{"task not an object", `{"task":"t","taskId":"x"}`, nil},
		{"task null", `{"task":null}`, nil},
		{"top-level id without status", `{"taskId":"t"}`, nil},
		{"malformed", `{"task":{"taskId":"t","status":"working"}`, nil},
		{"trailing data", `{"task":{"taskId":"t","status":"working"}} x`, nil},
		{"array", `[{"taskId":"t","status":"working"}]`, nil},
		{"empty", ``, nil},
		{"null", `null`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseCreateTaskResult(raw(tt.raw))
			if ok != (tt.want != nil) {
				t.Fatalf("ParseCreateTaskResult(%s) ok = %v, want %v", tt.raw, ok, tt.want != nil)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("task mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseCreateTaskResultAllocs(t *testing.T) {
	res := raw(`{"content":[{"type":"text","text":"a long enough result"}],"structuredContent":{"n":1}}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := ParseCreateTaskResult(res); ok {
			t.Fatal("call result taken for a task")
		}
	})
	if allocs != 0 {
		t.Errorf("ParseCreateTaskResult of a CallToolResult allocates %v times, want 0", allocs)
	}
}

func TestTaskMarshal(t *testing.T) {
	ttl := int64(1000)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"nil ttl is null", Task{TaskID: "t", Status: TaskWorking, CreatedAt: "c", LastUpdatedAt: "u"}, `{"taskId":"t","status":"working","createdAt":"c","lastUpdatedAt":"u","ttl":null}`},
		{
			"create task result",
			CreateTaskResult{Task: Task{TaskID: "t", Status: TaskInputRequired, CreatedAt: "c", LastUpdatedAt: "u", TTL: &ttl}, Meta: raw(`{"k":1}`)},
			`{"task":{"taskId":"t","status":"input_required","createdAt":"c","lastUpdatedAt":"u","ttl":1000},"_meta":{"k":1}}`,
		},
		{"task metadata", TaskMetadata{TTL: &ttl}, `{"ttl":1000}`},
		{"empty task metadata", TaskMetadata{}, `{}`},
		{"task id params", TaskIDParams{TaskID: "t"}, `{"taskId":"t"}`},
		{"empty tasks list", ListTasksResult{}, `{"tasks":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("json.Marshal = %s\n         want %s", got, tt.want)
			}
		})
	}
}

func TestTaskTerminal(t *testing.T) {
	for status, want := range map[string]bool{
		TaskWorking: false, TaskInputRequired: false, "": false, "unknown": false,
		TaskCompleted: true, TaskFailed: true, TaskCancelled: true,
	} {
		task := Task{Status: status}
		if got := task.Terminal(); got != want || TaskTerminal(status) != want {
			t.Errorf("Terminal(%q) = %v, want %v", status, got, want)
		}
	}
}

func TestServerCapabilitiesTasks(t *testing.T) {
	tests := []struct {
		name               string
		tasks              string
		call, cancel, list bool
	}{
		{"absent", ``, false, false, false},
		{"null", `null`, false, false, false},
		{"empty", `{}`, false, false, false},
		{"everything", `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`, true, true, true},
		{"spaced", ` { "requests" : { "tools" : { "call" : { } } } } `, true, false, false},
		{"tools without call", `{"requests":{"tools":{}}}`, false, false, false},
		{"call null", `{"requests":{"tools":{"call":null}},"cancel":null}`, false, false, false},
		{"call false", `{"requests":{"tools":{"call":false}},"list":false}`, false, false, false},
		{"client-side requests only", `{"requests":{"sampling":{"createMessage":{}}}}`, false, false, false},
		{"requests not an object", `{"requests":"tools.call","list":{}}`, false, false, true},
		{"last duplicate wins", `{"list":{},"list":null}`, false, false, false},
		{"malformed", `{"requests":{"tools":{"call":{}}}`, false, false, false},
		{"not an object", `["requests"]`, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ServerCapabilities{Tasks: raw(tt.tasks)}
			if got := c.TaskToolCalls(); got != tt.call {
				t.Errorf("TaskToolCalls() = %v, want %v", got, tt.call)
			}
			if got := c.TasksCancel(); got != tt.cancel {
				t.Errorf("TasksCancel() = %v, want %v", got, tt.cancel)
			}
			if got := c.TasksList(); got != tt.list {
				t.Errorf("TasksList() = %v, want %v", got, tt.list)
			}
		})
	}
}

func TestServerCapabilitiesDeclared(t *testing.T) {
	tests := []struct {
		raw  string
		want bool
	}{
		{``, false}, {`null`, false}, {` null `, false}, {`false`, false},
		{`{}`, true}, {`{"x":1}`, true},
	}
	for _, tt := range tests {
		c := ServerCapabilities{Logging: raw(tt.raw), Completions: raw(tt.raw)}
		if got := c.LoggingDeclared(); got != tt.want {
			t.Errorf("LoggingDeclared(%q) = %v, want %v", tt.raw, got, tt.want)
		}
		if got := c.CompletionsDeclared(); got != tt.want {
			t.Errorf("CompletionsDeclared(%q) = %v, want %v", tt.raw, got, tt.want)
		}
	}
	var decoded InitializeResult
	if err := json.Unmarshal([]byte(`{"capabilities":{"logging":{},"tasks":{"requests":{"tools":{"call":{}}}}}}`), &decoded); err != nil {
		t.Fatal(err)
	}
	if !decoded.Capabilities.LoggingDeclared() || !decoded.Capabilities.TaskToolCalls() || decoded.Capabilities.CompletionsDeclared() {
		t.Errorf("decoded capabilities %+v", decoded.Capabilities)
	}
}
