package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sidecarProcess is `mcpvisor serve` run as its own process, as a person
// runs it, until the test ends.
type sidecarProcess struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
}

// startSidecar runs serve on a free loopback port and returns once it
// says it listens (its note is written by then).
func startSidecar(t *testing.T, args ...string) *sidecarProcess {
	t.Helper()
	return startSidecarEnv(t, nil, args...)
}

// startSidecarEnv is startSidecar with env added to the environment.
func startSidecarEnv(t *testing.T, env []string, args ...string) *sidecarProcess {
	t.Helper()
	cmd := exec.Command(cliBin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &sidecarProcess{cmd: cmd, stderr: &syncBuffer{}}
	listening := make(chan bool, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pipe)
		said := false
		for sc.Scan() {
			s.stderr.Write([]byte(sc.Text() + "\n"))
			if !said && strings.Contains(sc.Text(), "mcpvisor serve: listening on ") {
				said = true
				listening <- true
			}
		}
		if !said {
			listening <- false
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { <-copied; done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve exited with %v: %s", err, s.stderr)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("serve did not stop at SIGTERM: %s", s.stderr)
		}
	})
	if !<-listening {
		t.Fatalf("serve did not start: %s", s.stderr)
	}
	return s
}

// With a sidecar on the data directory, the commands that would run the
// servers or open the journal ask it, each a process of its own: two
// calls at once both succeed, a detached task stays with the sidecar,
// which finishes it, and status, tools, events, history and tasks show
// what the sidecar holds, without --config.
func TestCommandsThroughSidecar(t *testing.T) {
	state, data := t.TempDir(), t.TempDir()
	cfg := writeConfig(t, `{"mcpServers": {"t": {"command": "MCPTEST", "args": ["-name", "t", "-task-state", "`+state+`"]},
	  "notes": {"command": "NOTES"}}}`)
	startSidecar(t, "--config", cfg, "--data", data)

	out, errOut, code := cliExec("", "status", "--data", data)
	if code != 0 || !regexp.MustCompile(`(?m)^t\s+ready`).MatchString(out) || !regexp.MustCompile(`(?m)^notes\s+ready`).MatchString(out) {
		t.Fatalf("status: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, errOut, code := cliExec("", "tools", "--data", data); code != 0 || !strings.Contains(out, "mcp__notes__add") || !strings.Contains(out, "mcp__t__echo") {
		t.Fatalf("tools: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// Both calls are under way at once: without the sidecar the second
	// would find the journal held by the first.
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, errOut, code := cliExec("", "call", "--data", data, "mcp__t__slow", `{"ms":1000}`)
			outs[i] = strings.Join([]string{strings.TrimSpace(out), errOut, strconv.Itoa(code)}, "|")
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if o != "slept 1000 ms||0" {
			t.Errorf("parallel call %d: stdout|stderr|exit = %q", i, o)
		}
	}

	// A detached task: the CLI returns at once, the sidecar runs the task
	// to its end, and its event arrives through events --follow.
	follow := exec.Command(cliBin, "events", "--follow", "--json", "--data", data, "--method", "mcpvisor/task")
	followOut, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = cliExec("", "call", "--detach", "--data", data, "mcp__t__sleep_task", `{"ms":1500}`)
	m := regexp.MustCompile(`(?m)^task ([0-9a-f]+) started on t$`).FindStringSubmatch(errOut)
	if code != 0 || m == nil || !strings.Contains(out, "started on server") {
		_ = follow.Process.Kill()
		t.Fatalf("call --detach: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	id := m[1]
	var ev struct {
		ID     uint64          `json:"id"`
		Params json.RawMessage `json:"params"`
	}
	sc := bufio.NewScanner(followOut)
	for sc.Scan() {
		if strings.Contains(sc.Text(), id) && strings.Contains(sc.Text(), `completed`) {
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("followed event %s: %v", sc.Text(), err)
			}
			break
		}
	}
	_ = follow.Process.Signal(os.Interrupt)
	go io.Copy(io.Discard, followOut)
	if err := follow.Wait(); err != nil || ev.ID == 0 {
		t.Fatalf("events --follow: %v; event %+v", err, ev)
	}
	out, errOut, code = cliExec("", "tasks", id, "--data", data)
	if code != 0 || !strings.Contains(out, "completed") || !strings.Contains(out, "slept 1500 ms") {
		t.Fatalf("tasks %s: exit %d, stdout %q, stderr %q", id, code, out, errOut)
	}
	if out, _, code := cliExec("", "tasks", "--data", data, "--json"); code != 0 || !strings.Contains(out, `"id":"`+id+`"`) {
		t.Errorf("tasks --json: exit %d, %q", code, out)
	}

	// The journal commands ask the sidecar too.
	if out, errOut, code := cliExec("", "history", "--calls", "--data", data); code != 0 || strings.Count(out, "mcp__t__slow") != 2 {
		t.Errorf("history --calls: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, _, code := cliExec("", "history", "--server", "notes", "--data", data); code != 0 || !strings.Contains(out, "ready") {
		t.Errorf("history --server notes: exit %d, %q", code, out)
	}
	if _, errOut, code := cliExec("", "events", "ack", strconv.FormatUint(ev.ID, 10), "--data", data); code != 0 {
		t.Errorf("events ack: exit %d, %q", code, errOut)
	}
	if out, _, code := cliExec("", "events", "--pending", "--data", data); code != 0 || strings.Contains(out, "mcpvisor/task") {
		t.Errorf("events --pending after ack: exit %d, %q", code, out)
	}
}

// Given --config, a command through the sidecar says when the file is not
// the one the sidecar runs, and is silent when it is.
func TestSidecarConfigNote(t *testing.T) {
	data := t.TempDir()
	cfg := writeConfig(t, `{"mcpServers": {"notes": {"command": "NOTES"}}}`)
	other := writeConfig(t, `{"mcpServers": {"more": {"command": "NOTES"}}}`)
	startSidecar(t, "--config", cfg, "--data", data)

	abs, _ := filepath.Abs(cfg)
	out, errOut, code := cliExec("", "call", "--config", other, "--data", data, "mcp__notes__add", `{"a":1,"b":2}`)
	if code != 0 || out != "3\n" || !strings.Contains(errOut, "--config "+other+" is not read") || !strings.Contains(errOut, abs) {
		t.Errorf("call with another --config: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code := cliExec("", "call", "--config", other, "--data", data, "mcp__more__add", `{"a":1,"b":2}`); code != 1 || !strings.Contains(errOut, "sidecar:") {
		t.Errorf("a tool only --config has: exit %d, stderr %q; want the sidecar's refusal", code, errOut)
	}
	if _, errOut, code := cliExec("", "status", "--config", cfg, "--data", data); code != 0 || errOut != "" {
		t.Errorf("status with the sidecar's own --config: exit %d, stderr %q", code, errOut)
	}
}

// tools and status wait for each server only until it is ready or its
// start has failed: a command that is not found, a server that never
// answers within its startupTimeout. Given ten minutes they return, exit
// 1, and the servers that failed have been tried a few times at most (the
// one not found restarts while the other is waited for), not until their
// restarts gave up.
func TestStatusSettles(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {
	  "notes": {"command": "NOTES"},
	  "missing": {"command": "/nonexistent/server"},
	  "silent": {"command": "MCPTEST", "args": ["-hang-init"], "startupTimeout": "1s"}
	}}`)
	start := time.Now()
	out, errOut, code := runCLI(t, "status", "--config", cfg, "--wait", "10m", "--json")
	if d := time.Since(start); d > time.Minute {
		t.Errorf("status --wait 10m took %v", d)
	}
	var sts []struct {
		Name     string `json:"name"`
		State    string `json:"state"`
		Restarts int    `json:"restarts"`
	}
	if err := json.Unmarshal([]byte(out), &sts); err != nil || code != 1 {
		t.Fatalf("status: exit %d, stdout %q (%v), stderr %q", code, out, err, errOut)
	}
	for _, st := range sts {
		switch {
		case st.Name == "notes" && st.State != "ready":
			t.Errorf("notes is %s", st.State)
		case st.Name != "notes" && (st.State == "ready" || st.State == "failed" || st.Restarts < 1 || st.Restarts > 4):
			t.Errorf("%s is %s after %d failures, want not ready after its first few", st.Name, st.State, st.Restarts)
		}
		if st.Name != "notes" && !strings.Contains(errOut, `server "`+st.Name+`"`) {
			t.Errorf("stderr does not name %s: %q", st.Name, errOut)
		}
	}
	out, errOut, code = runCLI(t, "tools", "--config", cfg, "--wait", "10m")
	if code != 1 || !strings.Contains(out, "mcp__notes__add") || !strings.Contains(errOut, `server "missing"`) {
		t.Errorf("tools: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
