package protocol

import "encoding/json"

// Tasks are experimental in 2025-11-25. A requestor adds TaskMetadata to a
// request's params as "task"; the receiver answers at once with a
// CreateTaskResult and the requestor polls tasks/get, then fetches the real
// result with tasks/result.

// TaskMetadata is the "task" member of a task-augmented request's params.
type TaskMetadata struct {
	// TTL is the requested lifetime in milliseconds from creation; nil leaves
	// it to the receiver.
	TTL *int64 `json:"ttl,omitempty"`
}

// Task statuses. A task starts working; completed, failed and cancelled are
// terminal and never change.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// TaskTerminal reports whether status is completed, failed or cancelled.
// Unknown statuses are not terminal.
func TaskTerminal(status string) bool {
	switch status {
	case TaskCompleted, TaskFailed, TaskCancelled:
		return true
	}
	return false
}

// Task is the state of a task: the result of tasks/get and tasks/cancel, the
// params of notifications/tasks/status, and the "task" of a
// CreateTaskResult.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	// CreatedAt and LastUpdatedAt are ISO 8601 timestamps.
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTL is the lifetime in milliseconds from creation the receiver
	// actually applies; nil, written as null, means unlimited.
	TTL *int64 `json:"ttl"`
	// PollInterval is the suggested tasks/get interval in milliseconds.
	PollInterval *int64          `json:"pollInterval,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
}

// Terminal reports whether the task's status is terminal.
func (t *Task) Terminal() bool { return TaskTerminal(t.Status) }

// CreateTaskResult is a receiver's immediate answer to a task-augmented
// request, in place of the request's real result. Its Meta may hold
// MetaModelImmediateResponse.
type CreateTaskResult struct {
	Task Task            `json:"task"`
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// TaskIDParams are the params of tasks/get, tasks/result and tasks/cancel.
type TaskIDParams struct {
	TaskID string `json:"taskId"`
}

// ListTasksResult is one page of tasks/list; an empty NextCursor ends it.
type ListTasksResult struct {
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// MarshalJSON writes a nil Tasks as [], since tasks is required.
func (r ListTasksResult) MarshalJSON() ([]byte, error) {
	type wire ListTasksResult
	if r.Tasks == nil {
		r.Tasks = []Task{}
	}
	return json.Marshal(wire(r))
}

// ParseCreateTaskResult reports whether raw, the result of a request, is a
// task rather than the request's real result, and returns the task. It
// accepts a CreateTaskResult ({"task":{…}}) and a bare Task (taskId and
// status at the top level, as tasks/get returns). The task must have a
// non-empty taskId and status. A result with a "content" member, such as any
// CallToolResult, is never a task. The check walks only the top level before
// decoding, so ordinary results cost one scan and no allocation.
func ParseCreateTaskResult(raw json.RawMessage) (*Task, bool) {
	if firstKeyIs(raw, "content") {
		return nil, false // the usual CallToolResult, told without a walk
	}
	var (
		task             []byte
		hasID, hasStatus bool
		hasContent       bool
	)
	if !eachMember(raw, func(m member, _ []byte) {
		switch {
		case len(m.key) == len("content") && asciiEqualFold(m.key, "content"):
			hasContent = true
		case string(m.key) == "task":
			task = m.value
		case string(m.key) == "taskId":
			hasID = true
		case string(m.key) == "status":
			hasStatus = true
		}
	}) || hasContent {
		return nil, false
	}
	switch {
	case len(task) > 0 && task[0] == '{':
	case hasID && hasStatus:
		task = raw
	default:
		return nil, false
	}
	var t Task
	if json.Unmarshal(task, &t) != nil || t.TaskID == "" || t.Status == "" {
		return nil, false
	}
	return &t, true
}

// firstKeyIs reports whether the object raw's first member is key, spelt
// exactly and unescaped, without reading further.
func firstKeyIs(raw []byte, key string) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	rest := raw[skipSpace(raw, i+1):]
	return len(rest) > len(key)+1 && rest[0] == '"' && string(rest[1:1+len(key)]) == key && rest[1+len(key)] == '"'
}
