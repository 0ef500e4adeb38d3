//go:build linux

package supervision

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// bound is how long a test waits for something that should happen at once;
// reaching it is a failure, never the expected path.
const bound = 20 * time.Second

// shell returns a spec running script under sh, with the parent's base
// environment (for PATH) and the given graces.
func shell(script string, stopGrace, termGrace time.Duration) ProcessSpec {
	return ProcessSpec{
		Command:   "sh",
		Args:      []string{"-c", script},
		Env:       BaseEnv(os.Environ()),
		StopGrace: stopGrace,
		TermGrace: termGrace,
	}
}

// start starts spec and makes sure the process is stopped when the test ends.
func start(t *testing.T, spec ProcessSpec) *Process {
	t.Helper()
	p, err := StartProcess(spec)
	if err != nil {
		t.Fatalf("StartProcess: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		p.Stop(ctx)
	})
	return p
}

// lines reads the child's stdout line by line, failing the test rather than
// hanging if a line does not come.
type lines struct {
	t *testing.T
	p *Process
	r *bufio.Reader
}

func newLines(t *testing.T, p *Process) *lines {
	return &lines{t: t, p: p, r: bufio.NewReader(p.Stdout())}
}

func (l *lines) next() string {
	l.t.Helper()
	l.p.Stdout().SetReadDeadline(time.Now().Add(bound))
	defer l.p.Stdout().SetReadDeadline(time.Time{})
	s, err := l.r.ReadString('\n')
	if err != nil {
		l.t.Fatalf("reading stdout: %v (got %q)", err, s)
	}
	return strings.TrimSuffix(s, "\n")
}

func (l *lines) pid() int {
	l.t.Helper()
	s := l.next()
	pid, err := strconv.Atoi(s)
	if err != nil {
		l.t.Fatalf("want a pid on stdout, got %q", s)
	}
	return pid
}

func stop(t *testing.T, p *Process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Stop needed the context to end: the ladder stalled")
	}
}

func waitDone(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(bound):
		t.Fatal("child did not exit")
	}
}

// procStat reads state and process group of pid from /proc.
func procStat(pid int) (state byte, pgrp int, exists bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	pgrp, _ = strconv.Atoi(f[2])
	return f[0][0], pgrp, true
}

// running reports whether pid is a live (non-zombie) member of group pgid.
// PID 1 of a container may never reap orphans, so a zombie counts as gone;
// a pid reused outside the group is not ours.
func running(pid, pgid int) bool {
	state, pgrp, ok := procStat(pid)
	return ok && pgrp == pgid && state != 'Z' && state != 'X'
}

// groupMembers lists the live members of group pgid, scanning /proc.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && running(pid, pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

var ignoreErr = cmpopts.IgnoreFields(ExitInfo{}, "Err")

func TestProcessRoundTrip(t *testing.T) {
	p := start(t, ProcessSpec{Command: "cat"})
	out := newLines(t, p)
	for _, msg := range []string{`{"jsonrpc":"2.0","id":1}`, "second"} {
		if _, err := io.WriteString(p.Stdin(), msg+"\n"); err != nil {
			t.Fatalf("write: %v", err)
		}
		if got := out.next(); got != msg {
			t.Errorf("read %q, want %q", got, msg)
		}
	}
	if err := p.Exit().Err; !errors.Is(err, ErrNotExited) {
		t.Errorf("Exit() before Done: Err = %v, want ErrNotExited", err)
	}
	stop(t, p)
	if diff := cmp.Diff(ExitInfo{Code: 0}, p.Exit()); diff != "" {
		t.Errorf("Exit() mismatch (-want +got):\n%s", diff)
	}
}

func TestProcessExitInfo(t *testing.T) {
	tests := []struct {
		script string
		want   ExitInfo
		str    string
	}{
		{"exit 0", ExitInfo{Code: 0}, "exit status 0"},
		{"exit 3", ExitInfo{Code: 3}, "exit status 3"},
		{"kill -KILL $$", ExitInfo{Code: -1, Signal: "SIGKILL"}, "killed by SIGKILL"},
		{"kill -TERM $$", ExitInfo{Code: -1, Signal: "SIGTERM"}, "killed by SIGTERM"},
		{"kill -SEGV $$", ExitInfo{Code: -1, Signal: "SIGSEGV"}, "killed by SIGSEGV"},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			p := start(t, shell(tt.script, 0, 0))
			waitDone(t, p)
			if diff := cmp.Diff(tt.want, p.Exit()); diff != "" {
				t.Errorf("Exit() mismatch (-want +got):\n%s", diff)
			}
			if got := p.Exit().String(); got != tt.str {
				t.Errorf("Exit().String() = %q, want %q", got, tt.str)
			}
			stop(t, p)
		})
	}
}

// cat exits when its stdin closes: step 1 ends the ladder, no signal sent.
// With hour-long graces, any later step would stall Stop past its bound.
func TestStopClosesStdinFirst(t *testing.T) {
	p := start(t, ProcessSpec{Command: "cat", StopGrace: time.Hour, TermGrace: time.Hour})
	begin := time.Now()
	stop(t, p)
	if diff := cmp.Diff(ExitInfo{Code: 0}, p.Exit()); diff != "" {
		t.Errorf("Exit() mismatch (-want +got):\n%s", diff)
	}
	t.Logf("stopped at step 1 in %v", time.Since(begin))
}

// A child that ignores stdin EOF but not SIGTERM ends at step 3.
func TestStopSendsSIGTERM(t *testing.T) {
	p := start(t, shell("echo ready; exec sleep 1000", 50*time.Millisecond, time.Hour))
	newLines(t, p).next()
	stop(t, p)
	if diff := cmp.Diff(ExitInfo{Code: -1, Signal: "SIGTERM"}, p.Exit()); diff != "" {
		t.Errorf("Exit() mismatch (-want +got):\n%s", diff)
	}
}

// A child that ignores both stdin EOF and SIGTERM is killed at step 5,
// together with its group (the loop's sleep ignores SIGTERM too).
func TestStopSendsSIGKILL(t *testing.T) {
	p := start(t, shell(`trap "" TERM; echo ready; while :; do sleep 1; done`, 100*time.Millisecond, 100*time.Millisecond))
	newLines(t, p).next() // the trap is set
	stop(t, p)
	if diff := cmp.Diff(ExitInfo{Code: -1, Signal: "SIGKILL"}, p.Exit()); diff != "" {
		t.Errorf("Exit() mismatch (-want +got):\n%s", diff)
	}
	if m := groupMembers(p.Pid()); len(m) > 0 {
		t.Errorf("group %d still has running members %v", p.Pid(), m)
	}
}

func TestStopTakesGrandchildren(t *testing.T) {
	tests := []struct {
		name       string
		grandchild string
	}{
		{"grandchild obeys SIGTERM", `sh -c 'echo $$; exec sleep 1000' &`},
		{"grandchild ignores SIGTERM", `sh -c 'trap "" TERM; echo $$; exec sleep 1000' &`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The wrapper's own child (cat) exits at step 1; the grandchild is
			// left for the group sweep after reaping. It prints its pid once
			// its trap is set.
			p := start(t, shell(tt.grandchild+" exec cat", time.Hour, 200*time.Millisecond))
			grandchild := newLines(t, p).pid()
			if !running(grandchild, p.Pid()) {
				t.Fatalf("grandchild %d is not running in group %d before Stop", grandchild, p.Pid())
			}
			stop(t, p)
			if diff := cmp.Diff(ExitInfo{Code: 0}, p.Exit()); diff != "" {
				t.Errorf("Exit() mismatch (-want +got):\n%s", diff)
			}
			if running(grandchild, p.Pid()) {
				t.Errorf("grandchild %d still running after Stop", grandchild)
			}
			if m := groupMembers(p.Pid()); len(m) > 0 {
				t.Errorf("group %d still has running members %v", p.Pid(), m)
			}
		})
	}
}

// The direct child crashes and leaves an orphan holding stdout; Stop takes it.
func TestStopTakesOrphanOfCrashedChild(t *testing.T) {
	p := start(t, shell(`sh -c 'echo $$; exec sleep 1000' & exit 3`, time.Hour, time.Hour))
	orphan := newLines(t, p).pid()
	waitDone(t, p)
	if diff := cmp.Diff(ExitInfo{Code: 3}, p.Exit()); diff != "" {
		t.Errorf("Exit() mismatch (-want +got):\n%s", diff)
	}
	if !running(orphan, p.Pid()) {
		t.Fatalf("orphan %d is not running after its parent exited", orphan)
	}
	stop(t, p)
	if running(orphan, p.Pid()) {
		t.Errorf("orphan %d still running after Stop", orphan)
	}
}

// Kill takes orphans with SIGKILL at once: this one ignores SIGTERM, so with
// hour-long graces Stop could only finish within its bound if Kill worked.
func TestKillTakesOrphans(t *testing.T) {
	p := start(t, shell(`sh -c 'trap "" TERM; echo $$; exec sleep 1000' & exit 3`, time.Hour, time.Hour))
	orphan := newLines(t, p).pid()
	waitDone(t, p)
	p.Kill()
	stop(t, p)
	if running(orphan, p.Pid()) {
		t.Errorf("orphan %d still running after Kill and Stop", orphan)
	}
	p.Kill() // after Stop: a no-op, must not signal a recycled group
}

func TestStderrLines(t *testing.T) {
	var got [][]byte // appended on the pump goroutine; Stop joins it
	spec := shell(`
		echo one >&2
		printf 'two\r\n' >&2
		echo >&2
		head -c 65536 /dev/zero | tr '\0' a >&2; echo >&2
		head -c 65537 /dev/zero | tr '\0' b >&2; echo tail >&2
		printf last >&2`, 0, 0)
	spec.Stderr = func(line []byte) { got = append(got, line) }
	p := start(t, spec)
	waitDone(t, p)
	stop(t, p)
	want := []string{
		"one",
		"two",
		"",
		strings.Repeat("a", MaxStderrLine),
		strings.Repeat("b", MaxStderrLine) + StderrTruncated,
		"last",
	}
	var gotS []string
	for _, l := range got {
		gotS = append(gotS, string(l))
	}
	if diff := cmp.Diff(want, gotS); diff != "" {
		t.Errorf("stderr lines mismatch (-want +got):\n%s", diff)
	}
}

// 8 MiB to stderr, far beyond a pipe buffer, then a line on stdout: the
// child only gets there if stderr is drained (and read, not closed: a
// closed pipe would fail the write, and && would skip the echo).
func TestStderrIsDrained(t *testing.T) {
	t.Run("no callback", func(t *testing.T) {
		p := start(t, shell("head -c 8388608 /dev/zero >&2 && echo done", 0, 0))
		if got := newLines(t, p).next(); got != "done" {
			t.Errorf("stdout = %q, want done", got)
		}
		stop(t, p)
	})
	t.Run("callback", func(t *testing.T) {
		n := 0
		spec := shell("yes | head -n 200000 >&2 && echo done", 0, 0)
		spec.Stderr = func([]byte) { n++ }
		p := start(t, spec)
		if got := newLines(t, p).next(); got != "done" {
			t.Errorf("stdout = %q, want done", got)
		}
		stop(t, p)
		if n != 200000 {
			t.Errorf("callback saw %d lines, want 200000", n)
		}
	})
}

func TestStartMissingCommand(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mcpvisor-no-such-command", "/nonexistent/server", "./missing", dir, notExec} {
		t.Run(name, func(t *testing.T) {
			p, err := StartProcess(ProcessSpec{Command: name, Env: BaseEnv(os.Environ())})
			if err == nil {
				p.Stop(context.Background())
				t.Fatal("StartProcess succeeded")
			}
			if !errors.Is(err, ErrCommandNotFound) {
				t.Errorf("error %v does not wrap ErrCommandNotFound", err)
			}
			if !strings.Contains(err.Error(), strconv.Quote(name)) {
				t.Errorf("error %q does not name the command %q", err, name)
			}
		})
	}
	if _, err := StartProcess(ProcessSpec{}); !errors.Is(err, ErrCommandNotFound) {
		t.Errorf("empty command: error %v does not wrap ErrCommandNotFound", err)
	}
}

func TestStartInvalidEnv(t *testing.T) {
	for _, entry := range []string{"NOEQUALS", "=value", "A=nul\x00byte"} {
		if _, err := StartProcess(ProcessSpec{Command: "cat", Env: []string{entry}}); !errors.Is(err, ErrInvalidEnv) {
			t.Errorf("Env %q: error %v, want ErrInvalidEnv", entry, err)
		}
	}
}

func TestChildEnvIsExactlySpecEnv(t *testing.T) {
	t.Setenv("MCPVISOR_PARENT_SECRET", "leak")
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"nil is empty", nil, ""},
		{"given entries only", []string{"A=1", "B=x y"}, "A=1\nB=x y\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, ProcessSpec{Command: "env", Env: tt.env}) // found in the parent's PATH
			out, err := io.ReadAll(p.Stdout())
			if err != nil {
				t.Fatal(err)
			}
			stop(t, p)
			if string(out) != tt.want {
				t.Errorf("child env = %q, want %q", out, tt.want)
			}
		})
	}
}

func TestCommandFromChildPATHAndDir(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin, work := filepath.Join(root, "bin"), filepath.Join(root, "work")
	for _, d := range []string{bin, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho \"in $(pwd)\"\n"
	if err := os.WriteFile(filepath.Join(bin, "mcpvisor-test-server"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		command string
		path    string
	}{
		{"name looked up in the child's PATH", "mcpvisor-test-server", "/usr/bin:/bin:" + bin},
		{"relative path is relative to Dir", "../bin/mcpvisor-test-server", "/usr/bin:/bin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, ProcessSpec{Command: tt.command, Env: []string{"PATH=" + tt.path}, Dir: work})
			got := newLines(t, p).next()
			stop(t, p)
			if want := "in " + work; got != want {
				t.Errorf("child said %q, want %q", got, want)
			}
		})
	}
}

func TestStopIsIdempotentAndConcurrent(t *testing.T) {
	p := start(t, shell(`trap "" TERM; echo ready; while :; do sleep 1; done`, 50*time.Millisecond, 50*time.Millisecond))
	newLines(t, p).next()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = p.Stop(context.Background()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Stop #%d: %v", i, err)
		}
	}
	stop(t, p) // once more, after the fact
	if diff := cmp.Diff(ExitInfo{Code: -1, Signal: "SIGKILL"}, p.Exit()); diff != "" {
		t.Errorf("Exit() mismatch (-want +got):\n%s", diff)
	}
}

// With an ended ctx Stop goes straight to SIGKILL: hour-long graces would
// otherwise hold it.
func TestStopWithCancelledContextKillsAtOnce(t *testing.T) {
	p := start(t, shell(`trap "" TERM; echo ready; while :; do sleep 1; done`, time.Hour, time.Hour))
	newLines(t, p).next()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if diff := cmp.Diff(ExitInfo{Code: -1, Signal: "SIGKILL"}, p.Exit()); diff != "" {
		t.Errorf("Exit() mismatch (-want +got):\n%s", diff)
	}
	if m := groupMembers(p.Pid()); len(m) > 0 {
		t.Errorf("group %d still has running members %v", p.Pid(), m)
	}
}

// A second Stop whose ctx ends hurries the first one along.
func TestLaterStopCallerCanHurry(t *testing.T) {
	p := start(t, shell(`trap "" TERM; echo ready; while :; do sleep 1; done`, time.Hour, time.Hour))
	newLines(t, p).next()
	first := make(chan error, 1)
	go func() { first <- p.Stop(context.Background()) }()
	for deadline := time.Now().Add(bound); ; runtime.Gosched() {
		p.mu.Lock()
		stopping := p.stopping
		p.mu.Unlock()
		if stopping {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("first Stop never began")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := <-first; err != nil {
		t.Errorf("first Stop: %v", err)
	}
	if diff := cmp.Diff(ExitInfo{Code: -1, Signal: "SIGKILL"}, p.Exit()); diff != "" {
		t.Errorf("Exit() mismatch (-want +got):\n%s", diff)
	}
}

func TestStdoutReadUnblocksOnStop(t *testing.T) {
	p := start(t, shell(`trap "" TERM; echo ready; while :; do sleep 1; done`, 50*time.Millisecond, 50*time.Millisecond))
	newLines(t, p).next()
	readErr := make(chan error, 1)
	go func() {
		_, err := p.Stdout().Read(make([]byte, 1))
		readErr <- err
	}()
	stop(t, p)
	if err := <-readErr; err == nil {
		t.Error("Read blocked across Stop returned no error")
	}
	if _, err := p.Stdout().Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Stop: %v, want os.ErrClosed", err)
	}
}

// A process that left the group (setsid) keeps stdout and stderr open, so
// neither EOF comes; Stop must still return, closing both read ends.
func TestStopIsBoundedWhenAProcessEscapedTheGroup(t *testing.T) {
	// The escapee prints its own pid once setsid has moved it out of the group.
	p := start(t, shell(`setsid sh -c 'echo $$; exec sleep 1000' & exec cat`, time.Hour, 100*time.Millisecond))
	escaped := newLines(t, p).pid()
	t.Cleanup(func() { syscall.Kill(escaped, syscall.SIGKILL) })
	if _, pgrp, _ := procStat(escaped); pgrp != escaped {
		t.Fatalf("process %d is in group %d, not its own", escaped, pgrp)
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := p.Stdout().Read(make([]byte, 1))
		readErr <- err
	}()
	stop(t, p)
	if err := <-readErr; !errors.Is(err, os.ErrClosed) {
		t.Errorf("pending Read: %v, want os.ErrClosed", err)
	}
	if diff := cmp.Diff(ExitInfo{Code: 0}, p.Exit(), ignoreErr); diff != "" {
		t.Errorf("Exit() mismatch (-want +got):\n%s", diff)
	}
}
