package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
)

// taskView is a task as tasks/get and CreateTaskResult give it.
type taskView struct {
	ResultType    string                     `json:"resultType"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	TTLMs         *int64                     `json:"ttlMs"`
	PollMs        *int64                     `json:"pollIntervalMs"`
	Result        *taskResult                `json:"result"`
	Error         *struct{ Code int64 }      `json:"error"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
}

// taskResult is a completed task's result: what the call would have
// answered, a 2026-07-28 result.
type taskResult struct {
	callResult
	ResultType string `json:"resultType"`
}

// pollTask polls task id with tasks/get as c until done holds, within
// waitFor: a client of the extension polls, at the interval it chooses.
func pollTask(t *testing.T, c *modernClient, id string, done func(taskView) bool) taskView {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		var v taskView
		c.send("tasks/get", `{"taskId":"`+id+`"}`, nil).result(t, &v)
		if done(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s", id, v.Status)
		}
		time.Sleep(20 * time.Millisecond) // polling is the protocol here
	}
}

// The gateway serves the tasks extension for the tools behind it (here a
// server that runs no tasks itself): a task for a tool that may run as
// one, its questions answered through tasks/update, its cancellation, and
// the refusals the extension asks for.
func TestModernGatewayTasks(t *testing.T) {
	noPrefix := false
	jobs := mcpvisor.ServerConfig{Name: "jobs", Type: "stdio", Command: bin.jobs, Enabled: true, Prefix: &noPrefix}
	_, url := modernGateway(t, gateway.Options{}, jobs)
	c := &modernClient{t: t, urls: []string{url}, caps: `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`}
	plain := &modernClient{t: t, urls: []string{url}, caps: `{"elicitation":{}}`}
	pollUntil := func(id string, done func(taskView) bool) taskView { t.Helper(); return pollTask(t, c, id, done) }

	// A sync-only tool answers as it is; a task-supporting one is a task.
	var greet struct {
		callResult
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	c.send("tools/call", `{"name":"greet","arguments":{"name":"Ada"}}`, nil).result(t, &greet)
	if greet.ResultType != "complete" || greet.TaskID != "" || greet.text() != "Hello, Ada!" {
		t.Fatalf("greet: %+v", greet)
	}
	var created taskView
	c.send("tools/call", `{"name":"slow_compute","arguments":{"seconds":0.2,"label":"x"}}`, nil).result(t, &created)
	if created.ResultType != "task" || created.TaskID == "" || created.Status != "working" || created.TTLMs == nil || created.PollMs == nil || created.Result != nil {
		t.Fatalf("CreateTaskResult: %+v", created)
	}
	done := pollUntil(created.TaskID, func(v taskView) bool { return v.Status != "working" })
	if done.Status != "completed" || done.Result == nil || done.Result.text() != "computed x after 0.2s" || done.ResultType != "complete" ||
		done.Result.ResultType != "complete" {
		t.Fatalf("finished task: %+v", done)
	}

	// A question of the call is the task's input request; tasks/update
	// answers it and the task completes.
	var asked taskView
	c.send("tools/call", `{"name":"confirm_delete","arguments":{}}`, nil).result(t, &asked)
	waiting := pollUntil(asked.TaskID, func(v taskView) bool { return v.Status == "input_required" })
	if len(waiting.InputRequests) != 1 {
		t.Fatalf("input_required task: %+v", waiting)
	}
	for key := range waiting.InputRequests {
		var ack map[string]json.RawMessage
		c.send("tasks/update", `{"taskId":"`+asked.TaskID+`","inputResponses":{"`+key+`":{"action":"accept","content":{"confirm":"yes"}}}}`, nil).result(t, &ack)
		if string(ack["resultType"]) != `"complete"` || ack["taskId"] != nil {
			t.Fatalf("tasks/update ack: %v", ack)
		}
	}
	answered := pollUntil(asked.TaskID, func(v taskView) bool { return v.Status == "completed" })
	if answered.Result.text() != "confirm: yes" {
		t.Fatalf("answered task: %+v", answered.Result)
	}

	// Cancelled while running: it settles as cancelled; a second cancel
	// is the same empty ack.
	var long taskView
	c.send("tools/call", `{"name":"slow_compute","arguments":{"seconds":60}}`, nil).result(t, &long)
	for range 2 {
		var ack map[string]json.RawMessage
		c.send("tasks/cancel", `{"taskId":"`+long.TaskID+`"}`, nil).result(t, &ack)
		if string(ack["resultType"]) != `"complete"` || ack["status"] != nil {
			t.Fatalf("tasks/cancel ack: %v", ack)
		}
	}
	if v := pollUntil(long.TaskID, func(v taskView) bool { return v.Status != "working" }); v.Status != "cancelled" {
		t.Fatalf("cancelled task: %+v", v)
	}

	// A protocol error fails the task; a tool error completes it.
	var perr taskView
	c.send("tools/call", `{"name":"protocol_error_job","arguments":{}}`, nil).result(t, &perr)
	if v := pollUntil(perr.TaskID, func(v taskView) bool { return v.Status != "working" }); v.Status != "failed" || v.Error == nil || v.Result != nil {
		t.Fatalf("protocol error task: %+v", v)
	}

	// Refusals: tasks/* without the extension, a required tool without it,
	// an unknown task.
	plain.send("tasks/get", `{"taskId":"`+created.TaskID+`"}`, nil).wantError(t, 400, -32021)
	plain.send("tools/call", `{"name":"failing_job","arguments":{}}`, nil).wantError(t, 400, -32021)
	c.send("tasks/get", `{"taskId":"no-such-task"}`, nil).wantError(t, 400, -32602)
	// Without the extension a task-supporting tool runs as a plain call.
	var syncRes struct {
		callResult
		TaskID string `json:"taskId"`
	}
	plain.send("tools/call", `{"name":"slow_compute","arguments":{"seconds":0,"label":"now"}}`, nil).result(t, &syncRes)
	if syncRes.TaskID != "" || syncRes.text() != "computed now after 0s" {
		t.Fatalf("slow_compute without the extension: %+v", syncRes)
	}
}

// A task is journaled when it is created and when it ends: after the
// gateway and its host restart on the same data directory, tasks/get
// answers an ended task as it ended, and one that was running as failed
// (its call was lost with the process).
func TestGatewayTasksSurviveRestart(t *testing.T) {
	noPrefix := false
	data := t.TempDir()
	open := func() (*mcpvisor.Host, *gateway.Gateway, string) {
		h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{
			Config:  &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{{Name: "jobs", Type: "stdio", Command: bin.jobs, Enabled: true, Prefix: &noPrefix}}},
			DataDir: data, Logger: slogDiscard(), AlwaysOn: []string{"jobs"},
			StopGrace: 500 * time.Millisecond, TermGrace: 500 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := h.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		g := gateway.New(h, gateway.Options{Logger: slogDiscard()})
		srv := httptest.NewServer(g.Handler())
		t.Cleanup(srv.Close)
		return h, g, srv.URL
	}
	caps := `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	h, g, url := open()
	c := &modernClient{t: t, urls: []string{url}, caps: caps}
	var quick, long taskView
	c.send("tools/call", `{"name":"slow_compute","arguments":{"seconds":0,"label":"before"}}`, nil).result(t, &quick)
	c.send("tools/call", `{"name":"slow_compute","arguments":{"seconds":600}}`, nil).result(t, &long)
	for {
		var v taskView
		c.send("tasks/get", `{"taskId":"`+quick.TaskID+`"}`, nil).result(t, &v)
		if v.Status == "completed" {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling is the protocol here
	}
	if err := g.Close(); err != nil { // journals the outcome of the quick one
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	h, g, url = open()
	t.Cleanup(func() { _ = g.Close(); _ = h.Close() })
	c = &modernClient{t: t, urls: []string{url}, caps: caps}
	var v taskView
	c.send("tasks/get", `{"taskId":"`+quick.TaskID+`"}`, nil).result(t, &v)
	if v.Status != "completed" || v.Result == nil || v.Result.text() != "computed before after 0s" || v.Result.ResultType != "complete" {
		t.Fatalf("the ended task after a restart: %+v", v)
	}
	c.send("tasks/get", `{"taskId":"`+long.TaskID+`"}`, nil).result(t, &v)
	if v.Status != "failed" || v.Error == nil {
		t.Fatalf("the running task after a restart: %+v", v)
	}
	c.send("tasks/update", `{"taskId":"`+long.TaskID+`","inputResponses":{}}`, nil).wantError(t, 400, -32602)
	c.send("tasks/get", `{"taskId":"never"}`, nil).wantError(t, 400, -32602)
}
