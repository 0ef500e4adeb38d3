package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// wireClient speaks to a pipeServer one message at a time.
type wireClient struct {
	t    *testing.T
	send func(string)
	out  *bufio.Scanner
	id   int
}

type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

func newWireClient(t *testing.T, s *Server) (*wireClient, func()) {
	send, out, stop := pipeServer(t, s)
	return &wireClient{t: t, send: send, out: out}, stop
}

func (c *wireClient) next() wireMessage {
	c.t.Helper()
	if !c.out.Scan() {
		c.t.Fatalf("no output line: %v", c.out.Err())
	}
	var m wireMessage
	if err := json.Unmarshal(c.out.Bytes(), &m); err != nil {
		c.t.Fatalf("output %s: %v", c.out.Text(), err)
	}
	return m
}

// start sends a request and returns its id without waiting.
func (c *wireClient) start(method string, params any) string {
	c.t.Helper()
	c.id++
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(string(line))
	return fmt.Sprint(c.id)
}

// response reads the next line and checks it answers id.
func (c *wireClient) response(id string) wireMessage {
	c.t.Helper()
	m := c.next()
	if string(m.ID) != id || m.Method != "" {
		c.t.Fatalf("got %s, want the response to %s", c.out.Text(), id)
	}
	return m
}

// call sends a request and decodes its result into v; it returns the
// JSON-RPC error, if any.
func (c *wireClient) call(method string, params any, v any) *Error {
	c.t.Helper()
	m := c.response(c.start(method, params))
	if m.Error != nil {
		return m.Error
	}
	if v != nil {
		if err := json.Unmarshal(m.Result, v); err != nil {
			c.t.Fatalf("%s result %s: %v", method, m.Result, err)
		}
	}
	return nil
}

func (c *wireClient) mustCall(method string, params any, v any) {
	c.t.Helper()
	if e := c.call(method, params, v); e != nil {
		c.t.Fatalf("%s: %v", method, e)
	}
}

func (c *wireClient) wantError(method string, params any, code int) *Error {
	c.t.Helper()
	e := c.call(method, params, nil)
	if e == nil || e.Code != code {
		c.t.Fatalf("%s %v: error %v, want code %d", method, params, e, code)
	}
	return e
}

// createTask calls tool as a task and returns the task.
func (c *wireClient) createTask(tool string, args any, task map[string]any) Task {
	c.t.Helper()
	var res CreateTaskResult
	c.mustCall("tools/call", map[string]any{"name": tool, "arguments": args, "task": task}, &res)
	return res.Task
}

func (c *wireClient) taskStatus(id string) Task {
	c.t.Helper()
	var task Task
	c.mustCall("tasks/get", map[string]any{"taskId": id}, &task)
	return task
}

type wireResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool            `json:"isError"`
	Meta    json.RawMessage `json:"_meta"`
}

func (r wireResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "|")
}

func relatedMeta(id string) string {
	return `{"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}`
}

var taskIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestTaskLifecycle(t *testing.T) {
	s := New(Options{Tasks: true, TaskPollInterval: 250 * time.Millisecond})
	release := make(chan struct{})
	stopped := make(chan struct{})
	s.AddTool(Tool{Name: "job", TaskSupport: TaskSupportOptional, Handler: func(ctx context.Context, call *ToolCall) (*CallToolResult, error) {
		var args struct{ Fail, RPC bool }
		_ = json.Unmarshal(call.Arguments, &args)
		switch {
		case args.Fail:
			return ErrorResult("job failed"), nil
		case args.RPC:
			return nil, &Error{Code: -32001, Message: "job refused", Data: map[string]any{"why": "test"}}
		}
		select {
		case <-release:
			return TextResult("job done"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}})
	s.AddTool(Tool{Name: "blocker", TaskSupport: TaskSupportRequired, Handler: func(ctx context.Context, _ *ToolCall) (*CallToolResult, error) {
		<-ctx.Done()
		close(stopped)
		return nil, ctx.Err()
	}})
	s.AddTool(Tool{Name: "plain", Handler: func(context.Context, *ToolCall) (*CallToolResult, error) {
		return TextResult("plain"), nil
	}})
	c, stop := newWireClient(t, s)
	defer stop()

	var init struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	c.mustCall("initialize", map[string]any{"protocolVersion": "2025-11-25"}, &init)
	if got, want := string(init.Capabilities["tasks"]), `{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}`; got != want {
		t.Errorf("capabilities.tasks = %s, want %s", got, want)
	}
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	c.mustCall("tools/list", nil, &list)
	var listed []string
	for _, tl := range list.Tools {
		listed = append(listed, string(tl))
	}
	wantListed := []string{
		`{"name":"job","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}`,
		`{"name":"blocker","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`,
		`{"name":"plain","inputSchema":{"type":"object"}}`,
	}
	if diff := cmp.Diff(wantListed, listed); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}

	// Created at once, working; tasks/result blocks until the handler ends.
	job := c.createTask("job", nil, map[string]any{"ttl": 5000})
	if !taskIDPattern.MatchString(job.TaskID) || job.Status != TaskWorking || job.TTL == nil || *job.TTL != 5000 ||
		job.PollInterval == nil || *job.PollInterval != 250 || job.CreatedAt != job.LastUpdatedAt {
		t.Errorf("created task = %+v", job)
	}
	if _, err := time.Parse(time.RFC3339, job.CreatedAt); err != nil {
		t.Errorf("createdAt: %v", err)
	}
	if got := c.taskStatus(job.TaskID); got.Status != TaskWorking {
		t.Errorf("tasks/get = %+v, want working", got)
	}
	resultID := c.start("tasks/result", map[string]any{"taskId": job.TaskID})
	close(release)
	var res wireResult
	if m := c.response(resultID); m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
		t.Fatalf("tasks/result = %s", c.out.Text())
	}
	if res.text() != "job done" || res.IsError || string(res.Meta) != relatedMeta(job.TaskID) {
		t.Errorf("tasks/result = %+v", res)
	}
	if got := c.taskStatus(job.TaskID); got.Status != TaskCompleted {
		t.Errorf("after the result, tasks/get = %+v", got)
	}
	c.wantError("tasks/cancel", map[string]any{"taskId": job.TaskID}, CodeInvalidParams)

	// An isError result fails the task; tasks/result returns the result.
	failed := c.createTask("job", map[string]any{"fail": true}, map[string]any{})
	if failed.TTL == nil || *failed.TTL != DefaultTaskTTL.Milliseconds() {
		t.Errorf("default ttl = %v, want %d", failed.TTL, DefaultTaskTTL.Milliseconds())
	}
	res = wireResult{}
	c.mustCall("tasks/result", map[string]any{"taskId": failed.TaskID}, &res)
	if !res.IsError || res.text() != "job failed" || string(res.Meta) != relatedMeta(failed.TaskID) {
		t.Errorf("failed task result = %+v", res)
	}
	if got := c.taskStatus(failed.TaskID); got.Status != TaskFailed || got.StatusMessage != "job failed" {
		t.Errorf("failed task = %+v", got)
	}

	// A JSON-RPC error is what tasks/result answers, as the call would have.
	refused := c.createTask("job", map[string]any{"rpc": true}, map[string]any{})
	e := c.wantError("tasks/result", map[string]any{"taskId": refused.TaskID}, -32001)
	if e.Message != "job refused" || fmt.Sprint(e.Data) != "map[why:test]" {
		t.Errorf("tasks/result error = %+v", e)
	}
	if got := c.taskStatus(refused.TaskID); got.Status != TaskFailed {
		t.Errorf("refused task = %+v", got)
	}

	// Required without a task, forbidden with one: -32601.
	c.wantError("tools/call", map[string]any{"name": "blocker"}, CodeMethodNotFound)
	c.wantError("tools/call", map[string]any{"name": "plain", "task": map[string]any{}}, CodeMethodNotFound)
	c.wantError("tools/call", map[string]any{"name": "job", "task": 5}, CodeInvalidParams)
	var plain wireResult
	c.mustCall("tools/call", map[string]any{"name": "job", "arguments": map[string]any{"fail": true}}, &plain)
	if !plain.IsError || plain.Meta != nil {
		t.Errorf("job without a task = %+v", plain)
	}

	// Cancel stops the handler; the task stays cancelled.
	blocker := c.createTask("blocker", nil, map[string]any{"ttl": 60000})
	var cancelled Task
	c.mustCall("tasks/cancel", map[string]any{"taskId": blocker.TaskID}, &cancelled)
	if cancelled.Status != TaskCancelled || cancelled.TaskID != blocker.TaskID {
		t.Errorf("tasks/cancel = %+v", cancelled)
	}
	<-stopped
	if got := c.taskStatus(blocker.TaskID); got.Status != TaskCancelled {
		t.Errorf("after cancel, tasks/get = %+v", got)
	}
	c.wantError("tasks/cancel", map[string]any{"taskId": blocker.TaskID}, CodeInvalidParams)
	c.wantError("tasks/result", map[string]any{"taskId": blocker.TaskID}, CodeInternalError)

	var all ListTasksResult
	c.mustCall("tasks/list", nil, &all)
	var ids []string
	for _, task := range all.Tasks {
		ids = append(ids, task.TaskID)
	}
	want := []string{job.TaskID, failed.TaskID, refused.TaskID, blocker.TaskID}
	if !slices.Equal(slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(want))) || all.NextCursor != "" {
		t.Errorf("tasks/list = %v, want %v", ids, want)
	}
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		c.wantError(method, map[string]any{"taskId": "nope"}, CodeInvalidParams)
		c.wantError(method, map[string]any{}, CodeInvalidParams)
	}
}

func TestTaskExpiry(t *testing.T) {
	s := New(Options{Tasks: true})
	stopped := make(chan struct{})
	s.AddTool(Tool{Name: "blocker", TaskSupport: TaskSupportRequired, Handler: func(ctx context.Context, _ *ToolCall) (*CallToolResult, error) {
		<-ctx.Done()
		close(stopped)
		return nil, ctx.Err()
	}})
	c, stop := newWireClient(t, s)
	defer stop()
	task := c.createTask("blocker", nil, map[string]any{"ttl": 100})
	// tasks/result waits no longer than the ttl, then the task is gone.
	c.wantError("tasks/result", map[string]any{"taskId": task.TaskID}, CodeInvalidParams)
	<-stopped
	c.wantError("tasks/get", map[string]any{"taskId": task.TaskID}, CodeInvalidParams)
}

func TestTasksDisabled(t *testing.T) {
	s := New(Options{})
	s.AddTool(Tool{Name: "job", TaskSupport: TaskSupportOptional, Handler: func(context.Context, *ToolCall) (*CallToolResult, error) {
		return TextResult("ran"), nil
	}})
	c, stop := newWireClient(t, s)
	defer stop()
	var init struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	c.mustCall("initialize", nil, &init)
	if _, ok := init.Capabilities["tasks"]; ok {
		t.Errorf("tasks declared without Options.Tasks: %v", init.Capabilities)
	}
	// Without the capability the "task" member is ignored.
	var res wireResult
	c.mustCall("tools/call", map[string]any{"name": "job", "task": map[string]any{}}, &res)
	if res.text() != "ran" {
		t.Errorf("job = %+v", res)
	}
	c.wantError("tasks/get", map[string]any{"taskId": "x"}, CodeMethodNotFound)
	c.wantError("tasks/list", nil, CodeMethodNotFound)
}

func TestProgress(t *testing.T) {
	s := New(Options{Tasks: true})
	steps := func(_ context.Context, call *ToolCall) (*CallToolResult, error) {
		total := 3.0
		for i := 1; i <= 3; i++ {
			if err := call.Progress(float64(i), &total, fmt.Sprintf("step %d", i)); err != nil {
				return nil, err
			}
		}
		if err := call.Progress(3.5, nil, ""); err != nil {
			return nil, err
		}
		return TextResult("stepped"), nil
	}
	s.AddTool(Tool{Name: "steps", TaskSupport: TaskSupportOptional, Handler: steps})
	c, stop := newWireClient(t, s)
	defer stop()

	for _, token := range []string{`"tok"`, `7`} {
		id := c.start("tools/call", map[string]any{"name": "steps", "_meta": map[string]any{"progressToken": json.RawMessage(token)}})
		var got []string
		for range 4 {
			m := c.next()
			if m.Method != "notifications/progress" {
				t.Fatalf("got %s, want a progress notification", c.out.Text())
			}
			got = append(got, string(m.Params))
		}
		want := []string{
			`{"progressToken":` + token + `,"progress":1,"total":3,"message":"step 1"}`,
			`{"progressToken":` + token + `,"progress":2,"total":3,"message":"step 2"}`,
			`{"progressToken":` + token + `,"progress":3,"total":3,"message":"step 3"}`,
			`{"progressToken":` + token + `,"progress":3.5}`,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("progress with token %s (-want +got):\n%s", token, diff)
		}
		if m := c.response(id); m.Error != nil {
			t.Errorf("steps: %v", m.Error)
		}
	}

	// Without a token, nothing but the response.
	for _, meta := range []any{nil, map[string]any{}, map[string]any{"progressToken": nil}} {
		params := map[string]any{"name": "steps"}
		if meta != nil {
			params["_meta"] = meta
		}
		c.response(c.start("tools/call", params))
	}

	// In a task, the token stays valid and the notifications name the task.
	id := c.start("tools/call", map[string]any{"name": "steps", "task": map[string]any{}, "_meta": map[string]any{"progressToken": "t"}})
	var task Task
	var progress []string
	for task.TaskID == "" || len(progress) < 4 {
		m := c.next()
		switch {
		case m.Method == "notifications/progress":
			progress = append(progress, string(m.Params))
		case string(m.ID) == id:
			var res CreateTaskResult
			if err := json.Unmarshal(m.Result, &res); err != nil {
				t.Fatal(err)
			}
			task = res.Task
		default:
			t.Fatalf("unexpected %s", c.out.Text())
		}
	}
	if want := `{"progressToken":"t","progress":1,"total":3,"message":"step 1","_meta":` + relatedMeta(task.TaskID) + `}`; progress[0] != want {
		t.Errorf("task progress = %s, want %s", progress[0], want)
	}
	var res wireResult
	c.mustCall("tasks/result", map[string]any{"taskId": task.TaskID}, &res)
	if res.text() != "stepped" {
		t.Errorf("task result = %+v", res)
	}
}

func TestToolCallRequestInTask(t *testing.T) {
	s := New(Options{Tasks: true})
	s.AddTool(Tool{Name: "asker", TaskSupport: TaskSupportOptional, Handler: func(ctx context.Context, call *ToolCall) (*CallToolResult, error) {
		res, err := call.Call(ctx, "elicitation/create", map[string]any{"message": "name?", "_meta": map[string]any{"k": 1}})
		if err != nil {
			return nil, err
		}
		return TextResult(string(res)), nil
	}})
	c, stop := newWireClient(t, s)
	defer stop()

	// Outside a task: the params go out as given.
	id := c.start("tools/call", map[string]any{"name": "asker"})
	req := c.next()
	if req.Method != "elicitation/create" || string(req.Params) != `{"_meta":{"k":1},"message":"name?"}` {
		t.Fatalf("server request = %s", c.out.Text())
	}
	c.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"decline"}}`)
	if m := c.response(id); !strings.Contains(string(m.Result), `{\"action\":\"decline\"}`) {
		t.Errorf("asker = %s", m.Result)
	}

	// In a task: tagged with the task, which is input_required meanwhile.
	// The request may come before or after the CreateTaskResult.
	id = c.start("tools/call", map[string]any{"name": "asker", "task": map[string]any{}})
	var task Task
	req = wireMessage{}
	for task.TaskID == "" || req.Method == "" {
		m := c.next()
		switch {
		case m.Method == "elicitation/create":
			req = m
		case string(m.ID) == id:
			var res CreateTaskResult
			if err := json.Unmarshal(m.Result, &res); err != nil {
				t.Fatal(err)
			}
			task = res.Task
		default:
			t.Fatalf("unexpected %s", c.out.Text())
		}
	}
	want := `{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + task.TaskID + `"},"k":1},"message":"name?"}`
	if string(req.Params) != want {
		t.Errorf("task's request params = %s, want %s", req.Params, want)
	}
	if got := c.taskStatus(task.TaskID); got.Status != TaskInputRequired {
		t.Errorf("while asking, tasks/get = %+v", got)
	}
	c.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{"name":"x"}}}`)
	var res wireResult
	c.mustCall("tasks/result", map[string]any{"taskId": task.TaskID}, &res)
	if res.text() != `{"action":"accept","content":{"name":"x"}}` {
		t.Errorf("task result = %+v", res)
	}
	if got := c.taskStatus(task.TaskID); got.Status != TaskCompleted {
		t.Errorf("after the answer, tasks/get = %+v", got)
	}
}

func readTaskState(t *testing.T, dir, id string) taskFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f taskFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return f
}

func TestTaskStateResume(t *testing.T) {
	dir := t.TempDir()
	tools := func(s *Server, wake ToolHandler) {
		s.AddTool(Tool{Name: "wake", TaskSupport: TaskSupportRequired, Resumable: true, Handler: wake})
		s.AddTool(Tool{Name: "stuck", TaskSupport: TaskSupportRequired, Handler: func(ctx context.Context, _ *ToolCall) (*CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}})
		s.AddTool(Tool{Name: "quick", TaskSupport: TaskSupportOptional, Handler: func(context.Context, *ToolCall) (*CallToolResult, error) {
			return TextResult("quick"), nil
		}})
	}

	// The first process: wake and stuck are still working when it ends.
	first := New(Options{Tasks: true, TaskStateDir: dir})
	started := make(chan struct{}, 1)
	tools(first, func(ctx context.Context, _ *ToolCall) (*CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	c, stop := newWireClient(t, first)
	wake := c.createTask("wake", map[string]any{"n": 1}, map[string]any{"ttl": 60000})
	<-started
	stuck := c.createTask("stuck", nil, map[string]any{})
	quick := c.createTask("quick", nil, map[string]any{})
	c.mustCall("tasks/result", map[string]any{"taskId": quick.TaskID}, nil)
	stop()

	f := readTaskState(t, dir, wake.TaskID)
	if f.Status != TaskWorking || f.Tool != "wake" || string(f.Arguments) != `{"n":1}` || f.CreatedAt != wake.CreatedAt || *f.TTL != 60000 {
		t.Errorf("wake's state after shutdown = %+v", f)
	}
	if f := readTaskState(t, dir, quick.TaskID); f.Status != TaskCompleted || f.Result == nil {
		t.Errorf("quick's state = %+v", f)
	}

	// The second process finds all three.
	second := New(Options{Tasks: true, TaskStateDir: dir})
	tools(second, func(_ context.Context, call *ToolCall) (*CallToolResult, error) {
		return TextResult(fmt.Sprintf("resumed %s %s %s", call.TaskID, call.TaskCreatedAt.Format(time.RFC3339Nano), call.Arguments)), nil
	})
	c, stop = newWireClient(t, second)
	defer stop()
	var res wireResult
	c.mustCall("tasks/result", map[string]any{"taskId": quick.TaskID}, &res)
	if res.text() != "quick" || string(res.Meta) != relatedMeta(quick.TaskID) {
		t.Errorf("quick's result after restart = %+v", res)
	}
	res = wireResult{}
	c.mustCall("tasks/result", map[string]any{"taskId": wake.TaskID}, &res)
	created, _ := time.Parse(time.RFC3339, wake.CreatedAt)
	if want := fmt.Sprintf("resumed %s %s {\"n\":1}", wake.TaskID, created.Format(time.RFC3339Nano)); res.text() != want {
		t.Errorf("wake's result after restart = %q, want %q", res.text(), want)
	}
	if got := c.taskStatus(wake.TaskID); got.Status != TaskCompleted || got.CreatedAt != wake.CreatedAt {
		t.Errorf("wake after restart = %+v (created %s)", got, wake.CreatedAt)
	}
	if got := c.taskStatus(stuck.TaskID); got.Status != TaskFailed || got.StatusMessage != "task interrupted by a server restart" {
		t.Errorf("stuck after restart = %+v", got)
	}
	var all ListTasksResult
	c.mustCall("tasks/list", nil, &all)
	if len(all.Tasks) != 3 {
		t.Errorf("tasks/list after restart = %+v", all.Tasks)
	}
	if f := readTaskState(t, dir, wake.TaskID); f.Status != TaskCompleted || f.Result == nil {
		t.Errorf("wake's state after completion = %+v", f)
	}
}

// With AdvisoryTaskSupport a tool that requires a task runs as called: the
// declaration is for a client in front that serves tasks of its own.
// Without it, such a call is refused.
func TestAdvisoryTaskSupport(t *testing.T) {
	for _, advisory := range []bool{false, true} {
		s := New(Options{AdvisoryTaskSupport: advisory})
		s.AddTool(Tool{Name: "job", TaskSupport: TaskSupportRequired, Handler: func(context.Context, *ToolCall) (*CallToolResult, error) {
			return TextResult("ran"), nil
		}})
		c, stop := newWireClient(t, s)
		if !advisory {
			c.wantError("tools/call", map[string]any{"name": "job"}, CodeMethodNotFound)
		} else {
			var res struct {
				Content []struct{ Text string } `json:"content"`
			}
			c.mustCall("tools/call", map[string]any{"name": "job"}, &res)
			if len(res.Content) != 1 || res.Content[0].Text != "ran" {
				t.Errorf("advisory: %+v", res)
			}
		}
		stop()
	}
}
