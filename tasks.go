package mcpvisor

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Tasks (MCP 2025-11-25, experimental): a server may run a tools/call as a
// task and answer with its id at once. The host's task poller
// (actors.TaskPoller) polls it to its end; every task in flight is a
// journal record, so a host that restarts resumes polling; a caller that
// asked for Detached is not held, and learns the outcome from an
// mcpvisor/task event and Host.Task.

// Poll bounds: a server's pollInterval is clamped to them.
const (
	MinTaskPoll = actors.MinTaskPoll
	MaxTaskPoll = actors.MaxTaskPoll
	// DefaultTaskDeadline bounds a task whose server gave no ttl.
	DefaultTaskDeadline = actors.DefaultTaskDeadline
)

// Task statuses, the spec's and the host's own.
const (
	TaskWorking       = persistence.TaskWorking
	TaskInputRequired = persistence.TaskInputRequired
	TaskCompleted     = persistence.TaskCompleted
	TaskFailed        = persistence.TaskFailed
	TaskCancelled     = persistence.TaskCancelled
	TaskLost          = persistence.TaskLost    // the server no longer knows it
	TaskExpired       = persistence.TaskExpired // its deadline passed
)

// TaskInfo is a task as the host keeps it.
type TaskInfo struct {
	Server        string    `json:"server"`
	ID            string    `json:"id"`
	Tool          string    `json:"tool"` // namespaced
	Status        string    `json:"status"`
	StatusMessage string    `json:"statusMessage,omitempty"`
	Created       time.Time `json:"created"`
	Updated       time.Time `json:"updated"`
	Deadline      time.Time `json:"deadline,omitzero"`
	Detached      bool      `json:"detached"`
	Done          bool      `json:"done"`             // ended, outcome recorded
	Result        *Result   `json:"result,omitempty"` // completed (and failed with a tool result), for a detached task
	Error         string    `json:"error,omitempty"`  // why it failed, when it did without a result
}

func taskInfo(rec persistence.TaskRecord) TaskInfo {
	ti := TaskInfo{
		Server: rec.Server, ID: rec.TaskID, Tool: rec.Tool, Status: rec.Status, StatusMessage: rec.StatusMessage,
		Created: rec.Created, Updated: rec.Updated, Deadline: rec.Deadline, Detached: rec.Detached, Done: rec.Done,
		Error: rec.Error,
	}
	if len(rec.Result) > 0 {
		if res, err := decodeResult(rec.Result); err == nil {
			ti.Result = res
		}
	}
	return ti
}

// Task returns the task with id (task ids are unique per server; the first
// match is returned).
func (h *Host) Task(id string) (TaskInfo, error) { return JournalTask(h.journal, id) }

// Tasks lists the journal's tasks, oldest first; unfinished limits them to
// those still running.
func (h *Host) Tasks(unfinished bool) ([]TaskInfo, error) { return JournalTasks(h.journal, unfinished) }

// JournalTask returns the task with id from j (a host's journal, or one
// opened alone).
func JournalTask(j *Journal, id string) (TaskInfo, error) {
	rec, ok, err := j.Store().TaskByID(id)
	if err != nil {
		return TaskInfo{}, err
	}
	if !ok {
		return TaskInfo{}, fmt.Errorf("%w: %q", ErrUnknownTask, id)
	}
	return taskInfo(rec), nil
}

// JournalTasks lists j's tasks, oldest first; unfinished limits them to
// those not ended yet.
func JournalTasks(j *Journal, unfinished bool) ([]TaskInfo, error) {
	recs, err := j.Store().Tasks(persistence.TaskFilter{Unfinished: unfinished})
	if err != nil {
		return nil, err
	}
	out := make([]TaskInfo, 0, len(recs))
	for _, r := range recs {
		out = append(out, taskInfo(r))
	}
	return out, nil
}

// taskField is the task member of a task-augmented tools/call.
func taskField(ttl time.Duration) json.RawMessage {
	if ttl <= 0 {
		return emptyTask
	}
	return json.RawMessage(fmt.Sprintf(`{"ttl":%d}`, ttl.Milliseconds()))
}

// emptyTask is the task field without a ttl, shared: the runtime only
// reads it.
var emptyTask = json.RawMessage(`{}`)

// runTask drives a task the server just created. Attached, it polls on the
// caller's goroutine and returns the call's raw result; detached, it hands
// the task to a background poller and returns a Result that says so.
func (h *Host) runTask(ctx context.Context, c *Call, task *protocol.Task) (*Result, error) {
	opts := c.Options
	c.raw = nil // the CreateTaskResult is not the call's answer
	rec := actors.NewTaskRecord(c.Server, c.Tool, c.Scope, task, opts.Detached)
	if err := h.tasks.Begin(ctx, &rec); err != nil {
		return nil, err
	}
	if c.asker != nil {
		c.asker.Task.Store(&rec.TaskID)
	}
	info := taskInfo(rec)
	if opts.OnTask != nil {
		opts.OnTask(info)
	}
	if opts.Detached {
		h.tasks.Detach(rec)
		return &Result{
			Type: ResultString,
			Text: fmt.Sprintf("Task %s started on server %q (status %s); its outcome arrives as an %s event.", rec.TaskID, rec.Server, rec.Status, EventMethodTask),
			Task: &info,
		}, nil
	}
	raw, err := h.tasks.Wait(ctx, &rec, opts.OnProgress, c.progress)
	c.raw = raw
	return nil, err
}

// newTaskPoller makes the host's task poller: its requests go to the
// server wherever it runs.
func (h *Host) newTaskPoller() *actors.TaskPoller {
	return actors.NewTaskPoller(actors.TaskPollerOptions{Request: h.serverRequest, Journal: h.journal, Logger: h.opts.Logger})
}
