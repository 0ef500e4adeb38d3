package mcpvisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// The tasks extension of 2026-07-28 (io.modelcontextprotocol/tasks), spoken
// by the host as a client to a modern server that runs its tools as tasks:
// examples/servers/jobs with --tasks, a real subprocess.

func jobsServer(name string) mcpvisor.ServerConfig {
	return mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: bin.jobs, Args: []string{"--tasks"}, Enabled: true}
}

// noHostElicitation declares elicitation to the server but fails the test
// if the host's own handler is asked: the calls' handlers must answer.
func noHostElicitation(t *testing.T) mcpvisor.ElicitationHandler {
	return func(context.Context, *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
		t.Error("the host's elicitation handler was asked; the call's own should have been")
		return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitDecline}, nil
	}
}

// A long tool of a modern server runs as an extension task: polled with
// tasks/get (no tasks/result: the server has none), whose inlined result
// is the call's answer; its record says it was an extension task.
func TestExtensionTaskCompletes(t *testing.T) {
	spans := newSpanLog(t)
	h := openHost(t, mcpvisor.Options{TracerProvider: spans.tp}, jobsServer("j"))
	waitReady(t, h, "j")
	if st := status(t, h, "j"); !protocol.IsModern(st.ProtocolVersion) {
		t.Fatalf("jobs --tasks spoke %q, want the modern era", st.ProtocolVersion)
	}
	var started []mcpvisor.TaskInfo
	res, err := h.CallWith(context.Background(), "mcp__j__slow_compute", json.RawMessage(`{"seconds":0.3,"label":"x"}`),
		mcpvisor.CallOptions{OnTask: func(ti mcpvisor.TaskInfo) { started = append(started, ti) }})
	if err != nil || res.IsError || res.Wire() != "computed x after 0.3s" {
		t.Fatalf("slow_compute: %v %v", res, err)
	}
	if len(started) != 1 || started[0].Server != "j" {
		t.Fatalf("OnTask saw %+v", started)
	}
	rec, ok, err := h.Journal().Store().TaskByID(started[0].ID)
	if err != nil || !ok || !rec.Extension || !rec.Done || rec.Status != mcpvisor.TaskCompleted {
		t.Fatalf("task record %+v (%v, %v), want a done extension task", rec, ok, err)
	}
	if len(spans.named(protocol.MethodTasksGet)) == 0 || len(spans.named(protocol.MethodTasksResult)) != 0 {
		t.Fatalf("spans %v: want tasks/get and no tasks/result", spans.names())
	}
}

// A task's questions (two at once here) are its inputRequests: the call's
// own elicitation handler answers them, and tasks/update carries the
// answers.
func TestExtensionTaskAsksTheCaller(t *testing.T) {
	spans := newSpanLog(t)
	h := openHost(t, mcpvisor.Options{TracerProvider: spans.tp, Elicitation: noHostElicitation(t)}, jobsServer("j"))
	waitReady(t, h, "j")
	var mu sync.Mutex
	var asked []string
	answer := func(_ context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
		mu.Lock()
		asked = append(asked, req.Message)
		mu.Unlock()
		content := map[string]any{}
		for _, f := range req.Fields {
			content[f.Name] = f.Name + "!"
		}
		return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: content}, nil
	}
	res, err := h.CallWith(context.Background(), "mcp__j__multi_input", nil, mcpvisor.CallOptions{Elicitation: answer})
	if err != nil || res.IsError || res.Wire() != "first: first!, second: second!" {
		t.Fatalf("multi_input: %v %v", res, err)
	}
	slices.Sort(asked)
	if want := []string{"First value?", "Second value?"}; !slices.Equal(asked, want) {
		t.Fatalf("asked %q, want %q (each once)", asked, want)
	}
	if len(spans.named(protocol.MethodTasksUpdate)) == 0 {
		t.Fatalf("spans %v: want tasks/update", spans.names())
	}
}

// A task that fails with a JSON-RPC error fails the call with that error;
// a tool error completes the task and is the call's (tool error) result.
func TestExtensionTaskFailures(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, jobsServer("j"))
	waitReady(t, h, "j")
	_, err := h.Call(context.Background(), "mcp__j__protocol_error_job", nil)
	var perr *protocol.Error
	if !errors.Is(err, mcpvisor.ErrTaskFailed) || !errors.As(err, &perr) || perr.Code != protocol.CodeInternalError ||
		!strings.Contains(err.Error(), "an internal error, as asked") {
		t.Fatalf("protocol_error_job: %v, want a failed task with the server's -32603", err)
	}
	res, err := h.Call(context.Background(), "mcp__j__failing_job", nil)
	if err != nil || !res.IsError || res.Wire() != "the job failed" {
		t.Fatalf("failing_job: %v %v, want its tool error", res, err)
	}
}

// stderrLines is a log handler that hands the servers' stderr lines (the
// runtime logs them at debug) to a channel.
type stderrLines struct{ c chan string }

func (s stderrLines) Enabled(context.Context, slog.Level) bool { return true }
func (s stderrLines) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s stderrLines) WithGroup(string) slog.Handler            { return s }
func (s stderrLines) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "stderr" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" {
			select {
			case s.c <- a.Value.String():
			default:
			}
		}
		return true
	})
	return nil
}

// A caller that gives up cancels the task at the server with tasks/cancel.
func TestExtensionTaskAbandonedIsCancelled(t *testing.T) {
	lines := stderrLines{make(chan string, 1024)}
	h := openHost(t, mcpvisor.Options{Logger: slog.New(lines)}, jobsServer("j"))
	waitReady(t, h, "j")
	id := abandonTask(t, h, "mcp__j__slow_compute", `{"seconds":60}`)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line := <-lines.c:
			if strings.Contains(line, `msg="task cancelled"`) && strings.Contains(line, id) {
				return // the server got tasks/cancel
			}
		case <-timeout:
			t.Fatal("the server never logged the task's cancellation")
		}
	}
}

// A detached extension task is polled in the background; its outcome
// arrives as an mcpvisor/task event, and its questions go to the host's
// own handler (no caller is there to answer).
func TestExtensionTaskDetached(t *testing.T) {
	asked := make(chan string, 1)
	hostAnswer := func(_ context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
		asked <- req.Message
		return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: map[string]any{"confirm": "yes"}}, nil
	}
	h := openHost(t, mcpvisor.Options{Elicitation: hostAnswer}, jobsServer("j"))
	waitReady(t, h, "j")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := h.Journal().Subscribe(ctx, mcpvisor.EventFilter{Method: mcpvisor.EventMethodTask})
	res, err := h.CallWith(ctx, "mcp__j__confirm_delete", nil, mcpvisor.CallOptions{Detached: true})
	if err != nil || res.Task == nil || res.Task.ID == "" || !res.Task.Detached {
		t.Fatalf("detached call: %+v %v", res, err)
	}
	select {
	case ev := <-events:
		if ev.Server != "j" || !strings.Contains(string(ev.Params), res.Task.ID) || !strings.Contains(string(ev.Params), `"status":"completed"`) {
			t.Fatalf("event %s", ev.Params)
		}
	case <-ctx.Done():
		t.Fatal("no mcpvisor/task event")
	}
	if q := <-asked; !strings.HasPrefix(q, "Delete it?") {
		t.Fatalf("the host was asked %q", q)
	}
	ti, err := h.Task(res.Task.ID)
	if err != nil || !ti.Done || ti.Result == nil || ti.Result.Wire() != "confirm: yes" {
		t.Fatalf("task %+v (%v)", ti, err)
	}
}
