package mcpvisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

func taskServer(name string, args ...string) mcpvisor.ServerConfig {
	return mcptest(name, append([]string{"-tasks"}, args...)...)
}

// A task-only tool is run as a task, polled to its end and answered like a
// plain call; its record ends done.
func TestTaskRunsToCompletion(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, taskServer("t"))
	waitReady(t, h, "t")
	var started []mcpvisor.TaskInfo
	res, err := h.CallWith(context.Background(), "mcp__t__sleep_task", json.RawMessage(`{"ms":300}`),
		mcpvisor.CallOptions{OnTask: func(ti mcpvisor.TaskInfo) { started = append(started, ti) }})
	if err != nil || res.IsError || res.Wire() != "slept 300 ms" {
		t.Fatalf("sleep_task: %v %v", res, err)
	}
	if len(started) != 1 || started[0].ID == "" || started[0].Server != "t" {
		t.Fatalf("OnTask saw %+v", started)
	}
	ti, err := h.Task(started[0].ID)
	if err != nil || !ti.Done || ti.Status != mcpvisor.TaskCompleted || ti.Tool != "mcp__t__sleep_task" {
		t.Fatalf("task record %+v (%v)", ti, err)
	}
	if left, _ := h.Tasks(true); len(left) != 0 {
		t.Fatalf("unfinished tasks left: %+v", left)
	}
}

// A task that fails with a tool error answers that tool error.
func TestTaskFailureIsAToolError(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, taskServer("t"))
	waitReady(t, h, "t")
	res, err := h.Call(context.Background(), "mcp__t__sleep_task", json.RawMessage(`{"ms":10,"fail":true}`))
	if err != nil || !res.IsError || !strings.Contains(res.Wire(), "failed on purpose") {
		t.Fatalf("failing task: %v %v", res, err)
	}
}

// The call timeout does not bound a task: polling goes on past it.
func TestTaskOutlivesTheCallTimeout(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, withTimeout(taskServer("t"), 300*time.Millisecond))
	waitReady(t, h, "t")
	res, err := h.Call(context.Background(), "mcp__t__sleep_task", json.RawMessage(`{"ms":1200}`))
	if err != nil || res.Wire() != "slept 1200 ms" {
		t.Fatalf("a 1.2 s task with a 300 ms call timeout: %v %v", res, err)
	}
}

// A caller that gives up cancels the task at the server (tasks/cancel).
func TestAbandonedTaskIsCancelled(t *testing.T) {
	state := t.TempDir()
	h := openHost(t, mcpvisor.Options{}, taskServer("t", "-task-state", state))
	waitReady(t, h, "t")
	id := abandonTask(t, h, "mcp__t__sleep_task", `{"ms":60000}`)
	// The server agrees: tasks/cancel reached it before the call returned.
	b, err := os.ReadFile(filepath.Join(state, id+".json"))
	if err != nil || !strings.Contains(string(b), `"cancelled"`) {
		t.Fatalf("the server's task state: %s (%v), want cancelled", b, err)
	}
}

// abandonTask calls tool, which runs as a task, gives the call up once the
// task exists, and checks that the host recorded the task cancelled; it
// returns the task's id.
func abandonTask(t *testing.T, h *mcpvisor.Host, tool, args string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var id string
	_, err := h.CallWith(ctx, tool, json.RawMessage(args),
		mcpvisor.CallOptions{OnTask: func(ti mcpvisor.TaskInfo) { id = ti.ID; cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	ti, err := h.Task(id)
	if err != nil || !ti.Done || ti.Status != mcpvisor.TaskCancelled {
		t.Fatalf("task %+v (%v), want done and cancelled", ti, err)
	}
	return id
}

// Detached: the call returns at once with the task; the outcome arrives as
// an mcpvisor/task event and through Host.Task.
func TestDetachedTaskDeliversAnEvent(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, taskServer("t"))
	waitReady(t, h, "t")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := h.Journal().Subscribe(ctx, mcpvisor.EventFilter{Method: mcpvisor.EventMethodTask})
	res, err := h.CallWith(ctx, "mcp__t__sleep_task", json.RawMessage(`{"ms":200}`), mcpvisor.CallOptions{Detached: true})
	if err != nil || res.Task == nil || res.Task.ID == "" || !res.Task.Detached {
		t.Fatalf("detached call: %+v %v", res, err)
	}
	select {
	case ev := <-events:
		if ev.Server != "t" || !strings.Contains(string(ev.Params), res.Task.ID) || !strings.Contains(string(ev.Params), `"status":"completed"`) {
			t.Fatalf("event %s", ev.Params)
		}
	case <-ctx.Done():
		t.Fatal("no mcpvisor/task event")
	}
	ti, err := h.Task(res.Task.ID)
	if err != nil || !ti.Done || ti.Result == nil || ti.Result.Wire() != "slept 200 ms" {
		t.Fatalf("task %+v (%v)", ti, err)
	}
}

// The host closes while a task runs; the next start resumes polling it and
// delivers its outcome as an event.
func TestTaskResumesAfterHostRestart(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	srv := taskServer("t", "-task-state", state)
	opts := mcpvisor.Options{DataDir: dir}
	h := openHost(t, opts, srv)
	waitReady(t, h, "t")
	created := make(chan string, 1)
	callErr := make(chan error, 1)
	go func() {
		_, err := h.CallWith(context.Background(), "mcp__t__sleep_task", json.RawMessage(`{"ms":1500}`),
			mcpvisor.CallOptions{OnTask: func(ti mcpvisor.TaskInfo) { created <- ti.ID }})
		callErr <- err
	}()
	id := <-created
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-callErr; !errors.Is(err, mcpvisor.ErrClosed) {
		t.Fatalf("the call across Close: %v, want ErrClosed", err)
	}

	h2 := reopen(t, h, dir, opts, srv)
	if _, err := h2.Task(id); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, h2, mcpvisor.EventFilter{Method: mcpvisor.EventMethodTask}, 1)
	ti, err := h2.Task(id)
	if err != nil || !ti.Done || ti.Status != mcpvisor.TaskCompleted || ti.Result == nil || ti.Result.Wire() != "slept 1500 ms" {
		t.Fatalf("resumed task %+v (%v)", ti, err)
	}
}

// A task's progress reaches the caller while the host polls it: its
// progress token stays valid until the task ends.
func TestTaskProgress(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, taskServer("t"))
	waitReady(t, h, "t")
	var got []mcpvisor.Progress // OnProgress runs on this goroutine
	res, err := h.CallWith(context.Background(), "mcp__t__sleep_task", json.RawMessage(`{"ms":600,"steps":3}`),
		mcpvisor.CallOptions{OnProgress: func(p mcpvisor.Progress) { got = append(got, p) }})
	if err != nil || res.Wire() != "slept 600 ms" {
		t.Fatalf("sleep_task: %v %v", res, err)
	}
	if len(got) != 3 {
		t.Fatalf("%d progress notifications, want 3: %+v", len(got), got)
	}
	for i, p := range got {
		if p.Progress != float64(i+1) || p.Total == nil || *p.Total != 3 {
			t.Errorf("progress %d = %v of %v", i, p.Progress, p.Total)
		}
	}
}
