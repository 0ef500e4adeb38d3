package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// The durable-task test: a CLI call starts a task and is killed (SIGKILL,
// its server with it); a host opened on the same data dir resumes the task
// and its outcome arrives as a journal event, retrievable by task id.
func TestTaskSurvivesAKilledHost(t *testing.T) {
	state, data := t.TempDir(), t.TempDir()
	cfgPath := writeConfig(t, `{"mcpServers":{"t":{"command":"MCPTEST","args":["-name","t","-task-state","`+state+`"]}}}`)

	cmd := exec.Command(cliBin, "call", "--config", cfgPath, "--data", data, "mcp__t__sleep_task", `{"ms":1500}`)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := regexp.MustCompile(`^task ([0-9a-f]+) started on t$`)
	var id string
	sc := bufio.NewScanner(stderr)
	for id == "" && sc.Scan() {
		if m := started.FindStringSubmatch(sc.Text()); m != nil {
			id = m[1]
		}
	}
	if id == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the CLI never reported its task")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Read the pipe to its end before Wait, as os/exec asks: the CLI is
	// dead, and its servers' stderr goes to it, not to this pipe.
	_, _ = io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the CLI was not killed: %v", err)
	}

	cfg, err := mcpvisor.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{Config: cfg, DataDir: data, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("reopening the killed host's data dir: %v", err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	events := h.Journal().Subscribe(ctx, mcpvisor.EventFilter{Method: mcpvisor.EventMethodTask})
	select {
	case ev := <-events:
		if !strings.Contains(string(ev.Params), id) || !strings.Contains(string(ev.Params), `"status":"completed"`) {
			t.Fatalf("task event %s", ev.Params)
		}
	case <-ctx.Done():
		t.Fatal("no mcpvisor/task event after the restart")
	}
	ti, err := h.Task(id)
	if err != nil || !ti.Done || ti.Status != mcpvisor.TaskCompleted || ti.Result == nil || ti.Result.Wire() != "slept 1500 ms" {
		t.Fatalf("task %+v (%v)", ti, err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	out, _, code := runCLIData(t, data, "tasks", id)
	if code != 0 || !strings.Contains(out, "completed") || !strings.Contains(out, "slept 1500 ms") {
		t.Fatalf("mcpvisor tasks %s: code %d\n%s", id, code, out)
	}
}
