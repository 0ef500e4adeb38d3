package mcpserve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Tasks are experimental in MCP 2025-11-25. With Options.Tasks a tools/call
// whose params carry "task" (for a tool whose TaskSupport allows it) is
// answered at once with a CreateTaskResult while the handler runs on; the
// client polls tasks/get and fetches the outcome with tasks/result.

// RelatedTaskMetaKey is the _meta key that ties a message to a task.
const RelatedTaskMetaKey = "io.modelcontextprotocol/related-task"

// Defaults for Options.TaskPollInterval and Options.TaskTTL.
const (
	DefaultTaskPollInterval = 500 * time.Millisecond
	DefaultTaskTTL          = time.Minute
)

// Task statuses. A task starts working; completed, failed and cancelled are
// terminal and never change.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

func taskTerminal(status string) bool {
	return status == TaskCompleted || status == TaskFailed || status == TaskCancelled
}

// taskTimeFormat is RFC 3339 in UTC to the millisecond, the precision a
// task's times are kept at so that every process computes the same
// deadlines from them.
const taskTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Task is a task as tasks/get, tasks/cancel and tasks/list report it.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"` // milliseconds from creation; nil (null) is unlimited
	PollInterval  *int64 `json:"pollInterval,omitempty"`
}

// CreateTaskResult is the immediate answer to a task-augmented tools/call.
type CreateTaskResult struct {
	Task Task `json:"task"`
}

// ListTasksResult is the result of tasks/list.
type ListTasksResult struct {
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// serverTask is one task. The first block never changes after creation;
// the rest is guarded by Server.tasksMu.
type serverTask struct {
	id        string
	tool      string
	args      json.RawMessage
	meta      json.RawMessage
	createdAt time.Time
	ttl       *int64
	poll      int64
	done      chan struct{} // closed when the task is terminal or dropped

	cancel        context.CancelFunc // the handler's; nil when none runs
	status        string
	statusMessage string
	updatedAt     time.Time
	inputWaits    int // ToolCall.Call requests awaiting an answer
	result        *CallToolResult
	rpcErr        *Error
	dropped       bool // expired: forgotten, file removed
}

func (t *serverTask) snapshot() Task {
	poll := t.poll
	return Task{
		TaskID:        t.id,
		Status:        t.status,
		StatusMessage: t.statusMessage,
		CreatedAt:     t.createdAt.Format(taskTimeFormat),
		LastUpdatedAt: t.updatedAt.Format(taskTimeFormat),
		TTL:           t.ttl,
		PollInterval:  &poll,
	}
}

func (t *serverTask) expired(now time.Time) bool {
	return t.ttl != nil && !now.Before(t.createdAt.Add(time.Duration(*t.ttl)*time.Millisecond))
}

// taskFile is a task as Options.TaskStateDir keeps it: the Task, the call
// that made it, and its outcome once terminal.
type taskFile struct {
	Task
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
	Result    *CallToolResult `json:"result,omitempty"`
	Error     *Error          `json:"error,omitempty"`
}

func taskNow() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

func newTaskID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails on supported platforms
	return hex.EncodeToString(b)
}

func relatedTaskMeta(taskID string) map[string]any {
	return map[string]any{RelatedTaskMetaKey: map[string]any{"taskId": taskID}}
}

// withRelatedTask returns params as a JSON object with the related-task
// entry added to its _meta.
func withRelatedTask(params any, taskID string) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(b, jsonNull) {
			if err := json.Unmarshal(b, &obj); err != nil {
				return nil, errors.New("params must be a JSON object")
			}
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := obj["_meta"]; ok && !bytes.Equal(raw, jsonNull) {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, errors.New("params._meta must be a JSON object")
		}
	}
	meta[RelatedTaskMetaKey], _ = json.Marshal(map[string]string{"taskId": taskID})
	obj["_meta"], _ = json.Marshal(meta)
	return json.Marshal(obj)
}

func taskNotFound(id string) *Error {
	return Errorf(CodeInvalidParams, "Invalid params: unknown task %q", id)
}

// createTask registers a task for call and starts its handler; taskParams
// is the request's "task" member.
func (s *Server) createTask(tool Tool, call *ToolCall, taskParams json.RawMessage) (any, error) {
	var p struct {
		TTL *int64 `json:"ttl"`
	}
	if taskParams[0] != '{' || json.Unmarshal(taskParams, &p) != nil {
		return nil, Errorf(CodeInvalidParams, "Invalid params: task must be an object")
	}
	if p.TTL != nil && *p.TTL < 0 {
		return nil, Errorf(CodeInvalidParams, "Invalid params: task.ttl must not be negative")
	}
	ttl := p.TTL
	if ttl == nil && s.opts.TaskTTL >= 0 {
		ms := s.opts.TaskTTL.Milliseconds()
		ttl = &ms
	}
	now := taskNow()
	t := &serverTask{
		id: newTaskID(), tool: tool.Name, args: call.Arguments, meta: call.Meta,
		createdAt: now, ttl: ttl, poll: s.opts.TaskPollInterval.Milliseconds(),
		done: make(chan struct{}), status: TaskWorking, updatedAt: now,
	}
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	s.tasks[t.id] = t
	s.saveTask(t)
	s.startTask(t, tool, call)
	s.log.Info("task created", "task", t.id, "tool", tool.Name)
	return &CreateTaskResult{Task: t.snapshot()}, nil
}

// startTask runs t's handler on a goroutine that Serve waits for. The
// caller holds tasksMu.
func (s *Server) startTask(t *serverTask, tool Tool, call *ToolCall) {
	ctx, cancel := context.WithCancel(s.serveCtx)
	t.cancel = cancel
	call.task, call.TaskID, call.TaskCreatedAt = t, t.id, t.createdAt
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		defer cancel()
		res, err := s.runTool(ctx, tool, call)
		s.finishTask(ctx, t, res, err)
	}()
}

// finishTask records the handler's outcome, unless the task already ended
// (cancelled, expired) or the handler was interrupted by shutdown: then the
// task stays working, in TaskStateDir too, for a later process to resume.
func (s *Server) finishTask(ctx context.Context, t *serverTask, res *CallToolResult, err error) {
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	t.cancel = nil
	if t.dropped || taskTerminal(t.status) {
		return
	}
	if err != nil && ctx.Err() != nil {
		s.log.Info("task interrupted by shutdown; left working", "task", t.id)
		return
	}
	var rpcErr *Error
	switch {
	case errors.As(err, &rpcErr):
		t.status, t.statusMessage, t.rpcErr = TaskFailed, rpcErr.Message, rpcErr
	case err != nil:
		t.rpcErr = Errorf(CodeInternalError, "Internal error: %v", err)
		t.status, t.statusMessage = TaskFailed, t.rpcErr.Message
	case res.IsError:
		t.status, t.statusMessage, t.result = TaskFailed, firstText(res), res
	default:
		t.status, t.result = TaskCompleted, res
	}
	t.updatedAt = taskNow()
	close(t.done)
	s.saveTask(t)
	s.log.Info("task ended", "task", t.id, "status", t.status)
}

func firstText(res *CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// awaitInput moves t to input_required while a ToolCall.Call of its
// handler awaits an answer, and back to working after.
func (s *Server) awaitInput(t *serverTask, waiting bool) {
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	if waiting {
		t.inputWaits++
	} else {
		t.inputWaits--
	}
	if t.dropped || taskTerminal(t.status) {
		return
	}
	status := TaskWorking
	if t.inputWaits > 0 {
		status = TaskInputRequired
	}
	if status != t.status {
		t.status, t.updatedAt = status, taskNow()
		s.saveTask(t)
	}
}

// lookupTask returns the live task id, dropping it if its ttl has passed.
// The caller holds tasksMu.
func (s *Server) lookupTask(id string) (*serverTask, *Error) {
	t, ok := s.tasks[id]
	if !ok {
		return nil, taskNotFound(id)
	}
	if t.expired(time.Now()) {
		s.dropTask(t)
		return nil, taskNotFound(id)
	}
	return t, nil
}

// dropTask forgets an expired task, stopping its handler. The caller holds
// tasksMu.
func (s *Server) dropTask(t *serverTask) {
	delete(s.tasks, t.id)
	t.dropped = true
	if !taskTerminal(t.status) {
		close(t.done)
	}
	if t.cancel != nil {
		t.cancel()
	}
	if dir := s.opts.TaskStateDir; dir != "" {
		if err := os.Remove(filepath.Join(dir, t.id+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("remove expired task file", "task", t.id, "err", err)
		}
	}
	s.log.Info("task expired", "task", t.id)
}

func taskIDParam(params json.RawMessage) (string, error) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return "", err
	}
	if p.TaskID == "" {
		return "", Errorf(CodeInvalidParams, "Invalid params: missing taskId")
	}
	return p.TaskID, nil
}

func (s *Server) getTask(req *Request) (any, error) {
	id, err := taskIDParam(req.Params)
	if err != nil {
		return nil, err
	}
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	t, rpcErr := s.lookupTask(id)
	if rpcErr != nil {
		return nil, rpcErr
	}
	return t.snapshot(), nil
}

// taskResult blocks until the task is terminal (or expires, or ctx ends),
// then answers what the tools/call would have: the CallToolResult, tagged
// with the related-task _meta, or the JSON-RPC error.
func (s *Server) taskResult(ctx context.Context, req *Request) (any, error) {
	id, err := taskIDParam(req.Params)
	if err != nil {
		return nil, err
	}
	s.tasksMu.Lock()
	t, rpcErr := s.lookupTask(id)
	s.tasksMu.Unlock()
	if rpcErr != nil {
		return nil, rpcErr
	}
	var expiry <-chan time.Time
	if t.ttl != nil {
		timer := time.NewTimer(time.Until(t.createdAt.Add(time.Duration(*t.ttl) * time.Millisecond)))
		defer timer.Stop()
		expiry = timer.C
	}
	select {
	case <-t.done:
	case <-expiry:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	if _, rpcErr := s.lookupTask(id); rpcErr != nil {
		return nil, rpcErr
	}
	switch {
	case t.status == TaskCancelled:
		return nil, Errorf(CodeInternalError, "Task %s was cancelled", id)
	case t.rpcErr != nil:
		return nil, t.rpcErr
	}
	res := *t.result
	res.Meta = maps.Clone(res.Meta)
	if res.Meta == nil {
		res.Meta = map[string]any{}
	}
	maps.Copy(res.Meta, relatedTaskMeta(id))
	return &res, nil
}

func (s *Server) cancelTask(req *Request) (any, error) {
	id, err := taskIDParam(req.Params)
	if err != nil {
		return nil, err
	}
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	t, rpcErr := s.lookupTask(id)
	if rpcErr != nil {
		return nil, rpcErr
	}
	if taskTerminal(t.status) {
		return nil, Errorf(CodeInvalidParams, "Invalid params: task %s is already %s", id, t.status)
	}
	t.status, t.updatedAt = TaskCancelled, taskNow()
	close(t.done)
	if t.cancel != nil {
		t.cancel()
	}
	s.saveTask(t)
	s.log.Info("task cancelled", "task", id)
	return t.snapshot(), nil
}

// listTasks lists the live tasks, oldest first, paginated like tools/list.
func (s *Server) listTasks(req *Request) (any, error) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if err := unmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	s.tasksMu.Lock()
	now := time.Now()
	var live []*serverTask
	for _, t := range s.tasks {
		if t.expired(now) {
			s.dropTask(t)
			continue
		}
		live = append(live, t)
	}
	slices.SortFunc(live, func(a, b *serverTask) int {
		if c := a.createdAt.Compare(b.createdAt); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	tasks := make([]Task, len(live))
	for i, t := range live {
		tasks[i] = t.snapshot()
	}
	s.tasksMu.Unlock()

	start := 0
	if p.Cursor != nil {
		n, ok := decodeCursor(*p.Cursor)
		if !ok || n > len(tasks) {
			return nil, Errorf(CodeInvalidParams, "Invalid params: invalid cursor %q", *p.Cursor)
		}
		start = n
	}
	res := &ListTasksResult{Tasks: tasks[start:]}
	if size := s.opts.PageSize; size > 0 && len(res.Tasks) > size {
		res.Tasks = res.Tasks[:size]
		res.NextCursor = encodeCursor(start + size)
	}
	return res, nil
}

// saveTask writes t to TaskStateDir, replacing the previous file
// atomically. The caller holds tasksMu, so writes of one task never
// reorder. Failures are logged: the task lives on in memory.
func (s *Server) saveTask(t *serverTask) {
	dir := s.opts.TaskStateDir
	if dir == "" {
		return
	}
	f := taskFile{Task: t.snapshot(), Tool: t.tool, Arguments: t.args, Meta: t.meta, Result: t.result, Error: t.rpcErr}
	b, err := json.Marshal(f)
	if err == nil {
		path := filepath.Join(dir, t.id+".json")
		tmp := path + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, path)
		}
	}
	if err != nil {
		s.log.Warn("save task state", "task", t.id, "err", err)
	}
}

// loadTasks reads the tasks a previous process left in TaskStateDir.
// Terminal ones are answered as they are; a working one is run again if
// its tool is Resumable, else it fails. Expired ones are removed. Called by
// Serve before it reads input.
func (s *Server) loadTasks() {
	dir := s.opts.TaskStateDir
	if !s.opts.Tasks || dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		s.log.Warn("task state directory", "dir", dir, "err", err)
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		s.log.Warn("task state directory", "dir", dir, "err", err)
		return
	}
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		t, err := readTaskFile(filepath.Join(dir, e.Name()))
		if err != nil || t.id != id {
			s.log.Warn("skipped unreadable task file", "file", e.Name(), "err", err)
			continue
		}
		if t.expired(time.Now()) {
			t.cancel = nil
			s.dropTask(t)
			continue
		}
		s.tasks[id] = t
		if taskTerminal(t.status) {
			close(t.done)
			continue
		}
		tool, ok := s.Tool(t.tool)
		if ok && tool.Resumable {
			s.log.Info("task resumed", "task", id, "tool", t.tool)
			t.status, t.updatedAt = TaskWorking, taskNow()
			s.saveTask(t)
			s.startTask(t, tool, &ToolCall{Server: s, Name: t.tool, Arguments: t.args, Meta: t.meta})
			continue
		}
		t.result = ErrorResult("task interrupted by a server restart")
		t.status, t.statusMessage, t.updatedAt = TaskFailed, "task interrupted by a server restart", taskNow()
		close(t.done)
		s.saveTask(t)
		s.log.Info("task interrupted by a restart; failed", "task", id, "tool", t.tool)
	}
}

func readTaskFile(path string) (*serverTask, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f taskFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	created, err := time.Parse(time.RFC3339, f.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("createdAt: %w", err)
	}
	updated, err := time.Parse(time.RFC3339, f.LastUpdatedAt)
	if err != nil {
		return nil, fmt.Errorf("lastUpdatedAt: %w", err)
	}
	if f.Status == "" || f.Tool == "" {
		return nil, errors.New("missing status or tool")
	}
	if taskTerminal(f.Status) && f.Status != TaskCancelled && f.Result == nil && f.Error == nil {
		return nil, errors.New("terminal task without an outcome")
	}
	t := &serverTask{
		id: f.TaskID, tool: f.Tool, args: f.Arguments, meta: f.Meta,
		createdAt: created.UTC(), ttl: f.TTL, done: make(chan struct{}),
		status: f.Status, statusMessage: f.StatusMessage, updatedAt: updated.UTC(),
		result: f.Result, rpcErr: f.Error,
	}
	if f.PollInterval != nil {
		t.poll = *f.PollInterval
	}
	if len(t.args) == 0 {
		t.args = json.RawMessage("{}")
	}
	return t, nil
}
