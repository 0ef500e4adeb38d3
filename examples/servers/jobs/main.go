// Command jobs is an MCP stdio server of jobs that take a while: the
// fixtures the conformance suite's tasks-extension scenarios call
// (greet, slow_compute, failing_job, protocol_error_job, confirm_delete,
// multi_input, test_tool_with_task). Its tools declare whether they may
// run as tasks (execution.taskSupport). By default it runs no tasks
// itself: a client in front of it (the mcpvisor gateway) makes them tasks
// of its own. With --tasks it is a dual-era server that speaks the
// 2026-07-28 tasks extension (io.modelcontextprotocol/tasks) to a modern
// client that declares it: such a call of a task-supporting tool is a task
// the client polls with tasks/get, its questions answered with
// tasks/update.
//
//	jobs [--tasks]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/mcpserve"
)

func main() {
	tasks := flag.Bool("tasks", false, "speak the 2026-07-28 era and run task-supporting tools as tasks of the tasks extension for clients that declare it")
	flag.Parse()
	srv := mcpserve.New(mcpserve.Options{
		Name: "jobs", Title: "Jobs", Version: "1.0.0", AdvisoryTaskSupport: true,
		Modern: *tasks, TasksExtension: *tasks,
		Instructions: "Jobs that take a while, as the tasks extension's conformance scenarios need them.",
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	for _, t := range tools() {
		srv.AddTool(t)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Serve(ctx, os.Stdin, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
}

const (
	noArgs     = `{"type":"object","properties":{},"additionalProperties":false}`
	nameSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
)

func tools() []mcpserve.Tool {
	return []mcpserve.Tool{
		{
			Name: "greet", Description: "Answers Hello, {name}! at once. Never a task.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
			TaskSupport: mcpserve.TaskSupportForbidden, Handler: greet,
		},
		{
			Name: "slow_compute", Description: "Sleeps seconds (honouring cancellation), then answers the label.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","minimum":0},"label":{"type":"string"}}}`),
			TaskSupport: mcpserve.TaskSupportOptional, Handler: slowCompute,
		},
		{
			Name: "failing_job", Description: "Fails after about a second with a tool error. Must run as a task.",
			InputSchema: json.RawMessage(noArgs), TaskSupport: mcpserve.TaskSupportRequired, Handler: failingJob,
		},
		{
			Name: "protocol_error_job", Description: "Fails with a JSON-RPC error (an internal error).",
			InputSchema: json.RawMessage(noArgs), TaskSupport: mcpserve.TaskSupportOptional, Handler: protocolErrorJob,
		},
		{
			Name: "confirm_delete", Description: "Asks the user to confirm (elicitation), then answers what they said.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"item":{"type":"string"}}}`),
			TaskSupport: mcpserve.TaskSupportOptional, Handler: confirmDelete,
		},
		{
			Name: "multi_input", Description: "Asks two questions at once (two elicitations in parallel), then answers both.",
			InputSchema: json.RawMessage(noArgs), TaskSupport: mcpserve.TaskSupportOptional, Handler: multiInput,
		},
		{
			Name: "test_tool_with_task", Description: "Must run as a task: asks the user's name, then greets them.",
			InputSchema: json.RawMessage(noArgs), TaskSupport: mcpserve.TaskSupportRequired, Handler: toolWithTask,
		},
	}
}

func greet(_ context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := call.Bind(&args); err != nil {
		return nil, err
	}
	return mcpserve.TextResult("Hello, " + args.Name + "!"), nil
}

func slowCompute(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		Seconds float64 `json:"seconds"`
		Label   string  `json:"label"`
	}
	if err := call.Bind(&args); err != nil {
		return nil, err
	}
	select {
	case <-time.After(time.Duration(args.Seconds * float64(time.Second))):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return mcpserve.TextResult(fmt.Sprintf("computed %s after %gs", args.Label, args.Seconds)), nil
}

func failingJob(ctx context.Context, _ *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return mcpserve.ErrorResult("the job failed"), nil
}

func protocolErrorJob(context.Context, *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	return nil, mcpserve.Errorf(mcpserve.CodeInternalError, "protocol_error_job: an internal error, as asked")
}

// elicit asks for one string field and returns it, or the action
// when the user did not accept.
func elicit(ctx context.Context, call *mcpserve.ToolCall, message, field string) (string, error) {
	raw, err := call.Call(ctx, "elicitation/create", map[string]any{
		"message":         message,
		"requestedSchema": json.RawMessage(`{"type":"object","properties":{"` + field + `":{"type":"string"}},"required":["` + field + `"]}`),
	})
	if err != nil {
		return "", err
	}
	var ans struct {
		Action  string            `json:"action"`
		Content map[string]string `json:"content"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return "", err
	}
	if ans.Action != "accept" {
		return "(" + ans.Action + ")", nil
	}
	return ans.Content[field], nil
}

func confirmDelete(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	answer, err := elicit(ctx, call, "Delete it? Type yes to confirm.", "confirm")
	if err != nil {
		return nil, err
	}
	return mcpserve.TextResult("confirm: " + answer), nil
}

func multiInput(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var wg sync.WaitGroup
	var first, second string
	var err1, err2 error
	wg.Go(func() { first, err1 = elicit(ctx, call, "First value?", "first") })
	wg.Go(func() { second, err2 = elicit(ctx, call, "Second value?", "second") })
	wg.Wait()
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return mcpserve.TextResult("first: " + first + ", second: " + second), nil
}

func toolWithTask(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	name, err := elicit(ctx, call, "What is your name?", "name")
	if err != nil {
		return nil, err
	}
	return mcpserve.TextResult("Hello, " + name + "!"), nil
}
