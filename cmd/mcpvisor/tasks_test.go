package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/persistence"
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

// mcpvisor tasks lists a page (--limit, with a note of how to see more)
// or every task a page at a time (--all), from the journal and through a
// sidecar alike.
func TestTasksPages(t *testing.T) {
	data := t.TempDir()
	j, err := mcpvisor.OpenJournal(data, mcpvisor.JournalOptions{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	const n = 1_234
	ops := make([]persistence.Op, 0, n)
	base := time.Now().Add(-time.Hour)
	for i := range n {
		ops = append(ops, persistence.PutTask(persistence.TaskRecord{Server: "t", TaskID: fmt.Sprintf("task%05d", i),
			Tool: "mcp__t__slow", Created: base.Add(time.Duration(i) * time.Millisecond), Status: mcpvisor.TaskWorking}))
	}
	if err := j.Write(context.Background(), ops...); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// ids counts the tasks of the --json array, checking each is listed
	// once, in created order.
	ids := func(how, out string) int {
		t.Helper()
		var tasks []struct{ ID string }
		if err := json.Unmarshal([]byte(out), &tasks); err != nil {
			t.Fatalf("%s: --json is not one array: %v\n%.600s", how, err, out)
		}
		for i, ti := range tasks {
			if want := fmt.Sprintf("task%05d", i); ti.ID != want {
				t.Fatalf("%s: task %d is %s, want %s", how, i, ti.ID, want)
			}
		}
		return len(tasks)
	}
	check := func(how string) {
		t.Helper()
		out, errOut, code := cliExec("", "tasks", "--data", data, "--json")
		if code != 0 || ids(how, out) != mcpvisor.DefaultPageLimit || !strings.Contains(errOut, "more tasks") {
			t.Errorf("%s: tasks: exit %d, %d lines, stderr %q", how, code, strings.Count(out, "\n"), errOut)
		}
		out, errOut, code = cliExec("", "tasks", "--data", data, "--json", "--limit", "1100")
		if code != 0 || ids(how, out) != 1100 || !strings.Contains(errOut, "more tasks") {
			t.Errorf("%s: tasks --limit 1100: exit %d, %d lines, stderr %q", how, code, strings.Count(out, "\n"), errOut)
		}
		out, errOut, code = cliExec("", "tasks", "--data", data, "--json", "--all")
		if code != 0 || ids(how, out) != n || errOut != "" {
			t.Errorf("%s: tasks --all: exit %d, %d lines, stderr %q", how, code, strings.Count(out, "\n"), errOut)
		}
		out, _, code = cliExec("", "tasks", "--data", data, "--limit", "3")
		if rows := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(rows) != 4 || !strings.Contains(rows[3], "task00002") {
			t.Errorf("%s: tasks --limit 3: exit %d\n%s", how, code, out)
		}
	}
	check("from the journal")
	startSidecar(t, "--config", writeConfig(t, `{"mcpServers": {}}`), "--data", data)
	check("through the sidecar")
}
