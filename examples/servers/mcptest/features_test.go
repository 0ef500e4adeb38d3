package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/stdiotest"
)

// answering starts a server whose client answers method with answer and
// records the params of each such request on the returned channel.
func answering(t *testing.T, method string, answer func(params json.RawMessage) (any, *stdiotest.Error), args ...string) (*stdiotest.Client, <-chan string) {
	t.Helper()
	seen := make(chan string, 16)
	c := stdiotest.Start(t, serverBin, stdiotest.Options{
		Args: args,
		OnRequest: func(m string, params json.RawMessage) (any, *stdiotest.Error) {
			if m != method {
				return nil, &stdiotest.Error{Code: -32601, Message: "Method not found"}
			}
			seen <- string(params)
			return answer(params)
		},
	})
	initialize(t, c, "2025-11-25")
	return c, seen
}

// rawCall calls tools/call with params as given and returns the response.
func rawCall(t *testing.T, c *stdiotest.Client, params map[string]any) *stdiotest.Message {
	t.Helper()
	m, err := c.Call(stdiotest.Context(t), "tools/call", params)
	if err != nil {
		t.Fatalf("tools/call %v: %v", params, err)
	}
	return m
}

func TestAsk(t *testing.T) {
	t.Parallel()
	c, seen := answering(t, "elicitation/create", func(params json.RawMessage) (any, *stdiotest.Error) {
		var p struct{ Message string }
		_ = json.Unmarshal(params, &p)
		switch p.Message {
		case "refuse":
			return nil, &stdiotest.Error{Code: -32602, Message: "mode not supported"}
		case "url please":
			return map[string]any{"action": "accept"}, nil
		}
		return json.RawMessage(`{"action":"accept","content":{"answer":"42","n":1.5,"tags":["a"]}}`), nil
	})

	res := callTool(t, c, "ask", map[string]any{"message": "What?"})
	if want := `{"action":"accept","content":{"answer":"42","n":1.5,"tags":["a"]}}`; string(res.StructuredContent) != want || res.text(t) != want {
		t.Errorf("ask = %s / %s, want %s", res.StructuredContent, res.text(t), want)
	}
	if got, want := <-seen, `{"message":"What?","requestedSchema":`+defaultAskSchema+`}`; got != want {
		t.Errorf("form request = %s, want %s", got, want)
	}

	schema := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "number", "default": 3}}}
	callTool(t, c, "ask", map[string]any{"schema": schema})
	if got, want := <-seen, `{"message":"mcptest asks","requestedSchema":{"properties":{"n":{"default":3,"type":"number"}},"type":"object"}}`; got != want {
		t.Errorf("form request with a schema = %s, want %s", got, want)
	}

	res = callTool(t, c, "ask", map[string]any{"mode": "url", "message": "url please", "url": "https://example.com/x?a=1&b=2"})
	if string(res.StructuredContent) != `{"action":"accept"}` {
		t.Errorf("url ask = %s", res.StructuredContent)
	}
	var url struct {
		Mode, Message, URL, ElicitationID string
	}
	if err := json.Unmarshal([]byte(<-seen), &url); err != nil {
		t.Fatal(err)
	}
	if url.Mode != "url" || url.Message != "url please" || url.URL != "https://example.com/x?a=1&b=2" || !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(url.ElicitationID) {
		t.Errorf("url request = %+v", url)
	}

	res = callTool(t, c, "ask", map[string]any{"message": "refuse"})
	if !res.IsError || res.text(t) != "elicitation/create: jsonrpc error -32602: mode not supported" {
		t.Errorf("refused ask = %+v", res)
	}
	if res := callTool(t, c, "ask", map[string]any{"mode": "url"}); !res.IsError {
		t.Errorf("url ask without a url = %+v", res)
	}
}

func TestLogin(t *testing.T) {
	t.Parallel()
	const password = "correct horse battery staple"
	sum := sha256.Sum256([]byte(password))
	good := hex.EncodeToString(sum[:])
	answers := make(chan any, 8)
	c, seen := answering(t, "elicitation/create", func(json.RawMessage) (any, *stdiotest.Error) {
		a := <-answers
		if e, ok := a.(*stdiotest.Error); ok {
			return nil, e
		}
		return a, nil
	})
	accept := func(pw string) any {
		return map[string]any{"action": "accept", "content": map[string]any{"password": pw}}
	}
	tests := []struct {
		name   string
		answer any
		expect string
		want   string
		isErr  bool
	}{
		{"right password", accept(password), good, "login ok", false},
		{"upper-case hash", accept(password), strings.ToUpper(good), "login ok", false},
		{"wrong password", accept(password + "!"), good, "login failed", false},
		{"no password", map[string]any{"action": "accept", "content": map[string]any{}}, good, "login failed", false},
		{"declined", map[string]any{"action": "decline"}, good, "login declined", false},
		{"cancelled", map[string]any{"action": "cancel"}, good, "login cancelled", false},
		{"client error", &stdiotest.Error{Code: -32601, Message: "Method not found"}, good, "elicitation/create: jsonrpc error -32601: Method not found", true},
	}
	for _, tc := range tests {
		answers <- tc.answer
		res := callTool(t, c, "login", map[string]any{"expect_sha256": tc.expect})
		if res.text(t) != tc.want || res.IsError != tc.isErr {
			t.Errorf("%s: login = %+v, want %q", tc.name, res, tc.want)
		}
		if got, want := <-seen, `{"message":"Password for mcptest","requestedSchema":`+loginSchema+`}`; got != want {
			t.Errorf("%s: request = %s, want %s", tc.name, got, want)
		}
	}
	c.CloseStdin()
	if code := exitCode(t, c); code != 0 {
		t.Errorf("exit code %d", code)
	}
	for {
		line, err := c.NextStderr(stdiotest.Context(t))
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "horse") {
			t.Errorf("the password reached stderr: %q", line)
		}
	}
}

// progressNotes reads n notifications/progress params.
func progressNotes(t *testing.T, c *stdiotest.Client, n int) []string {
	t.Helper()
	var got []string
	for range n {
		m, err := c.NextInbound(stdiotest.Context(t))
		if err != nil || m.Method != "notifications/progress" {
			t.Fatalf("got %v %v, want notifications/progress", m, err)
		}
		got = append(got, string(m.Params))
	}
	return got
}

func TestProgressTool(t *testing.T) {
	t.Parallel()
	c := start(t)
	initialize(t, c, "2025-11-25")
	m := rawCall(t, c, map[string]any{"name": "progress", "arguments": map[string]any{"steps": 3, "delay_ms": 1}, "_meta": map[string]any{"progressToken": "p-1"}})
	if m.Error != nil || !strings.Contains(string(m.Result), `"text":"done after 3 steps"`) {
		t.Fatalf("progress = %s", m.Raw)
	}
	want := []string{
		`{"progressToken":"p-1","progress":1,"total":3,"message":"step 1 of 3"}`,
		`{"progressToken":"p-1","progress":2,"total":3,"message":"step 2 of 3"}`,
		`{"progressToken":"p-1","progress":3,"total":3,"message":"step 3 of 3"}`,
	}
	if diff := cmp.Diff(want, progressNotes(t, c, 3)); diff != "" {
		t.Errorf("progress notifications (-want +got):\n%s", diff)
	}

	// Without a token: no notifications, so notify's come next.
	if got := callTool(t, c, "progress", map[string]any{"steps": 2}).text(t); got != "done after 2 steps" {
		t.Errorf("progress without a token = %q", got)
	}
	callTool(t, c, "notify", nil)
	if m, err := c.NextInbound(stdiotest.Context(t)); err != nil || m.Method != "notifications/message" {
		t.Errorf("after progress without a token: %v %v, want notify's notifications/message", m, err)
	}
}

func TestNeedURL(t *testing.T) {
	t.Parallel()
	c := start(t)
	initialize(t, c, "2025-11-25")
	m := rawCall(t, c, callParams("need_url", nil))
	if m.Error == nil || m.Error.Code != -32042 {
		t.Fatalf("need_url = %s", m.Raw)
	}
	if want := `{"elicitations":[{"elicitationId":"el-1","message":"Authorize mcptest","mode":"url","url":"https://example.com/authorize?x=1"}]}`; string(m.Error.Data) != want {
		t.Errorf("need_url data = %s, want %s", m.Error.Data, want)
	}
}

func TestSample(t *testing.T) {
	t.Parallel()
	c, seen := answering(t, "sampling/createMessage", func(json.RawMessage) (any, *stdiotest.Error) {
		return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "hi there"}, "model": "test-model", "stopReason": "endTurn"}, nil
	})
	res := callTool(t, c, "sample", map[string]any{"prompt": "say hi"})
	if res.text(t) != "hi there" || string(res.StructuredContent) != `{"model":"test-model","text":"hi there"}` {
		t.Errorf("sample = %+v / %s", res, res.StructuredContent)
	}
	if got, want := <-seen, `{"maxTokens":50,"messages":[{"content":{"text":"say hi","type":"text"},"role":"user"}]}`; got != want {
		t.Errorf("sampling request = %s, want %s", got, want)
	}

	refuser := start(t) // the default client answers -32601
	initialize(t, refuser, "2025-11-25")
	res = callTool(t, refuser, "sample", map[string]any{"prompt": "x"})
	if !res.IsError || res.text(t) != "sampling/createMessage: jsonrpc error -32601: Method not found" {
		t.Errorf("refused sample = %+v", res)
	}
}

func TestRoots(t *testing.T) {
	t.Parallel()
	c, _ := answering(t, "roots/list", func(json.RawMessage) (any, *stdiotest.Error) {
		return map[string]any{"roots": []any{map[string]any{"uri": "file:///work", "name": "work"}}}, nil
	})
	if got, want := string(callTool(t, c, "roots", nil).StructuredContent), `{"roots":[{"name":"work","uri":"file:///work"}]}`; got != want {
		t.Errorf("roots = %s, want %s", got, want)
	}
	refuser, _ := answering(t, "none", nil)
	if res := callTool(t, refuser, "roots", nil); !res.IsError || res.text(t) != "roots/list: jsonrpc error -32601: Method not found" {
		t.Errorf("refused roots = %+v", res)
	}
}

type wireTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  *int64 `json:"pollInterval"`
}

func createSleepTask(t *testing.T, c *stdiotest.Client, args, task map[string]any) wireTask {
	t.Helper()
	m := rawCall(t, c, map[string]any{"name": "sleep_task", "arguments": args, "task": task})
	var res struct{ Task wireTask }
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.Task.TaskID == "" {
		t.Fatalf("sleep_task as a task = %s", m.Raw)
	}
	return res.Task
}

func taskCall(t *testing.T, c *stdiotest.Client, method, id string) *stdiotest.Message {
	t.Helper()
	m, err := c.Call(stdiotest.Context(t), method, map[string]any{"taskId": id})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return m
}

func getTask(t *testing.T, c *stdiotest.Client, id string) wireTask {
	t.Helper()
	m := taskCall(t, c, "tasks/get", id)
	var task wireTask
	if m.Error != nil || json.Unmarshal(m.Result, &task) != nil {
		t.Fatalf("tasks/get = %s", m.Raw)
	}
	return task
}

type taskResultMsg struct {
	Content []stdiotest.Content `json:"content"`
	IsError bool                `json:"isError"`
	Meta    json.RawMessage     `json:"_meta"`
}

func taskResult(t *testing.T, c *stdiotest.Client, id string) taskResultMsg {
	t.Helper()
	m := taskCall(t, c, "tasks/result", id)
	var res taskResultMsg
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || len(res.Content) != 1 {
		t.Fatalf("tasks/result = %s", m.Raw)
	}
	if want := `{"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}`; string(res.Meta) != want {
		t.Errorf("tasks/result _meta = %s, want %s", res.Meta, want)
	}
	return res
}

func TestSleepTask(t *testing.T) {
	t.Parallel()
	c := start(t)
	initialize(t, c, "2025-11-25")
	m, err := c.Call(stdiotest.Context(t), "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Result), `"name":"sleep_task",`) || !strings.Contains(string(m.Result), `"execution":{"taskSupport":"required"}`) {
		t.Errorf("sleep_task's listing lacks execution.taskSupport required: %s", m.Result)
	}
	if m := rawCall(t, c, callParams("sleep_task", map[string]any{"ms": 1})); m.Error == nil || m.Error.Code != -32601 {
		t.Errorf("sleep_task without a task = %s, want -32601", m.Raw)
	}

	task := createSleepTask(t, c, map[string]any{"ms": 50}, map[string]any{"ttl": 5000})
	if task.Status != "working" || *task.TTL != 5000 || *task.PollInterval != 500 || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(task.TaskID) {
		t.Errorf("created task = %+v", task)
	}
	created, err := time.Parse(time.RFC3339, task.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	if res := taskResult(t, c, task.TaskID); res.IsError || res.Content[0].Text != "slept 50 ms" {
		t.Errorf("tasks/result = %+v", res)
	}
	if waited := time.Since(created); waited < 50*time.Millisecond {
		t.Errorf("result after %v, before the 50 ms were up", waited)
	}
	if got := getTask(t, c, task.TaskID); got.Status != "completed" {
		t.Errorf("tasks/get after the result = %+v", got)
	}

	failing := createSleepTask(t, c, map[string]any{"ms": 0, "fail": true}, map[string]any{})
	if *failing.TTL != 60000 {
		t.Errorf("default ttl = %d, want 60000", *failing.TTL)
	}
	if res := taskResult(t, c, failing.TaskID); !res.IsError || res.Content[0].Text != "failed on purpose" {
		t.Errorf("failing tasks/result = %+v", res)
	}
	if got := getTask(t, c, failing.TaskID); got.Status != "failed" || got.StatusMessage != "failed on purpose" {
		t.Errorf("failing task = %+v", got)
	}

	long := createSleepTask(t, c, map[string]any{"ms": 60000}, map[string]any{})
	m = taskCall(t, c, "tasks/cancel", long.TaskID)
	var cancelled wireTask
	if m.Error != nil || json.Unmarshal(m.Result, &cancelled) != nil || cancelled.Status != "cancelled" {
		t.Errorf("tasks/cancel = %s", m.Raw)
	}
	if m := taskCall(t, c, "tasks/cancel", long.TaskID); m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("second tasks/cancel = %s, want -32602", m.Raw)
	}
	if m := taskCall(t, c, "tasks/get", "no-such-task"); m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("tasks/get of an unknown task = %s, want -32602", m.Raw)
	}
	m, err = c.Call(stdiotest.Context(t), "tasks/list", nil)
	var list struct{ Tasks []wireTask }
	if err != nil || json.Unmarshal(m.Result, &list) != nil || len(list.Tasks) != 3 {
		t.Errorf("tasks/list = %v %v", m, err)
	}
}

func TestTasksOff(t *testing.T) {
	t.Parallel()
	c := start(t, "-tasks=false")
	if res := initialize(t, c, "2025-11-25"); res.Capabilities.Tasks != nil {
		t.Errorf("capabilities.tasks = %s with -tasks=false", res.Capabilities.Tasks)
	}
	if m := taskCall(t, c, "tasks/get", "x"); m.Error == nil || m.Error.Code != -32601 {
		t.Errorf("tasks/get = %s, want -32601", m.Raw)
	}
	m := rawCall(t, c, map[string]any{"name": "sleep_task", "arguments": map[string]any{"ms": 1}, "task": map[string]any{}})
	if m.Error == nil || m.Error.Code != -32601 {
		t.Errorf("sleep_task = %s, want -32601 (no task support declared)", m.Raw)
	}
}

func TestTaskStateRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := start(t, "-task-state", dir)
	initialize(t, first, "2025-11-25")
	quick := createSleepTask(t, first, map[string]any{"ms": 0}, map[string]any{})
	taskResult(t, first, quick.TaskID)
	const ms = 2000
	slow := createSleepTask(t, first, map[string]any{"ms": ms}, map[string]any{})
	failing := createSleepTask(t, first, map[string]any{"ms": ms, "fail": true}, map[string]any{})
	if err := first.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait(stdiotest.Context(t))

	b, err := os.ReadFile(filepath.Join(dir, slow.TaskID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Status, Tool, CreatedAt string
		Arguments               json.RawMessage
	}
	if err := json.Unmarshal(b, &state); err != nil || state.Status != "working" || state.Tool != "sleep_task" || state.CreatedAt != slow.CreatedAt || string(state.Arguments) != `{"ms":2000}` {
		t.Errorf("state file of the killed task: %s (%v)", b, err)
	}

	second := start(t, "-task-state", dir)
	initialize(t, second, "2025-11-25")
	if got := getTask(t, second, quick.TaskID); got.Status != "completed" || got.CreatedAt != quick.CreatedAt {
		t.Errorf("the finished task after a restart = %+v", got)
	}
	if res := taskResult(t, second, quick.TaskID); res.Content[0].Text != "slept 0 ms" {
		t.Errorf("the finished task's result after a restart = %+v", res)
	}
	if res := taskResult(t, second, slow.TaskID); res.IsError || res.Content[0].Text != "slept 2000 ms" {
		t.Errorf("the resumed task's result = %+v", res)
	}
	created, _ := time.Parse(time.RFC3339, slow.CreatedAt)
	if waited := time.Since(created); waited < ms*time.Millisecond {
		t.Errorf("resumed task ended %v after creation, before its %d ms", waited, ms)
	}
	if res := taskResult(t, second, failing.TaskID); !res.IsError || res.Content[0].Text != "failed on purpose" {
		t.Errorf("the resumed failing task's result = %+v", res)
	}
	if got := getTask(t, second, slow.TaskID); got.Status != "completed" || got.CreatedAt != slow.CreatedAt {
		t.Errorf("the resumed task = %+v", got)
	}
}

func TestMetaTool(t *testing.T) {
	t.Parallel()
	c := start(t)
	initialize(t, c, "2025-11-25")
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	m := rawCall(t, c, map[string]any{"name": "meta", "arguments": map[string]any{"x": 1}, "_meta": map[string]any{"traceparent": tp}})
	var res toolResult
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
		t.Fatalf("meta = %s", m.Raw)
	}
	if got, want := res.text(t), `{"traceparent":"`+tp+`"}`; got != want {
		t.Errorf("meta = %s, want %s", got, want)
	}
	if got := callTool(t, c, "meta", nil).text(t); got != "{}" {
		t.Errorf("meta without _meta = %s, want {}", got)
	}
}
