package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor/internal/tracing"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Tasks: a server may run a tools/call as a task and answer with its id at
// once. Of a 2025-11-25 task (experimental), the task poller polls
// tasks/get until the task ends, then fetches tasks/result, which is what
// the call would have returned. Of a task of the 2026-07-28 tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663; TaskRecord.Extension), tasks/get
// is all there is: it carries the outcome once the task ends, and while the
// task is input_required the requests the server needs fulfilled, which the
// poller answers (TaskPollerOptions.Input) with tasks/update. Every task in
// flight is a journal record, so a host that restarts resumes polling; a
// task no caller waits for (detached, or resumed) is polled in the
// background and its outcome journaled as an EventMethodTask event.

// Poll bounds: a server's pollInterval is clamped to them.
const (
	MinTaskPoll = 500 * time.Millisecond
	MaxTaskPoll = 30 * time.Second
	// DefaultTaskDeadline bounds a task whose server gave no ttl.
	DefaultTaskDeadline = time.Hour
	// taskCancelWait bounds the tasks/cancel sent for an abandoned task,
	// and the journal writes a task's start and end wait for.
	taskCancelWait = 5 * time.Second
)

// EventMethodTask is the journal event a task no caller waited for ends
// with: its id, tool, status and error.
const EventMethodTask = "mcpvisor/task"

// Task errors.
var (
	ErrTaskFailed    = errors.New("task failed")    // the server's task failed without a result
	ErrTaskCancelled = errors.New("task cancelled") // the task was cancelled (by the server or the host)
	ErrTaskLost      = errors.New("task lost")      // the server no longer knows the task
)

// TaskRequest sends one request of a task's polling (tasks/get,
// tasks/result, tasks/cancel) to server, wherever it runs.
type TaskRequest func(ctx context.Context, server, method string, params json.RawMessage, opts *CallOptions) (json.RawMessage, error)

// TaskPollerOptions configure a TaskPoller.
type TaskPollerOptions struct {
	Request TaskRequest
	Journal *Journal
	Logger  *slog.Logger
	// Input fulfils one input request of an extension task that is
	// input_required, for server: ctx is the waiting caller's (its call's
	// own handlers answer) or, for a task no caller waits for, the
	// poller's (the host's answer). It may block while a person answers.
	// Nil: such a task is cancelled, as the host cannot answer it.
	Input func(ctx context.Context, server string, req protocol.InputRequest) (json.RawMessage, error)
}

// TaskPoller drives servers' tasks to their end and keeps their records.
// Its methods are safe for concurrent use. Close stops the pollers without
// cancelling their tasks (the next start resumes them) and joins the
// background ones.
type TaskPoller struct {
	o       TaskPollerOptions
	bg      context.Context // the background pollers'
	stopBg  context.CancelFunc
	closing chan struct{}
	closed  sync.Once
	wg      sync.WaitGroup
}

// NewTaskPoller returns a poller; Close it.
func NewTaskPoller(o TaskPollerOptions) *TaskPoller {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	p := &TaskPoller{o: o, closing: make(chan struct{})}
	p.bg, p.stopBg = context.WithCancel(context.Background())
	return p
}

// Close makes every poll return ErrClosed (attached callers' included),
// and returns once the background pollers have. Idempotent.
func (p *TaskPoller) Close() {
	p.closed.Do(func() {
		close(p.closing)
		p.stopBg()
	})
	p.wg.Wait()
}

// NewTaskRecord is the record of a task server just created for a call of
// tool by scope: its deadline is its ttl, or DefaultTaskDeadline.
func NewTaskRecord(server, tool string, scope persistence.Scope, task *protocol.Task, detached bool) persistence.TaskRecord {
	now := time.Now()
	rec := persistence.TaskRecord{
		Server: server, TaskID: task.TaskID, Tool: tool, Scope: scope, Created: now, Updated: now,
		TTL: msDuration(task.TTL), PollInterval: msDuration(task.PollInterval), Status: task.Status,
		StatusMessage: task.StatusMessage, Detached: detached,
	}
	rec.Deadline = now.Add(DefaultTaskDeadline)
	if rec.TTL > 0 {
		rec.Deadline = now.Add(rec.TTL)
	}
	return rec
}

// Begin journals a task just created, durably, before anything else, so a
// host killed now resumes it. It is not bounded by ctx's end: a caller
// giving up now must still leave a record that says so. A task that cannot
// be journaled is cancelled.
func (p *TaskPoller) Begin(ctx context.Context, rec *persistence.TaskRecord) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskCancelWait)
	err := p.o.Journal.Write(wctx, persistence.PutTask(*rec))
	cancel()
	if err != nil {
		p.Cancel(rec, "the host could not journal it")
		return fmt.Errorf("%s: task %s: journal: %w", rec.Tool, rec.TaskID, err)
	}
	return nil
}

// Wait polls rec's task for its caller until it ends, its deadline, the
// poller closing (ErrClosed: the record stays unfinished, for the next
// start) or ctx (the task is cancelled), records its end and returns
// tasks/result's answer. onProgress gets sub's progress meanwhile.
func (p *TaskPoller) Wait(ctx context.Context, rec *persistence.TaskRecord, onProgress func(Progress), sub *ProgressSub) (json.RawMessage, error) {
	raw, err := p.drive(ctx, rec, onProgress, sub)
	switch {
	case errors.Is(err, ErrClosed):
		return nil, err
	case ctx.Err() != nil && !rec.Done:
		p.Cancel(rec, "the caller gave up")
	}
	p.finish(rec, raw, err, false)
	return raw, err
}

// Detach polls rec's task in the background: no caller waits for it
// (detached, or resumed after a restart). Its outcome is journaled as an
// EventMethodTask event, and kept with the record.
func (p *TaskPoller) Detach(rec persistence.TaskRecord) {
	p.wg.Go(func() {
		raw, err := p.drive(p.bg, &rec, nil, nil)
		if errors.Is(err, ErrClosed) || p.bg.Err() != nil {
			return
		}
		p.finish(&rec, raw, err, true)
	})
}

// Resume restarts the pollers of the tasks a previous run left unfinished;
// their callers are gone, so each is detached. A task whose server known
// does not report is recorded lost.
func (p *TaskPoller) Resume(known func(server string) bool) error {
	recs, err := p.o.Journal.Store().Tasks(persistence.TaskFilter{Unfinished: true})
	if err != nil {
		return fmt.Errorf("journal: tasks: %w", err)
	}
	for _, rec := range recs {
		rec.Detached = true
		if !known(rec.Server) {
			rec.Status, rec.Error = persistence.TaskLost, fmt.Sprintf("server %q is no longer registered", rec.Server)
			p.finish(&rec, nil, nil, true)
			continue
		}
		p.o.Logger.Info("resuming task", "server", rec.Server, "task", rec.TaskID, "tool", rec.Tool)
		p.Detach(rec)
	}
	return nil
}

// drive polls rec's task until it ends, a child span of ctx's when traced;
// its errors name the tool and the task. rec is updated as it goes.
func (p *TaskPoller) drive(ctx context.Context, rec *persistence.TaskRecord, onProgress func(Progress), sub *ProgressSub) (json.RawMessage, error) {
	ctx, span := tracing.Child(ctx, "task", trace.WithAttributes(tracing.TaskID.String(rec.TaskID)))
	raw, err := p.poll(ctx, rec, onProgress, sub)
	if span != nil {
		span.SetAttributes(tracing.TaskState.String(string(rec.Status)))
	}
	tracing.End(span, Outcome(err))
	if err != nil {
		err = fmt.Errorf("%s: task %s: %w", rec.Tool, rec.TaskID, err)
	}
	return raw, err
}

// request sends one request of the polling, a child span of the task's,
// to the incarnation that runs the task (taskOptions).
func (p *TaskPoller) request(ctx context.Context, rec *persistence.TaskRecord, method string, params json.RawMessage, opts *CallOptions) (json.RawMessage, error) {
	ctx, span := tracing.Child(ctx, method)
	raw, err := p.o.Request(ctx, rec.Server, method, params, taskOptions(rec, opts))
	tracing.End(span, Outcome(err))
	return raw, err
}

// taskOptions are opts for a request about rec's task: one a legacy
// client's call started goes where that call went, to the server's legacy
// incarnation when it runs one (twin.go).
func taskOptions(rec *persistence.TaskRecord, opts *CallOptions) *CallOptions {
	if !rec.Legacy {
		return opts
	}
	o := CallOptions{}
	if opts != nil {
		o = *opts
	}
	o.Legacy = true
	return &o
}

func (p *TaskPoller) poll(ctx context.Context, rec *persistence.TaskRecord, onProgress func(Progress), sub *ProgressSub) (json.RawMessage, error) {
	if rec.Extension {
		return p.pollExtension(ctx, rec, onProgress, sub)
	}
	polls := p.polls(rec, onProgress, sub)
	log := p.o.Logger
	for {
		t, err := nextTask(ctx, polls, func(t *protocol.Task) string { return t.Status })
		if err != nil {
			return nil, err
		}
		p.note(rec, t)
		switch t.Status {
		case protocol.TaskCancelled:
			return nil, fmt.Errorf("%w%s", ErrTaskCancelled, suffix(t.StatusMessage))
		case protocol.TaskCompleted, protocol.TaskFailed, protocol.TaskInputRequired:
			// tasks/result blocks until the task ends and answers exactly
			// what the call would have; on input_required the server sends
			// its elicitation meanwhile, answered by the host's handler.
			res, err := p.request(ctx, rec, protocol.MethodTasksResult, polls.params, &CallOptions{
				Timeout: time.Until(rec.Deadline), Progress: sub, OnProgress: onProgress,
			})
			if err != nil && ctx.Err() == nil && (errors.Is(err, ErrUnavailable) || errors.Is(err, ErrConnectionLost)) {
				// The server went away while it answered (it crashed, or
				// its cluster member left): the task may live on in the
				// server it comes back as. Polling says.
				log.Warn("tasks/result failed; polling again", "server", rec.Server, "task", rec.TaskID, "err", err)
				continue
			}
			if err != nil && t.Status == protocol.TaskFailed && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
				var perr *protocol.Error
				if !errors.As(err, &perr) {
					return nil, fmt.Errorf("%w%s", ErrTaskFailed, suffix(t.StatusMessage))
				}
			}
			if err == nil {
				rec.Status = persistence.TaskCompleted
				if t.Status == protocol.TaskFailed {
					rec.Status = persistence.TaskFailed
				}
			}
			return res, err
		}
	}
}

// taskPolls is one task's polling with tasks/get, whichever kind of task.
type taskPolls struct {
	p          *TaskPoller
	rec        *persistence.TaskRecord
	params     json.RawMessage // {"taskId":…}
	first      bool
	progress   <-chan Progress
	onProgress func(Progress)
}

func (p *TaskPoller) polls(rec *persistence.TaskRecord, onProgress func(Progress), sub *ProgressSub) *taskPolls {
	tp := &taskPolls{p: p, rec: rec, first: true, onProgress: onProgress}
	tp.params, _ = json.Marshal(protocol.TaskIDParams{TaskID: rec.TaskID})
	if sub != nil {
		tp.progress = sub.C()
	}
	return tp
}

// nextTask polls once more, until a tasks/get answer decodes as a T with
// a status; an error ends the polling (see get).
func nextTask[T any](ctx context.Context, tp *taskPolls, status func(*T) string) (*T, error) {
	for {
		raw, err := tp.p.get(ctx, tp.rec, tp.params, tp.first, tp.progress, tp.onProgress)
		tp.first = false
		if err != nil {
			return nil, err
		}
		if raw == nil {
			continue
		}
		t := new(T)
		if err := json.Unmarshal(raw, t); err != nil || status(t) == "" {
			tp.p.o.Logger.Warn("malformed tasks/get result; polling again", "server", tp.rec.Server, "task", tp.rec.TaskID)
			continue
		}
		return t, nil
	}
}

// get waits for the next poll (none before the first unless the task is
// working) and sends tasks/get: its answer; nil, nil for a failure worth
// polling again after (the deadline bounds them); an error when the
// polling ends: the deadline (the task cancelled), the caller or the
// poller gone, the server no longer knowing the task.
func (p *TaskPoller) get(ctx context.Context, rec *persistence.TaskRecord, params json.RawMessage, first bool, progress <-chan Progress, onProgress func(Progress)) (json.RawMessage, error) {
	left := time.Until(rec.Deadline)
	if left <= 0 {
		p.Cancel(rec, "deadline")
		rec.Status, rec.Error = persistence.TaskExpired, fmt.Sprintf("no outcome by its deadline (%s)", rec.Deadline.Format(time.RFC3339))
		return nil, fmt.Errorf("%w: %s", ErrTimeout, rec.Error)
	}
	if !first || rec.Status == persistence.TaskWorking {
		if err := p.wait(ctx, min(max(rec.PollInterval, MinTaskPoll), MaxTaskPoll, left), progress, onProgress); err != nil {
			return nil, err
		}
	}
	raw, err := p.request(ctx, rec, protocol.MethodTasksGet, params, nil)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return nil, err
		}
		var perr *protocol.Error
		if errors.As(err, &perr) && perr.Code == protocol.CodeInvalidParams {
			rec.Status, rec.Error = persistence.TaskLost, "the server no longer knows the task: "+perr.Message
			return nil, fmt.Errorf("%w: %s", ErrTaskLost, perr.Message)
		}
		p.o.Logger.Warn("tasks/get failed; polling again", "server", rec.Server, "task", rec.TaskID, "err", err)
		return nil, nil // restarting, or a transient failure
	}
	return raw, nil
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// wait waits d, handing on progress meanwhile.
func (p *TaskPoller) wait(ctx context.Context, d time.Duration, progress <-chan Progress, onProgress func(Progress)) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return nil
		case pr := <-progress:
			if onProgress != nil {
				onProgress(pr)
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-p.closing:
			return ErrClosed
		}
	}
}

// note records a status change (not durably: the outcome is).
func (p *TaskPoller) note(rec *persistence.TaskRecord, t *protocol.Task) {
	if d := msDuration(t.PollInterval); d > 0 {
		rec.PollInterval = d
	}
	if t.Status == rec.Status && t.StatusMessage == rec.StatusMessage {
		return
	}
	rec.Status, rec.StatusMessage, rec.Updated = t.Status, t.StatusMessage, time.Now()
	// Queued in order with the final write (finish), never after it:
	// Ingest's queue is applied after the writes of a commit.
	p.o.Journal.WriteAsync([]persistence.Op{persistence.PutTask(*rec)}, nil)
}

// Cancel asks the server to stop a task it runs (tasks/cancel, never
// notifications/cancelled), bounded in time, and marks rec cancelled.
func (p *TaskPoller) Cancel(rec *persistence.TaskRecord, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), taskCancelWait)
	defer cancel()
	params, _ := json.Marshal(protocol.TaskIDParams{TaskID: rec.TaskID})
	if _, err := p.o.Request(ctx, rec.Server, protocol.MethodTasksCancel, params, taskOptions(rec, nil)); err != nil {
		p.o.Logger.Debug("tasks/cancel failed", "server", rec.Server, "task", rec.TaskID, "err", err)
	}
	rec.Status, rec.Error = persistence.TaskCancelled, "cancelled by the host: "+why
}

// finish records a task's end, durably; a detached task's outcome is also
// a journal event and keeps its result.
func (p *TaskPoller) finish(rec *persistence.TaskRecord, raw json.RawMessage, err error, detached bool) {
	rec.Done, rec.Updated = true, time.Now()
	if err != nil && rec.Error == "" {
		rec.Error = err.Error()
	}
	if err != nil && !terminalTaskStatus(rec.Status) {
		rec.Status = persistence.TaskFailed
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
	if werr := p.o.Journal.Write(ctx, ops...); werr != nil {
		p.o.Logger.Warn("task outcome not journaled", "server", rec.Server, "task", rec.TaskID, "err", werr)
	}
}

func terminalTaskStatus(s string) bool {
	switch s {
	case persistence.TaskCompleted, persistence.TaskFailed, persistence.TaskCancelled, persistence.TaskLost, persistence.TaskExpired:
		return true
	}
	return false
}

func msDuration(ms *int64) time.Duration {
	if ms == nil || *ms <= 0 {
		return 0
	}
	return time.Duration(*ms) * time.Millisecond
}

// Outcome names how a request ended, for histories, metrics and traces:
// "" for nil, else timeout, cancelled, unavailable or error.
func Outcome(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrCancelled):
		return "cancelled"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	}
	return "error"
}
