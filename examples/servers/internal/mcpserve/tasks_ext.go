package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The tasks extension of 2026-07-28 (io.modelcontextprotocol/tasks,
// SEP-2663), served with Options.TasksExtension (and Options.Modern). A
// modern tools/call whose _meta declares the extension, of a tool whose
// TaskSupport is optional or required, is answered at once with a task
// handle (resultType "task") while the handler runs on. The client polls
// tasks/get, which carries the result (completed, a tool error included)
// or the JSON-RPC error (failed) once the task ends; a ToolCall.Call of the
// handler makes the task input_required, its request one of tasks/get's
// inputRequests, until tasks/update answers it. tasks/cancel cancels the
// handler. A request that does not declare the extension gets no task (a
// required tool: -32021), and its tasks/* requests -32021. Tasks live in
// memory only.

// TasksExtension is the extension's id.
const TasksExtension = "io.modelcontextprotocol/tasks"

// CodeMissingClientCapability answers a request that needs a capability
// the request's client did not declare.
const CodeMissingClientCapability = -32021

// ResultTask is the resultType of a task handle.
const ResultTask = "task"

// extTask is one task of the extension. The first block never changes;
// the rest is guarded by Server.tasksMu.
type extTask struct {
	id        string
	tool      string
	createdAt time.Time
	ttl       int64 // milliseconds
	poll      int64

	cancel        context.CancelFunc
	status        string
	statusMessage string
	updatedAt     time.Time
	result        *CallToolResult
	rpcErr        *Error
	asks          map[string]*extAsk // outstanding input requests, by key
	asked         int                // keys issued so far: each is unique over the task's life
}

// extAsk is one input request awaiting its answer.
type extAsk struct {
	req    InputRequest
	answer chan json.RawMessage // buffered 1
}

// DetailedTask is a task as the extension's CreateTaskResult and tasks/get
// give it.
type DetailedTask struct {
	ResultType     string                  `json:"resultType"`
	TaskID         string                  `json:"taskId"`
	Status         string                  `json:"status"`
	StatusMessage  string                  `json:"statusMessage,omitempty"`
	CreatedAt      string                  `json:"createdAt"`
	LastUpdatedAt  string                  `json:"lastUpdatedAt"`
	TTLMs          int64                   `json:"ttlMs"`
	PollIntervalMs int64                   `json:"pollIntervalMs"`
	Result         *CallToolResult         `json:"result,omitempty"`
	Error          *Error                  `json:"error,omitempty"`
	InputRequests  map[string]InputRequest `json:"inputRequests,omitempty"`
}

// snapshot is t now; detailed adds the outcome or the input requests
// (tasks/get). The caller holds tasksMu.
func (t *extTask) snapshot(detailed bool) *DetailedTask {
	v := &DetailedTask{
		ResultType: ResultComplete, TaskID: t.id, Status: t.status, StatusMessage: t.statusMessage,
		CreatedAt: t.createdAt.Format(taskTimeFormat), LastUpdatedAt: t.updatedAt.Format(taskTimeFormat),
		TTLMs: t.ttl, PollIntervalMs: t.poll,
	}
	if !detailed {
		v.ResultType = ResultTask
		return v
	}
	switch t.status {
	case TaskCompleted:
		v.Result = t.result
	case TaskFailed:
		v.Error = t.rpcErr
	case TaskInputRequired:
		v.InputRequests = make(map[string]InputRequest, len(t.asks))
		for k, a := range t.asks {
			v.InputRequests[k] = a.req
		}
	}
	return v
}

func (t *extTask) expired(now time.Time) bool {
	return !now.Before(t.createdAt.Add(time.Duration(t.ttl) * time.Millisecond))
}

// declaresTasks reports whether a modern request's capabilities declare
// the extension.
func declaresTasks(caps json.RawMessage) bool {
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	return json.Unmarshal(caps, &c) == nil && c.Extensions[TasksExtension] != nil && string(c.Extensions[TasksExtension]) != "null"
}

func missingTasks(what string) *Error {
	return &Error{
		Code:    CodeMissingClientCapability,
		Message: what + " needs the " + TasksExtension + " extension, which the request does not declare",
		Data:    json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}`),
	}
}

// createExtTask registers a task for call and starts its handler.
func (s *Server) createExtTask(tool Tool, call *ToolCall) (any, error) {
	ttl := s.opts.TaskTTL
	if ttl < 0 {
		ttl = DefaultTaskTTL
	}
	now := taskNow()
	t := &extTask{
		id: newTaskID(), tool: tool.Name, createdAt: now, ttl: ttl.Milliseconds(),
		poll: s.opts.TaskPollInterval.Milliseconds(), status: TaskWorking, updatedAt: now,
		asks: map[string]*extAsk{},
	}
	ctx, cancel := context.WithCancel(s.serveCtx)
	t.cancel = cancel
	call.ext, call.TaskID, call.TaskCreatedAt = t, t.id, t.createdAt
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	if s.extTasks == nil {
		s.extTasks = map[string]*extTask{}
	}
	s.extTasks[t.id] = t // durable (as far as memory goes) before the handle is sent
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		defer cancel()
		res, err := s.runTool(ctx, tool, call)
		s.finishExtTask(ctx, t, res, err)
	}()
	s.log.Info("task created", "task", t.id, "tool", tool.Name)
	return t.snapshot(false), nil
}

// finishExtTask records the handler's outcome, unless the task already
// ended (cancelled).
func (s *Server) finishExtTask(ctx context.Context, t *extTask, res *CallToolResult, err error) {
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	if taskTerminal(t.status) {
		return
	}
	var rpcErr *Error
	switch {
	case errors.As(err, &rpcErr):
		t.status, t.statusMessage, t.rpcErr = TaskFailed, rpcErr.Message, rpcErr
	case err != nil && ctx.Err() != nil:
		t.rpcErr = Errorf(CodeInternalError, "the server stopped while the task ran")
		t.status, t.statusMessage = TaskFailed, t.rpcErr.Message
	case err != nil:
		t.rpcErr = Errorf(CodeInternalError, "Internal error: %v", err)
		t.status, t.statusMessage = TaskFailed, t.rpcErr.Message
	default:
		// A tool error is a result: completed (SEP-2663).
		t.status, t.result = TaskCompleted, res
	}
	t.asks = map[string]*extAsk{}
	t.updatedAt = taskNow()
	s.log.Info("task ended", "task", t.id, "status", t.status)
}

// askExt makes the task input_required with one more input request and
// waits for tasks/update to answer it.
func (s *Server) askExt(ctx context.Context, t *extTask, method string, params json.RawMessage) (json.RawMessage, error) {
	a := &extAsk{req: InputRequest{Method: method, Params: params}, answer: make(chan json.RawMessage, 1)}
	s.tasksMu.Lock()
	t.asked++
	key := "input-" + strconv.Itoa(t.asked)
	t.asks[key] = a
	if !taskTerminal(t.status) {
		t.status, t.updatedAt = TaskInputRequired, taskNow()
	}
	s.tasksMu.Unlock()
	defer func() {
		s.tasksMu.Lock()
		delete(t.asks, key)
		if len(t.asks) == 0 && t.status == TaskInputRequired {
			t.status, t.updatedAt = TaskWorking, taskNow()
		}
		s.tasksMu.Unlock()
	}()
	select {
	case ans := <-a.answer:
		return ans, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// extTaskRequest serves tasks/get, tasks/update and tasks/cancel of a
// modern request.
func (s *Server) extTaskRequest(ctx context.Context, req *Request) (any, error) {
	if mr := modernFrom(ctx); mr == nil || !declaresTasks(mr.caps) {
		return nil, missingTasks(req.Method)
	}
	var p struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if err := unmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	if p.TaskID == "" {
		return nil, Errorf(CodeInvalidParams, "Invalid params: missing taskId")
	}
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	t, ok := s.extTasks[p.TaskID]
	if ok && t.expired(time.Now()) {
		delete(s.extTasks, t.id)
		t.cancel()
		ok = false
	}
	if !ok {
		return nil, taskNotFound(p.TaskID)
	}
	ack := map[string]string{"resultType": ResultComplete}
	switch req.Method {
	case "tasks/get":
		return t.snapshot(true), nil
	case "tasks/update":
		for key, ans := range p.InputResponses {
			if a, ok := t.asks[key]; ok { // unknown or answered keys are ignored
				delete(t.asks, key)
				a.answer <- ans
			}
		}
		return ack, nil
	case "tasks/cancel":
		if !taskTerminal(t.status) {
			t.status, t.statusMessage, t.updatedAt = TaskCancelled, "cancelled by the client", taskNow()
			t.asks = map[string]*extAsk{}
			t.cancel()
			s.log.Info("task cancelled", "task", t.id)
		}
		return ack, nil
	}
	return nil, fmt.Errorf("mcpserve: %s is not a tasks request", req.Method)
}
