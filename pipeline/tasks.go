package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
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

// TaskInfoOf is the task a journal record keeps.
func TaskInfoOf(rec persistence.TaskRecord) TaskInfo {
	ti := TaskInfo{
		Server: rec.Server, ID: rec.TaskID, Tool: rec.Tool, Status: rec.Status, StatusMessage: rec.StatusMessage,
		Created: rec.Created, Updated: rec.Updated, Deadline: rec.Deadline, Detached: rec.Detached, Done: rec.Done,
		Error: rec.Error,
	}
	if len(rec.Result) > 0 {
		if res, err := DecodeResult(rec.Result); err == nil {
			ti.Result = res
		}
	}
	return ti
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

// runTask drives a task the server just created (extension: one of the
// 2026-07-28 tasks extension). Attached, it polls on the caller's
// goroutine, the call's own handlers answering the task's input requests,
// and returns the call's raw result; detached, it hands the task to a
// background poller and returns a Result that says so.
func (p *Pipeline) runTask(ctx context.Context, c *Call, task *protocol.Task, extension bool) (*Result, error) {
	opts := c.Options
	c.raw = nil // the CreateTaskResult is not the call's answer
	rec := actors.NewTaskRecord(c.Server, c.Tool, c.Scope, task, opts.Detached)
	rec.Legacy = c.ro.Legacy
	rec.Extension = extension
	if err := p.cfg.Tasks.Begin(ctx, &rec); err != nil {
		return nil, err
	}
	if p.cfg.Flows != nil {
		p.cfg.Flows.TaskStarted(ctx, rec.TaskID)
	}
	info := TaskInfoOf(rec)
	if opts.OnTask != nil {
		opts.OnTask(info)
	}
	if opts.Detached {
		p.cfg.Tasks.Detach(rec)
		return &Result{
			Type: ResultString,
			Text: fmt.Sprintf("Task %s started on server %q (status %s); its outcome arrives as an %s event.", rec.TaskID, rec.Server, rec.Status, actors.EventMethodTask),
			Task: &info,
		}, nil
	}
	raw, err := p.cfg.Tasks.Wait(ctx, &rec, opts.OnProgress, c.progress)
	c.raw = raw
	return nil, err
}

// ErrUnknownTask: no task with that id in the journal.
var ErrUnknownTask = errors.New("unknown task")

// JournalTask returns the task with id from j; ErrUnknownTask when it has
// none.
func JournalTask(j *actors.Journal, id string) (TaskInfo, error) {
	rec, ok, err := j.Store().TaskByID(id)
	if err != nil {
		return TaskInfo{}, err
	}
	if !ok {
		return TaskInfo{}, fmt.Errorf("%w: %q", ErrUnknownTask, id)
	}
	return TaskInfoOf(rec), nil
}

// JournalTasks lists j's tasks, oldest first; unfinished limits them to
// those not ended yet.
func JournalTasks(j *actors.Journal, unfinished bool) ([]TaskInfo, error) {
	recs, err := j.Store().Tasks(persistence.TaskFilter{Unfinished: unfinished})
	if err != nil {
		return nil, err
	}
	out := make([]TaskInfo, 0, len(recs))
	for _, r := range recs {
		out = append(out, TaskInfoOf(r))
	}
	return out, nil
}
