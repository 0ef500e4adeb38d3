package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// extTasksStep is a call's line of testdata/ext-tasks-client.mjs.
type extTasksStep struct {
	Kind    string `json:"kind"` // ext-tasks' execution: "task" or "immediate"
	TaskID  string `json:"taskId"`
	Outcome string `json:"outcome"` // its settled outcome's status
	// AfterCancel is the task's status in a tasks/get after its
	// execution was cancelled and settled.
	AfterCancel string `json:"afterCancel"`
	IsError     bool   `json:"isError"`
	Text        string `json:"text"`
	Rejected    *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"rejected"`
	LastTask *struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	} `json:"lastTask"`
	Asked []struct {
		Message  string   `json:"message"`
		Fields   []string `json:"fields"`
		Scope    string   `json:"scope"`
		Delivery string   `json:"delivery"`
		TaskID   *string  `json:"taskId"`
	} `json:"asked"`
	Raw    []extTasksWire `json:"raw"`
	Errors []string       `json:"errors"`
}

// extTasksWire is a message of the extension's requests (rawDispatch):
// one it sent ("out") or the response it got ("in").
type extTasksWire struct {
	Dir               string   `json:"dir"`
	Method            string   `json:"method"`
	Name              string   `json:"name"`
	TaskID            string   `json:"taskId"`
	InputResponses    []string `json:"inputResponses"`
	RequestState      bool     `json:"requestState"`
	DeclaresTasks     bool     `json:"declaresTasks"`
	ResultType        *string  `json:"resultType"`
	Status            *string  `json:"status"`
	InputRequests     []string `json:"inputRequests"`
	Inlined           bool     `json:"inlined"`
	InlinedResultType *string  `json:"inlinedResultType"`
	Error             *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestExtTasks has the official client of the tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663), @modelcontextprotocol/ext-tasks
// on the TypeScript SDK's v2 client pinned to 2026-07-28, call tools of
// examples/servers/jobs through `mcpvisor serve`: slow_compute, a task
// that completes with its result; confirm_delete and multi_input, tasks
// whose questions (one, then two at once) the client reads in tasks/get
// and answers with tasks/update; and test_tool_with_task, which requires a
// task and asks its first question in the call itself (an input_required
// round) before the task exists; and slow_compute again, for half a
// minute, cancelled with tasks/cancel once it is a task. Each call asks
// ext-tasks to require a task, and the wire shows one: a CreateTaskResult,
// then tasks/get polls. Once serve has stopped, the journal holds each
// task as it ended.
func TestExtTasks(t *testing.T) {
	node, client, extTasks := peers.ExtTasks(t)
	jobs := filepath.Join(t.TempDir(), "jobs")
	if out, err := exec.Command("go", "build", "-o", jobs, "github.com/mcpvisor/mcpvisor/examples/servers/jobs").CombinedOutput(); err != nil {
		t.Fatalf("building examples/servers/jobs: %v\n%s", err, out)
	}
	// As the conformance fixture runs it: its tools under their own names.
	cfg := writeConfig(t, `{"mcpServers":{"jobs":{"command":"`+jobs+`","prefix":false}}}`)
	data := t.TempDir()
	s := startServe(t, "--config", cfg, "--data", data)
	token := s.token(t)
	waitListed(t, s, token, "test_tool_with_task")

	type call struct {
		step, tool string
		args       map[string]any
		text       string   // the result's text
		asked      []string // the fields of the questions, in any order
		inCall     bool     // asked in the call itself, before the task
		cancel     bool     // cancelled once it is a task
	}
	calls := []call{
		{step: "slow", tool: "slow_compute", args: map[string]any{"seconds": 1, "label": "pi"}, text: "computed pi after 1s"},
		{step: "confirm", tool: "confirm_delete", args: map[string]any{"item": "report.pdf"}, text: "confirm: yes", asked: []string{"confirm"}},
		{step: "multi", tool: "multi_input", text: "first: one, second: two", asked: []string{"first", "second"}},
		{step: "required", tool: "test_tool_with_task", text: "Hello, Ada!", asked: []string{"name"}, inCall: true},
		{step: "cancel", tool: "slow_compute", args: map[string]any{"seconds": 30, "label": "never"}, cancel: true},
	}
	planCalls := []map[string]any{}
	for _, c := range calls {
		planCalls = append(planCalls, map[string]any{"step": c.step, "name": c.tool, "arguments": c.args, "preference": "require", "cancel": c.cancel})
	}
	raw, err := json.Marshal(map[string]any{
		"client": client, "extTasks": extTasks,
		"url": s.url + "/mcp", "token": token,
		"calls":         planCalls,
		"answers":       map[string]string{"confirm": "yes", "first": "one", "second": "two", "name": "Ada"},
		"callTimeoutMs": (30 * time.Second).Milliseconds(),
		"timeoutMs":     (90 * time.Second).Milliseconds(),
	})
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "ext-tasks-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	steps := peers.RunSteps(t, 2*time.Minute, node, script, []string{string(raw)}, nil)

	var conn struct {
		Era             string `json:"era"`
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Execution      bool `json:"execution"`
			InputResponses bool `json:"inputResponses"`
		} `json:"capabilities"`
	}
	steps["connect"].Decode(t, &conn)
	if conn.Era != "modern" || conn.ProtocolVersion != "2026-07-28" || !conn.Capabilities.Execution || !conn.Capabilities.InputResponses {
		t.Fatalf("connect: %+v; want the 2026-07-28 era and a tasks session (execution, inputResponses)", conn)
	}

	// What ext-tasks 0.2.2 cannot take from the gateway (see knownMismatch).
	taskIDs := map[string]string{}
	for _, c := range calls {
		t.Run(c.step, func(t *testing.T) {
			step, ok := steps[c.step]
			if !ok {
				t.Fatalf("no step %q", c.step)
			}
			var got extTasksStep
			step.Decode(t, &got)
			if got.Kind != "task" || got.TaskID == "" {
				t.Fatalf("%s: ext-tasks made a %q execution (task %q), rejected %+v; want a task", c.tool, got.Kind, got.TaskID, got.Rejected)
			}
			taskIDs[c.step] = got.TaskID
			checkTaskWire(t, c.tool, got, c.asked, c.inCall, c.cancel)

			var fields []string
			for _, a := range got.Asked {
				fields = append(fields, a.Fields...)
				wantScope, wantDelivery := "task", "task-update"
				if c.inCall {
					wantScope, wantDelivery = "request", "request-retry"
				}
				if a.Scope != wantScope || a.Delivery != wantDelivery {
					t.Errorf("question %q asked with scope %q, delivery %q; want %q, %q", a.Message, a.Scope, a.Delivery, wantScope, wantDelivery)
				}
			}
			slices.Sort(fields)
			if !slices.Equal(fields, c.asked) {
				t.Errorf("asked for %v; want %v", fields, c.asked)
			}
			// ext-tasks settles a cancelled execution once the server
			// acknowledges tasks/cancel, with the last status it polled.
			if !c.cancel && (got.LastTask == nil || got.LastTask.TaskID != got.TaskID || got.LastTask.Status != "completed") {
				t.Errorf("last task seen %+v; want %s completed", got.LastTask, got.TaskID)
			}
			if len(got.Errors) > 0 {
				t.Errorf("client errors: %v", got.Errors)
			}
			if c.cancel {
				if got.Outcome != "cancelled" || got.Rejected == nil || got.Rejected.Name != "TaskCancelledError" {
					t.Errorf("outcome %q, rejected %+v; want cancelled (TaskCancelledError)", got.Outcome, got.Rejected)
				}
				if got.AfterCancel != "cancelled" {
					t.Errorf("tasks/get after tasks/cancel: status %q; want cancelled", got.AfterCancel)
				}
				return
			}
			if got.Outcome != "completed" || got.Rejected != nil {
				t.Fatalf("outcome %q, rejected %+v; want completed", got.Outcome, got.Rejected)
			}
			if got.IsError || got.Text != c.text {
				t.Errorf("result %q (isError %v); want %q", got.Text, got.IsError, c.text)
			}
			// The inlined result is what the call would have answered: a
			// 2026-07-28 result, resultType and all (SEP-2663).
			for _, w := range slices.Backward(got.Raw) {
				if w.Dir == "in" && deref(w.Status) == "completed" && w.Inlined {
					if rt := deref(w.InlinedResultType); rt != "complete" {
						t.Errorf("the completed task's result has resultType %q, want complete", rt)
					}
					break
				}
			}
		})
	}

	// The journal records each task, once ended, with its result.
	if err := s.shutdown(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	j, err := mcpvisor.OpenJournal(data, mcpvisor.JournalOptions{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, c := range calls {
		id, ok := taskIDs[c.step]
		if !ok {
			continue
		}
		rec, found, err := j.Store().GatewayTask(id)
		if err != nil || !found {
			t.Errorf("%s: task %s not in the journal (%v)", c.step, id, err)
			continue
		}
		want := "completed"
		if c.cancel {
			want = "cancelled"
		}
		if rec.Tool != c.tool || rec.Status != want || !strings.Contains(string(rec.Result), c.text) {
			t.Errorf("%s: journaled task %s: tool %q, status %q, result %s; want %s %s with %q", c.step, id, rec.Tool, rec.Status, rec.Result, c.tool, want, c.text)
		}
	}
}

// checkTaskWire checks the extension's messages of one call: a tools/call
// that declares the extension answered by a CreateTaskResult (after
// input_required rounds when inCall), tasks/get polls of that task, and,
// when the task asked questions, a tasks/get with them in inputRequests
// and a tasks/update answering the same keys; when cancelled, one
// tasks/cancel.
func checkTaskWire(t *testing.T, tool string, got extTasksStep, asked []string, inCall, cancelled bool) {
	t.Helper()
	var created, polls, updates, cancels int
	var inTask []string // the input keys tasks/get asked for
	for i, w := range got.Raw {
		if w.Dir == "out" {
			if !w.DeclaresTasks {
				t.Errorf("%s sent without the tasks extension in its client capabilities", w.Method)
			}
			switch w.Method {
			case "tools/call":
				if w.Name != tool {
					t.Errorf("tools/call of %q; want %q", w.Name, tool)
				}
			case "tasks/get":
				polls++
			case "tasks/cancel":
				cancels++
			case "tasks/update":
				updates++
				keys := slices.Clone(w.InputResponses)
				slices.Sort(keys)
				if !slices.Equal(keys, inTask) {
					t.Errorf("tasks/update answered %v; tasks/get asked %v", keys, inTask)
				}
			}
			if w.Method != "tools/call" && w.TaskID != got.TaskID {
				t.Errorf("%s of task %q; want %q", w.Method, w.TaskID, got.TaskID)
			}
			continue
		}
		if w.Error != nil {
			t.Errorf("error answering %s: %d %s", got.Raw[i-1].Method, w.Error.Code, w.Error.Message)
			continue
		}
		rt := deref(w.ResultType)
		switch req := got.Raw[i-1]; {
		case req.Method == "tools/call" && rt == "task":
			created++
			if w.TaskID != got.TaskID {
				t.Errorf("CreateTaskResult of task %q; ext-tasks holds %q", w.TaskID, got.TaskID)
			}
		case req.Method == "tools/call" && rt == "input_required":
			if !inCall {
				t.Errorf("tools/call of %s answered input_required; want a task at once", tool)
			}
		case req.Method == "tools/call":
			t.Errorf("tools/call of %s answered resultType %q; want task", tool, rt)
		case rt != "complete":
			t.Errorf("%s answered resultType %q; want complete", req.Method, rt)
		case req.Method == "tasks/get" && deref(w.Status) == "input_required":
			inTask = slices.Clone(w.InputRequests)
			slices.Sort(inTask)
		}
	}
	if created != 1 || polls == 0 {
		t.Errorf("%s: %d CreateTaskResults, %d tasks/get; want 1 and some", tool, created, polls)
	}
	wantUpdates := 0
	if len(asked) > 0 && !inCall {
		wantUpdates = 1
	}
	if updates != wantUpdates {
		t.Errorf("%s: %d tasks/update; want %d", tool, updates, wantUpdates)
	}
	if wantCancels := map[bool]int{true: 1}[cancelled]; cancels != wantCancels {
		t.Errorf("%s: %d tasks/cancel; want %d", tool, cancels, wantCancels)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// waitListed waits until serve's servers are ready (GET /v1/tools?wait,
// answered once each is ready or failed) and checks that its catalog
// lists name: the jobs server has started and its tools are callable.
func waitListed(t *testing.T, s *serving, token, name string) {
	t.Helper()
	code, body := get(t, s.url+"/v1/tools?wait=30s", token)
	var l struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &l) != nil ||
		!slices.ContainsFunc(l.Tools, func(tl struct{ Name string }) bool { return tl.Name == name }) {
		t.Fatalf("serve does not list %s once its servers are ready: %d %s", name, code, body)
	}
}
