package protocol

import (
	"bytes"
	"encoding/json"
)

// The tasks extension of 2026-07-28 (io.modelcontextprotocol/tasks,
// SEP-2663). A client declares it in the clientCapabilities of a request's
// _meta; a server may then answer a tools/call with a task handle
// (resultType "task") in place of its result, whenever it chooses. The
// client polls tasks/get, whose answer carries the final result or error
// once the task ends and, while it is input_required, the requests the
// client must fulfil; it answers them with tasks/update, and may
// tasks/cancel. There is no tasks/result, no tasks/list, no "task" member
// on the request, and no requestState on the task surface.

// TasksExtension is the extension's id, the key of capabilities'
// extensions.
const TasksExtension = "io.modelcontextprotocol/tasks"

// ResultTask is the resultType of a CreateTaskResult under the extension.
const ResultTask = "task"

// DetailedTask is a task as the extension's CreateTaskResult and tasks/get
// give it: its state, and on tasks/get the outcome (Result when completed,
// Error when failed) or the outstanding InputRequests (input_required).
type DetailedTask struct {
	ResultType    string `json:"resultType,omitempty"`
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt,omitempty"`
	LastUpdatedAt string `json:"lastUpdatedAt,omitempty"`
	// TTLMs is the lifetime in milliseconds from creation; nil (null) is
	// unlimited. PollIntervalMs is the suggested tasks/get interval.
	TTLMs          *int64                  `json:"ttlMs"`
	PollIntervalMs *int64                  `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage         `json:"result,omitempty"`
	Error          *Error                  `json:"error,omitempty"`
	InputRequests  map[string]InputRequest `json:"inputRequests,omitempty"`
}

// Task is t's state in the 2025-11-25 shape the host keeps tasks in.
func (t *DetailedTask) Task() *Task {
	return &Task{TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage, CreatedAt: t.CreatedAt,
		LastUpdatedAt: t.LastUpdatedAt, TTL: t.TTLMs, PollInterval: t.PollIntervalMs}
}

// UpdateTaskParams are the params of tasks/update: the answers to some
// of a task's outstanding input requests, by their keys.
type UpdateTaskParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

var taskValue = []byte(`"task"`)

// ParseTaskHandle reports whether raw, the result of a request, is the
// extension's CreateTaskResult (resultType "task"), and returns the task.
// It costs a byte search for results that are not.
func ParseTaskHandle(raw json.RawMessage) (*DetailedTask, bool) {
	if firstKeyIs(raw, "content") || !bytes.Contains(raw, taskValue) || stringAt(raw, "resultType") != ResultTask {
		return nil, false
	}
	var t DetailedTask
	if json.Unmarshal(raw, &t) != nil || t.TaskID == "" || t.Status == "" {
		return nil, false
	}
	return &t, true
}

// DeclaresExtension reports whether the capabilities object caps declares
// the extension id.
func DeclaresExtension(caps json.RawMessage, id string) bool {
	return declared(caps, "extensions", id)
}

// WithExtension returns the capabilities object caps declaring the
// extension id too (as {}); caps as it is when it already does.
func WithExtension(caps json.RawMessage, id string) (json.RawMessage, error) {
	if DeclaresExtension(caps, id) {
		return caps, nil
	}
	members := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(caps)) > 0 && !isNull(trimSpace(caps)) {
		if err := json.Unmarshal(caps, &members); err != nil {
			return nil, err
		}
	}
	ext := map[string]json.RawMessage{}
	if raw := members["extensions"]; len(raw) > 0 && !isNull(trimSpace(raw)) {
		if err := json.Unmarshal(raw, &ext); err != nil {
			return nil, err
		}
	}
	ext[id] = json.RawMessage(`{}`)
	b, err := json.Marshal(ext)
	if err != nil {
		return nil, err
	}
	members["extensions"] = b
	return json.Marshal(members)
}
