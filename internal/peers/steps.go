package peers

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Step is one line a step script printed on stdout: a JSON object whose
// "step" field names it, such as {"step":"echo","text":"hi"}.
type Step struct {
	Name string          // the "step" field
	Line json.RawMessage // the whole line
}

// Decode unmarshals the step's line into v, failing the test if it cannot.
func (s Step) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(s.Line, v); err != nil {
		t.Fatalf("step %s: %v", s.Line, err)
	}
}

// RunSteps runs node with a step script (such as gateway/testdata/
// sdk-client.mjs) and its arguments, and returns the script's steps by
// name once it has exited. It blocks until then.
//
// A step script prints only JSON lines, one a step, each name once; it
// ends with {"step":"done"} and exit code 0, or reports a failure with
// {"step":"fail","error":"…"}. Anything else fails the test, as does a
// script still running after timeout (it is then killed). Each line is
// logged with t.Log, the script's stderr too if the test fails.
//
// onStep, if not nil, is called on the test's goroutine with each step as
// it arrives, and may write to the script's stdin (for a script that waits
// on the test); stdin is closed when the script's stdout ends.
func RunSteps(t testing.TB, timeout time.Duration, node, script string, args []string, onStep func(Step, io.Writer)) map[string]Step {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.WaitDelay = 10 * time.Second // after a kill, for the pipes to close
	stderr := &tail{max: 256 << 10}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	var once sync.Once
	var waitErr error
	wait := func() error {
		once.Do(func() {
			stdin.Close()
			waitErr = cmd.Wait()
			cancel()
		})
		return waitErr
	}
	// A test that fails half way kills the script and reaps it.
	t.Cleanup(func() {
		cancel()
		_ = wait()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", script, stderr.String())
		}
	})

	steps := map[string]Step{}
	var order []string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := append(json.RawMessage(nil), sc.Bytes()...)
		t.Logf("step: %s", line)
		var head struct {
			Step  string `json:"step"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(line, &head); err != nil || head.Step == "" {
			t.Fatalf("%s printed %q, not a step", script, line)
		}
		if head.Step == "fail" {
			t.Fatalf("%s failed after steps %v: %s", script, order, head.Error)
		}
		if _, dup := steps[head.Step]; dup {
			t.Fatalf("%s printed step %q twice", script, head.Step)
		}
		s := Step{Name: head.Step, Line: line}
		steps[s.Name] = s
		order = append(order, s.Name)
		if onStep != nil {
			onStep(s, stdin)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s's stdout: %v", script, err)
	}
	if err := wait(); err != nil {
		t.Fatalf("%s: %v after steps %v (timeout %v)", script, err, order, timeout)
	}
	if _, ok := steps["done"]; !ok {
		t.Fatalf("%s exited after steps %v without done", script, order)
	}
	return steps
}
