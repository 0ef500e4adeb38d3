package gateway

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Gateway-side tasks: the tasks extension of 2026-07-28
// (io.modelcontextprotocol/tasks, SEP-2663), served by the gateway for the
// tools behind it, whether their servers know tasks or not. A modern
// client that declares the extension in a request's capabilities gets a
// task (a CreateTaskResult) for a tools/call of a tool that may or must
// run as one (its execution.taskSupport), and for any other tool whose
// call is still running after Options.TaskAfter; it then polls tasks/get,
// answers the call's questions with tasks/update and may tasks/cancel. A
// task is a held call, like a bridge (bridge.go): its server's questions
// become the task's inputRequests.

// TasksExtension is the extension id of tasks.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Defaults of Options.TaskAfter and Options.TaskTTL.
const (
	DefaultTaskAfter = 2 * time.Second
	DefaultTaskTTL   = time.Hour
)

// requiredWindow is how long a call of a tool that requires a task may
// take to ask its first questions before the task is created: questions
// asked at once are answered in the call itself.
const requiredWindow = 100 * time.Millisecond

// taskPollMillis is the poll interval tasks advise.
const taskPollMillis = 500

// Task statuses of SEP-2663.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// task is one gateway task: its held call (a bridge) and what tasks/get
// reports.
type task struct {
	b       *bridge
	tool    string
	created time.Time
	ttl     time.Duration
	// cancelled is set by tasks/cancel; guarded by b.mu.
	cancelled bool
}

// declaresTasks reports whether the request's client capabilities declare
// the tasks extension.
func (s *session) declaresTasks() bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	return json.Unmarshal(orEmpty(s.rawCaps), &caps) == nil && declared(caps.Extensions[TasksExtension])
}

// taskSupport is what the exposed tool declares: "forbidden", "optional",
// "required", or "" when its server says nothing.
func (s *session) taskSupport(tool string) string {
	for _, t := range s.hs.Tools() {
		if t.Name == tool {
			return t.TaskSupport
		}
	}
	return ""
}

// missingTasks is the -32021 answer to a request that needs the tasks
// extension from a client that did not declare it.
func missingTasks(id json.RawMessage, what string) []byte {
	data := json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}`)
	return protocol.AppendError(nil, id, protocol.CodeMissingClientCapability, what+" needs the "+TasksExtension+" extension, which the request's client capabilities do not declare", data)
}

// taskCall answers a modern client's tools/call when tasks apply, and
// reports whether they did: a task for a tool that may or must run as one
// (or for one that declares nothing, once its call outlives TaskAfter),
// -32021 for a tool that requires a task from a client without the
// extension.
func (g *Gateway) taskCall(ctx context.Context, s *session, msg protocol.Message) ([]byte, bool) {
	name, _ := nameOf(msg.Method, msg.Params)
	support := s.taskSupport(name)
	if !s.declaresTasks() {
		if support == "required" {
			return missingTasks(msg.ID, "tool "+name), true
		}
		return nil, false
	}
	switch support {
	case "forbidden":
		return nil, false
	case "", "optional", "required":
	default:
		return nil, false
	}
	var b *bridge
	if state, ok := bridgeState(msg.Params); ok && support == protocol.TaskSupportRequired {
		var perr *protocol.Error
		if b, perr = g.takeAnswers(msg, state); perr != nil {
			return protocol.AppendError(nil, msg.ID, perr.Code, perr.Message, perr.Data), true
		}
	} else if b = g.startBridge(s, msg); b == nil {
		return protocol.AppendError(nil, msg.ID, protocol.CodeInternalError, "the gateway is closed", nil), true
	}
	if support == protocol.TaskSupportRequired {
		// Questions the call asks at once are asked before the task
		// exists (SEP-2322 rounds in the call itself); the task starts
		// once the call runs without waiting on the client.
		select {
		case <-b.wake:
			select {
			case <-b.done:
			case <-time.After(gatherWindow):
			}
			if frame := b.questions(msg.ID); frame != nil {
				return frame, true
			}
		case <-b.done:
		case <-time.After(requiredWindow):
		case <-ctx.Done():
			b.s.cancel()
			b.end()
			return nil, true
		}
	}
	t := &task{b: b, created: time.Now(), ttl: g.taskTTL(), tool: name}
	b.expiry.Reset(t.ttl)
	if support == "" {
		// A tool that says nothing: a quick call answers as it is.
		select {
		case <-b.done:
			b.end()
			return withID(b.resp, msg.ID), true
		case <-time.After(g.taskAfter()):
		case <-ctx.Done():
			b.s.cancel()
			b.end()
			return nil, true
		}
	}
	// Durable before the client hears of it: after a restart tasks/get
	// still answers (SEP-2663: a CreateTaskResult names a task that
	// exists).
	if err := g.saveTask(t, nil); err != nil {
		b.s.cancel()
		b.end()
		return protocol.AppendError(nil, msg.ID, protocol.CodeInternalError, "the task could not be journaled: "+err.Error(), nil), true
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return protocol.AppendError(nil, msg.ID, protocol.CodeInternalError, "the gateway is closed", nil), true
	}
	if g.tasks == nil {
		g.tasks = map[string]*task{}
	}
	g.tasks[b.id] = t
	g.wg.Add(1)
	g.mu.Unlock()
	b.mu.Lock()
	b.keep = true
	b.mu.Unlock()
	go func() {
		// Its outcome, journaled once the call ends.
		defer g.wg.Done()
		<-b.done
		var stopped *protocol.Error
		select {
		case <-g.done:
			// Close cancelled it: it did not end, the gateway did.
			stopped = errStopped
		default:
		}
		if err := g.saveTask(t, stopped); err != nil {
			g.log.Warn("gateway: journaling a task's outcome", "task", b.id, "err", err)
		}
	}()
	return result(msg.ID, t.view(false)), true
}

// taskOf is a task's state as the extension gives it, without its
// outcome or questions.
func taskOf(id, status string, created, updated time.Time, ttl time.Duration) protocol.DetailedTask {
	ttlMs, poll := ttl.Milliseconds(), int64(taskPollMillis)
	return protocol.DetailedTask{TaskID: id, Status: status, CreatedAt: created.UTC().Format(time.RFC3339Nano),
		LastUpdatedAt: updated.UTC().Format(time.RFC3339Nano), TTLMs: &ttlMs, PollIntervalMs: &poll}
}

// view is the task now; detailed adds its result, error or questions
// (tasks/get), else it is a CreateTaskResult.
func (t *task) view(detailed bool) protocol.DetailedTask {
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	v := taskOf(b.id, taskWorking, t.created, b.updated, t.ttl)
	if !detailed {
		v.ResultType = "task"
	}
	switch {
	case t.cancelled:
		v.Status = taskCancelled
	case b.resp != nil:
		m, err := protocol.Classify(b.resp)
		switch {
		case err != nil:
			v.Status, v.Error = taskFailed, &protocol.Error{Code: protocol.CodeInternalError, Message: "the call ended without an answer"}
		case m.Error != nil:
			v.Status, v.Error = taskFailed, m.Error
		default:
			v.Status, v.Result = taskCompleted, completeResult(withoutRelatedTask(m.Result), b.method)
		}
	case len(b.asks) > 0:
		v.Status = taskInputRequired
		v.InputRequests = make(map[string]protocol.InputRequest, len(b.asks))
		for key, ask := range b.asks {
			v.InputRequests[key] = ask
		}
	}
	if !detailed {
		v.Result, v.Error, v.InputRequests = nil, nil, nil
	}
	return v
}

// completeResult is a completed task's result as the call itself would
// have answered the client (SEP-2663: tasks/get "returns exactly what the
// underlying request would have returned"): a 2026-07-28 result, with
// resultType "complete" (modernResult).
func completeResult(res json.RawMessage, method string) json.RawMessage {
	if out, ok := modernResult(res, method); ok {
		return out
	}
	return res
}

// withoutRelatedTask drops the related-task member of a result's _meta
// (a server's own task's): the task is the gateway's, named at the root of
// tasks/get.
func withoutRelatedTask(res json.RawMessage) json.RawMessage {
	var members map[string]json.RawMessage
	if json.Unmarshal(res, &members) != nil {
		return res
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(members["_meta"], &meta) != nil || meta[protocol.MetaRelatedTask] == nil {
		return res
	}
	delete(meta, protocol.MetaRelatedTask)
	if len(meta) == 0 {
		delete(members, "_meta")
	} else if b, err := json.Marshal(meta); err == nil {
		members["_meta"] = b
	}
	if b, err := json.Marshal(members); err == nil {
		return b
	}
	return res
}

// toolExecution is a tool's execution member for a modern client: what
// the gateway serves, a task where the tool may or must run as one (a tool
// that declares nothing may: a long call becomes a task).
func toolExecution(support string) *protocol.ToolExecution {
	switch support {
	case protocol.TaskSupportForbidden, protocol.TaskSupportRequired:
		return &protocol.ToolExecution{TaskSupport: support}
	}
	return &protocol.ToolExecution{TaskSupport: protocol.TaskSupportOptional}
}

// serveTasks answers tasks/get, tasks/update and tasks/cancel.
func (s *session) serveTasks(msg protocol.Message) []byte {
	if !s.declaresTasks() {
		return missingTasks(msg.ID, msg.Method)
	}
	var p struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if err := json.Unmarshal(orEmpty(msg.Params), &p); err != nil || p.TaskID == "" {
		return invalidParams(msg.ID, "%s: params must hold a taskId", msg.Method)
	}
	s.g.mu.Lock()
	t := s.g.tasks[p.TaskID]
	s.g.mu.Unlock()
	if t == nil {
		return s.g.journaledTask(msg, p.TaskID)
	}
	b := t.b
	switch msg.Method {
	case protocol.MethodTasksGet:
		return result(msg.ID, t.view(true))
	case protocol.MethodTasksUpdate:
		b.answer(p.InputResponses)
	case protocol.MethodTasksCancel:
		b.mu.Lock()
		terminal := t.cancelled || b.resp != nil
		if !terminal {
			t.cancelled = true
			b.updated = time.Now()
		}
		b.mu.Unlock()
		if !terminal {
			b.s.cancel()
		}
	}
	return protocol.AppendResult(nil, msg.ID, json.RawMessage(`{}`))
}

// errStopped is the error of a task whose gateway stopped while it ran.
var errStopped = &protocol.Error{Code: protocol.CodeInternalError, Message: "the gateway stopped while the task ran: its call was lost"}

// saveTask journals the task as it is now, or as failed with stopped.
func (g *Gateway) saveTask(t *task, stopped *protocol.Error) error {
	v := t.view(true)
	if stopped != nil {
		v.Status, v.Result, v.Error = taskFailed, nil, stopped
	}
	rec := mcpvisor.GatewayTask{ID: v.TaskID, Tool: t.tool, Created: t.created, Expires: t.created.Add(t.ttl), Status: v.Status, Result: v.Result}
	rec.Updated, _ = time.Parse(time.RFC3339Nano, v.LastUpdatedAt)
	if v.Status == taskInputRequired {
		rec.Status = taskWorking // its questions live with its call
	}
	if v.Error != nil {
		rec.Error, _ = json.Marshal(v.Error)
	}
	ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	return g.h.SaveGatewayTask(ctx, rec)
}

// journaledTask answers a tasks request for a task this gateway does not
// hold: the journal's record of it, written by this gateway before a
// restart (or by another replica on the same data directory). A task that
// was working when the gateway stopped lost its call: it failed.
func (g *Gateway) journaledTask(msg protocol.Message, id string) []byte {
	rec, found, err := g.h.LoadGatewayTask(id)
	if err != nil {
		return protocol.AppendError(nil, msg.ID, protocol.CodeInternalError, "reading the task from the journal: "+err.Error(), nil)
	}
	if !found || rec.Expires.Before(time.Now()) {
		return invalidParams(msg.ID, "%s: unknown task %s (it expired, or is held by another replica)", msg.Method, strconv.Quote(id))
	}
	v := taskOf(rec.ID, rec.Status, rec.Created, rec.Updated, rec.Expires.Sub(rec.Created))
	if len(rec.Result) > 0 { // a record written before results were made complete lacks resultType
		v.Result = completeResult(rec.Result, protocol.MethodToolsCall)
	}
	if len(rec.Error) > 0 {
		v.Error = &protocol.Error{}
		_ = json.Unmarshal(rec.Error, v.Error)
	}
	if v.Status == taskWorking {
		v.Status, v.Error = taskFailed, errStopped // the process ended under it
	}
	switch msg.Method {
	case protocol.MethodTasksGet:
		return result(msg.ID, v)
	case protocol.MethodTasksUpdate:
		return invalidParams(msg.ID, "tasks/update: task %s has ended (%s)", strconv.Quote(id), v.Status)
	}
	return protocol.AppendResult(nil, msg.ID, json.RawMessage(`{}`)) // tasks/cancel of an ended task
}

// forgetTask drops a task whose ttl has passed.
func (g *Gateway) forgetTask(id string) {
	g.mu.Lock()
	delete(g.tasks, id)
	g.mu.Unlock()
}

func (g *Gateway) taskAfter() time.Duration {
	if g.opts.TaskAfter > 0 {
		return g.opts.TaskAfter
	}
	return DefaultTaskAfter
}

func (g *Gateway) taskTTL() time.Duration {
	if g.opts.TaskTTL > 0 {
		return g.opts.TaskTTL
	}
	return DefaultTaskTTL
}
