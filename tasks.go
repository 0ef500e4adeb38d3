package mcpvisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/tracing"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Tasks (MCP 2025-11-25, experimental): a server may run a tools/call as a
// task and answer with its id at once. The host polls tasks/get until the
// task ends, then fetches tasks/result, which is what the call would have
// returned. Every task in flight is a journal record, so a host that
// restarts resumes polling; a caller that asked for Detached is not held,
// and learns the outcome from an mcpvisor/task event and Host.Task.

// Poll bounds: a server's pollInterval is clamped to them.
const (
	MinTaskPoll = 500 * time.Millisecond
	MaxTaskPoll = 30 * time.Second
	// DefaultTaskDeadline bounds a task whose server gave no ttl.
	DefaultTaskDeadline = time.Hour
	// taskCancelWait bounds the tasks/cancel sent for an abandoned task.
	taskCancelWait = 5 * time.Second
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
func (h *Host) Task(id string) (TaskInfo, error) { return h.journal.Task(id) }

// Tasks lists the journal's tasks, oldest first; unfinished limits them to
// those still running.
func (h *Host) Tasks(unfinished bool) ([]TaskInfo, error) { return h.journal.Tasks(unfinished) }

// Task returns the task with id from the journal.
func (j *Journal) Task(id string) (TaskInfo, error) {
	rec, ok, err := j.store.TaskByID(id)
	if err != nil {
		return TaskInfo{}, err
	}
	if !ok {
		return TaskInfo{}, fmt.Errorf("%w: %q", ErrUnknownTask, id)
	}
	return taskInfo(rec), nil
}

// Tasks lists the journal's tasks, oldest first; unfinished limits them to
// those not ended yet.
func (j *Journal) Tasks(unfinished bool) ([]TaskInfo, error) {
	recs, err := j.store.Tasks(persistence.TaskFilter{Unfinished: unfinished})
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

func msDuration(ms *int64) time.Duration {
	if ms == nil || *ms <= 0 {
		return 0
	}
	return time.Duration(*ms) * time.Millisecond
}

func clampPoll(d time.Duration) time.Duration {
	return min(max(d, MinTaskPoll), MaxTaskPoll)
}

// runTask drives a task the server just created. Attached, it polls on the
// caller's goroutine and returns the call's raw result; detached, it hands
// the task to a background poller and returns a Result that says so.
func (h *Host) runTask(ctx context.Context, c *Call, task *protocol.Task) (*Result, error) {
	scope, tool, server, opts := c.Scope, c.Tool, c.Server, c.Options
	c.raw = nil // the CreateTaskResult is not the call's answer
	now := time.Now()
	rec := persistence.TaskRecord{
		Server: server, TaskID: task.TaskID, Tool: tool, Scope: scope, Created: now, Updated: now,
		TTL: msDuration(task.TTL), PollInterval: msDuration(task.PollInterval), Status: task.Status,
		StatusMessage: task.StatusMessage, Detached: opts.Detached,
	}
	rec.Deadline = now.Add(DefaultTaskDeadline)
	if rec.TTL > 0 {
		rec.Deadline = now.Add(rec.TTL)
	}
	// Durable before anything else: a host killed now resumes the task.
	// Not bounded by the caller's context: a caller giving up now must
	// still leave a record that says so, and a cancelled task.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskCancelWait)
	err := h.journal.writer.Write(wctx, persistence.PutTask(rec))
	cancel()
	if err != nil {
		h.cancelTask(&rec, "the host could not journal it")
		return nil, fmt.Errorf("%s: task %s: journal: %w", tool, rec.TaskID, err)
	}
	if c.asker != nil {
		c.asker.task.Store(&rec.TaskID)
	}
	info := taskInfo(rec)
	if opts.OnTask != nil {
		opts.OnTask(info)
	}
	if opts.Detached {
		h.pollInBackground(rec)
		return &Result{
			Type: ResultString,
			Text: fmt.Sprintf("Task %s started on server %q (status %s); its outcome arrives as an %s event.", rec.TaskID, server, rec.Status, EventMethodTask),
			Task: &info,
		}, nil
	}
	raw, err := h.driveTask(ctx, &rec, opts.OnProgress, c.progress)
	switch {
	case errors.Is(err, ErrClosed):
		// The host is closing: the record stays unfinished and the task
		// is resumed at the next start.
		return nil, err
	case ctx.Err() != nil && !rec.Done:
		h.cancelTask(&rec, "the caller gave up")
	}
	h.finishTask(&rec, raw, err, false)
	c.raw = raw
	return nil, err
}

// driveTask polls rec's task until it ends, the deadline, the host closing
// or ctx; it returns tasks/result's answer, and errors named with the tool
// and the task. rec is updated as it goes.
func (h *Host) driveTask(ctx context.Context, rec *persistence.TaskRecord, onProgress func(Progress), sub *actors.ProgressSub) (json.RawMessage, error) {
	ctx, span := tracing.Child(ctx, "task", trace.WithAttributes(tracing.TaskID.String(rec.TaskID)))
	raw, err := h.pollTask(ctx, rec, onProgress, sub)
	if span != nil {
		span.SetAttributes(tracing.TaskState.String(string(rec.Status)))
	}
	tracing.End(span, errorType(err))
	if err != nil {
		err = fmt.Errorf("%s: task %s: %w", rec.Tool, rec.TaskID, err)
	}
	return raw, err
}

// taskRequest sends one request of a task's polling (tasks/get,
// tasks/result), a child span of the task's when traced.
func (h *Host) taskRequest(ctx context.Context, server, method string, params json.RawMessage, opts *actors.CallOptions) (json.RawMessage, error) {
	ctx, span := tracing.Child(ctx, method)
	raw, err := h.serverRequest(ctx, server, method, params, opts)
	tracing.End(span, errorType(err))
	return raw, err
}

func (h *Host) pollTask(ctx context.Context, rec *persistence.TaskRecord, onProgress func(Progress), sub *actors.ProgressSub) (json.RawMessage, error) {
	var progress <-chan Progress
	if sub != nil {
		progress = sub.C()
	}
	params, _ := json.Marshal(protocol.TaskIDParams{TaskID: rec.TaskID})
	first := true
	for {
		left := time.Until(rec.Deadline)
		if left <= 0 {
			h.cancelTask(rec, "deadline")
			rec.Status, rec.Error = TaskExpired, fmt.Sprintf("no outcome by its deadline (%s)", rec.Deadline.Format(time.RFC3339))
			return nil, fmt.Errorf("%w: %s", ErrTimeout, rec.Error)
		}
		if !first || rec.Status == TaskWorking {
			if err := h.waitPoll(ctx, min(clampPoll(rec.PollInterval), left), progress, onProgress); err != nil {
				return nil, err
			}
		}
		first = false
		raw, err := h.taskRequest(ctx, rec.Server, protocol.MethodTasksGet, params, nil)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return nil, err
			}
			var perr *protocol.Error
			if errors.As(err, &perr) && perr.Code == protocol.CodeInvalidParams {
				rec.Status, rec.Error = TaskLost, "the server no longer knows the task: "+perr.Message
				return nil, fmt.Errorf("%w: %s", ErrTaskLost, perr.Message)
			}
			h.opts.Logger.Warn("tasks/get failed; polling again", "server", rec.Server, "task", rec.TaskID, "err", err)
			continue // restarting, or a transient failure: the deadline bounds it
		}
		var t protocol.Task
		if err := json.Unmarshal(raw, &t); err != nil || t.Status == "" {
			h.opts.Logger.Warn("malformed tasks/get result; polling again", "server", rec.Server, "task", rec.TaskID)
			continue
		}
		h.noteTask(rec, &t)
		switch t.Status {
		case protocol.TaskCancelled:
			return nil, fmt.Errorf("%w%s", ErrTaskCancelled, suffix(t.StatusMessage))
		case protocol.TaskCompleted, protocol.TaskFailed, protocol.TaskInputRequired:
			// tasks/result blocks until the task ends and answers exactly
			// what the call would have; on input_required the server sends
			// its elicitation meanwhile, answered by the host's handler.
			res, err := h.taskRequest(ctx, rec.Server, protocol.MethodTasksResult, params, &actors.CallOptions{
				Timeout: time.Until(rec.Deadline), Progress: sub, OnProgress: onProgress,
			})
			if err != nil && ctx.Err() == nil && (errors.Is(err, ErrUnavailable) || errors.Is(err, ErrConnectionLost)) {
				// The server went away while it answered (it crashed, or
				// its cluster member left): the task may live on in the
				// server it comes back as. Polling says.
				h.opts.Logger.Warn("tasks/result failed; polling again", "server", rec.Server, "task", rec.TaskID, "err", err)
				continue
			}
			if err != nil && t.Status == protocol.TaskFailed && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
				var perr *protocol.Error
				if !errors.As(err, &perr) {
					return nil, fmt.Errorf("%w%s", ErrTaskFailed, suffix(t.StatusMessage))
				}
			}
			if err == nil {
				rec.Status = TaskCompleted
				if t.Status == protocol.TaskFailed {
					rec.Status = TaskFailed
				}
			}
			return res, err
		}
	}
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// waitPoll waits d, handing on progress meanwhile.
func (h *Host) waitPoll(ctx context.Context, d time.Duration, progress <-chan Progress, onProgress func(Progress)) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return nil
		case p := <-progress:
			if onProgress != nil {
				onProgress(p)
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-h.closing:
			return ErrClosed
		}
	}
}

// noteTask records a status change (not durably: the outcome is).
func (h *Host) noteTask(rec *persistence.TaskRecord, t *protocol.Task) {
	if d := msDuration(t.PollInterval); d > 0 {
		rec.PollInterval = d
	}
	if t.Status == rec.Status && t.StatusMessage == rec.StatusMessage {
		return
	}
	rec.Status, rec.StatusMessage, rec.Updated = t.Status, t.StatusMessage, time.Now()
	// Queued in order with the final write (finishTask), never after it:
	// Ingest's queue is applied after the writes of a commit.
	h.journal.writer.WriteAsync([]persistence.Op{persistence.PutTask(*rec)}, nil)
}

// cancelTask asks the server to stop a task it runs (tasks/cancel, never
// notifications/cancelled), bounded in time.
func (h *Host) cancelTask(rec *persistence.TaskRecord, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), taskCancelWait)
	defer cancel()
	params, _ := json.Marshal(protocol.TaskIDParams{TaskID: rec.TaskID})
	if _, err := h.serverRequest(ctx, rec.Server, protocol.MethodTasksCancel, params, nil); err != nil {
		h.opts.Logger.Debug("tasks/cancel failed", "server", rec.Server, "task", rec.TaskID, "err", err)
	}
	rec.Status, rec.Error = TaskCancelled, "cancelled by the host: "+why
}

// finishTask records a task's end, durably; a detached task's outcome is
// also a journal event and keeps its result for Host.Task.
func (h *Host) finishTask(rec *persistence.TaskRecord, raw json.RawMessage, err error, detached bool) {
	rec.Done, rec.Updated = true, time.Now()
	if err != nil && rec.Error == "" {
		rec.Error = err.Error()
	}
	if err != nil && !isTerminalStatus(rec.Status) {
		rec.Status = TaskFailed
	}
	ops := []persistence.Op{}
	if detached {
		rec.Result = raw
		params, _ := json.Marshal(struct {
			TaskID        string `json:"taskId"`
			Tool          string `json:"tool"`
			Status        string `json:"status"`
			StatusMessage string `json:"statusMessage,omitempty"`
			Error         string `json:"error,omitempty"`
		}{rec.TaskID, rec.Tool, rec.Status, rec.StatusMessage, rec.Error})
		ops = append(ops, persistence.AppendEvent(persistence.EventRecord{
			Server: rec.Server, Method: EventMethodTask, Params: params, Received: rec.Updated,
		}))
	}
	ops = append(ops, persistence.PutTask(*rec))
	ctx, cancel := context.WithTimeout(context.Background(), taskCancelWait)
	defer cancel()
	if werr := h.journal.writer.Write(ctx, ops...); werr != nil {
		h.opts.Logger.Warn("task outcome not journaled", "server", rec.Server, "task", rec.TaskID, "err", werr)
	}
}

func isTerminalStatus(s string) bool {
	switch s {
	case TaskCompleted, TaskFailed, TaskCancelled, TaskLost, TaskExpired:
		return true
	}
	return false
}

// pollInBackground drives a task no caller waits for: detached, or resumed
// after a restart. Close stops it without cancelling the task, which the
// next start resumes.
func (h *Host) pollInBackground(rec persistence.TaskRecord) {
	h.tasksWG.Add(1)
	go func() {
		defer h.tasksWG.Done()
		raw, err := h.driveTask(h.bg, &rec, nil, nil)
		if errors.Is(err, ErrClosed) || h.bg.Err() != nil {
			return
		}
		h.finishTask(&rec, raw, err, true)
	}()
}

// resumeTasks restarts the pollers of the tasks a previous run left
// unfinished. Their callers are gone: each is finished as a detached task.
func (h *Host) resumeTasks() error {
	recs, err := h.journal.store.Tasks(persistence.TaskFilter{Unfinished: true})
	if err != nil {
		return fmt.Errorf("journal: tasks: %w", err)
	}
	for _, rec := range recs {
		rec.Detached = true
		if _, ok := h.rt.ServerStatus(rec.Server); !ok {
			rec.Status, rec.Error = TaskLost, fmt.Sprintf("server %q is no longer registered", rec.Server)
			h.finishTask(&rec, nil, nil, true)
			continue
		}
		h.opts.Logger.Info("resuming task", "server", rec.Server, "task", rec.TaskID, "tool", rec.Tool)
		h.pollInBackground(rec)
	}
	return nil
}
