package supervision

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults applied to a ProcessSpec by StartProcess.
const (
	DefaultStopGrace = 2 * time.Second
	DefaultTermGrace = 2 * time.Second
)

// ProcessSpec describes one child process. StartProcess copies it; zero
// durations mean their defaults.
type ProcessSpec struct {
	// Command is the program: a path, or a name looked up in the PATH of Env
	// (or, when Env has no PATH, the parent's PATH). A relative path is
	// relative to Dir.
	Command string
	Args    []string
	// Env is the child's complete environment, KEY=VALUE. Nil means an empty
	// environment, not the parent's: build it with BaseEnv and MergeEnv.
	Env []string
	// Dir is the working directory; empty means the parent's.
	Dir string
	// StopGrace is how long Stop waits after closing stdin before SIGTERM.
	// Default 2s.
	StopGrace time.Duration
	// TermGrace is how long Stop waits after SIGTERM before SIGKILL, and the
	// same again for leftover group members. Default 2s.
	TermGrace time.Duration
	// Stderr is called on the pump goroutine for every line the child writes
	// to stderr, without its line ending. The slice is the callee's to keep.
	// Lines longer than MaxStderrLine are cut to MaxStderrLine bytes and end
	// in StderrTruncated; the rest of such a line is dropped. Stderr should
	// not block: while it runs the pipe fills and the child may stall. Nil
	// means stderr is drained and discarded.
	Stderr func(line []byte)
	// Cell, from Containment.NewCell, holds the child and everything it
	// starts: the child is started in the cell's cgroup (or, in
	// process-group mode, with EnvMarker added to Env), its limits are
	// enforced, and Stop kills whatever is left in it before returning.
	// The Process owns the cell from StartProcess on. Nil: the process
	// group alone, as before containment existed.
	Cell *Cell
}

func (s ProcessSpec) withDefaults() ProcessSpec {
	if s.StopGrace <= 0 {
		s.StopGrace = DefaultStopGrace
	}
	if s.TermGrace <= 0 {
		s.TermGrace = DefaultTermGrace
	}
	if s.Env == nil {
		s.Env = []string{} // exec.Cmd would read nil as "the parent's environment"
	}
	return s
}

// Process is one child process, owned: its process group, its pipes, the
// goroutine that reaps it and the goroutine that drains its stderr. Every
// Process must be stopped with Stop, which is the join point for both
// goroutines; its methods are safe for concurrent use.
type Process struct {
	spec   ProcessSpec
	cmd    *exec.Cmd
	pgid   int      // == pid: the child leads its own group (Setpgid)
	stdin  *os.File // our write end of the child's stdin
	stdout *os.File // our read end of the child's stdout
	stderr *os.File // our read end of the child's stderr, read by the pump

	done     chan struct{} // closed by the reaper once the child is reaped
	exit     ExitInfo      // written by the reaper before done is closed
	pumpDone chan struct{} // closed when the stderr pump has returned

	mu        sync.Mutex
	stopping  bool
	stopped   chan struct{} // closed when the first Stop has finished
	stopErr   error         // written before stopped is closed
	hurry     chan struct{} // closed when any Stop caller's ctx ends
	hurryOnce sync.Once
	groupGone atomic.Bool // the group was seen empty after reaping; never signal it again
	sentKill  atomic.Bool // the host sent SIGKILL: the child's death by it is no OOM kill
	cell      *Cell       // nil: process group only
}

// StartProcess starts the child described by spec in its own process group,
// with SIGKILL as its parent-death signal on Linux, and in spec.Cell when
// there is one. Its stdin and stdout are pipes made with os.Pipe, so the
// caller's ends are pollable: a Read blocked on Stdout returns once Stop
// closes it, and no exec.Cmd copy goroutines exist. Stderr is always
// drained by a pump goroutine the Process owns. A missing command gives an
// error that names it and wraps ErrCommandNotFound; a missing working
// directory one that names the directory and wraps ErrWorkDir.
//
// The parent-death signal fires when the OS thread that started the child
// exits, and reaches the direct child only; Stop is what takes the group,
// and a Cell what takes processes that left it.
func StartProcess(spec ProcessSpec) (p *Process, err error) {
	spec = spec.withDefaults()
	if spec.Cell != nil {
		defer func() {
			if err != nil {
				spec.Cell.Discard()
			}
		}()
	}
	if err := checkEnv(spec.Env); err != nil {
		return nil, fmt.Errorf("start %q: %w", spec.Command, err)
	}
	if err := checkDir(spec.Dir); err != nil {
		return nil, fmt.Errorf("start %q: %w", spec.Command, err)
	}
	path, err := findCommand(spec.Command, spec.Dir, spec.Env)
	if err != nil {
		return nil, err
	}
	env := spec.Env
	if spec.Cell != nil {
		env = append(slices.Clip(env), EnvMarker+"="+spec.Cell.marker)
	}

	var files []*os.File // every pipe end, closed again if the start fails
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	childIn, stdin, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("start %q: stdin pipe: %w", spec.Command, err)
	}
	stdout, childOut, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("start %q: stdout pipe: %w", spec.Command, err)
	}
	stderr, childErr, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("start %q: stderr pipe: %w", spec.Command, err)
	}

	// The pipe ends given to the child are *os.File, so exec.Cmd hands them
	// over as they are and starts no copy goroutines; exec.Cmd.WaitDelay
	// would have nothing to bound. The stderr pump is bounded by Stop.
	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{spec.Command}, spec.Args...),
		Env:         env,
		Dir:         spec.Dir,
		Stdin:       childIn,
		Stdout:      childOut,
		Stderr:      childErr,
		SysProcAttr: sysProcAttr(),
	}
	if err := startIn(cmd, spec.Cell); err != nil {
		closeAll()
		if errors.Is(err, syscall.ENOENT) && checkDir(spec.Dir) != nil {
			err = checkDir(spec.Dir) // removed since it was checked
		}
		return nil, fmt.Errorf("start %q: %w", spec.Command, err)
	}
	// The child holds its own copies now; ours would keep the pipes open.
	childIn.Close()
	childOut.Close()
	childErr.Close()

	p = &Process{
		spec:     spec,
		cmd:      cmd,
		pgid:     cmd.Process.Pid,
		stdin:    stdin,
		stdout:   stdout,
		stderr:   stderr,
		done:     make(chan struct{}),
		pumpDone: make(chan struct{}),
		stopped:  make(chan struct{}),
		hurry:    make(chan struct{}),
		cell:     spec.Cell,
	}
	go p.reap()
	go p.pump()
	return p, nil
}

// startIn starts cmd in cell (nil: none), registering the child as a
// leader for the subreaper before it can be taken for an orphan.
func startIn(cmd *exec.Cmd, cell *Cell) error {
	kin.spawn.RLock()
	defer kin.spawn.RUnlock()
	late := false
	if cell != nil {
		done, err := cell.prepare(cmd.SysProcAttr)
		if err != nil {
			return err
		}
		err = cmd.Start()
		done()
		if err != nil && cloneRefused(err) {
			// No CLONE_INTO_CGROUP here: start outside, move in at once.
			cell.unprepare(cmd.SysProcAttr)
			late, err = true, cmd.Start()
		}
		if err != nil {
			return err
		}
	} else if err := cmd.Start(); err != nil {
		return err
	}
	kin.addLeader(cmd.Process.Pid)
	if cell != nil {
		cell.started(cmd.Process.Pid, late)
	}
	return nil
}

// reap waits for the child and records how it ended.
func (p *Process) reap() {
	err := p.cmd.Wait()
	kin.leaderReaped(p.pgid)
	p.exit = exitInfo(p.cmd.ProcessState, err)
	if p.cell != nil && p.cell.outOfMemory(p.exit, p.sentKill.Load()) {
		p.exit.OutOfMemory, p.exit.MemoryLimit = true, p.cell.limits.Memory
	}
	close(p.done)
}

// pump drains stderr until EOF, or until Stop closes the read end.
func (p *Process) pump() {
	defer close(p.pumpDone)
	defer p.stderr.Close()
	pumpLines(p.stderr, p.spec.Stderr)
}

// Pid returns the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.pgid }

// Cell returns the cell the process runs in; nil if it was started without.
func (p *Process) Cell() *Cell { return p.cell }

// StderrDone returns a channel closed once the stderr pump has read
// everything: the child and whatever it started closed stderr, or Stop
// closed it.
func (p *Process) StderrDone() <-chan struct{} { return p.pumpDone }

// Stdin returns the write end of the child's stdin, for the caller to write
// frames to. Stop closes it.
func (p *Process) Stdin() *os.File { return p.stdin }

// Stdout returns the read end of the child's stdout, for the caller to read
// frames from. It reads EOF once every writer (the child and anything it
// started) is gone; Stop closes it, which unblocks a pending Read.
func (p *Process) Stdout() *os.File { return p.stdout }

// Done returns a channel closed once the child has exited and been reaped.
// Its orphans, if any, may still be running: Stop or Kill takes them.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit reports how the child ended. It is valid once Done is closed; before
// that it returns an ExitInfo whose Err is ErrNotExited.
func (p *Process) Exit() ExitInfo {
	select {
	case <-p.done:
		return p.exit
	default:
		return ExitInfo{Code: -1, Err: ErrNotExited}
	}
}

// Kill sends SIGKILL to the child's whole process group at once, and to
// its whole cell, and returns without waiting. Use it when the child has already died, to take the
// orphans it left (they would otherwise hold stdout open). Stop must still
// be called. Kill after a Stop that returned nil does nothing, so it never
// signals a group id the kernel may have handed out again.
func (p *Process) Kill() {
	if p.groupGone.Load() {
		return
	}
	p.signalGroup(syscall.SIGKILL)
}

// Stop runs the stdio stop ladder of the MCP lifecycle (shutdown, stdio) and
// returns only when the child has been reaped, nothing started in its
// process group or its cell is left running (the cell's cgroup removed),
// and the stderr pump has exited; then it closes Stdout. It may be called more than once and concurrently: later
// callers wait for the first and get its result.
//
// ctx bounds the ladder: once it ends (for any caller), Stop jumps straight
// to SIGKILL of the group and reaps. What it still waits for then cannot be
// refused: the reaping of a SIGKILLed child, and at most TermGrace for the
// rest of the group to die. The returned error is nil unless members of the
// group survived SIGKILL (ErrGroupSurvived); how the child ended is in Exit.
func (p *Process) Stop(ctx context.Context) error {
	p.mu.Lock()
	first := !p.stopping
	p.stopping = true
	p.mu.Unlock()
	if !first {
		select {
		case <-p.stopped:
		case <-ctx.Done():
			p.hurryUp()
			<-p.stopped
		}
		return p.stopErr
	}
	defer close(p.stopped)
	p.stopErr = p.stop(ctx)
	return p.stopErr
}

func (p *Process) stop(ctx context.Context) error {
	defer context.AfterFunc(ctx, p.hurryUp)()
	var termSent time.Time
	killSent := false

	// 1. "close the child's stdin"
	p.stdin.Close()
	// 2. "wait for it to exit"
	if !p.await(p.done, p.spec.StopGrace) {
		if !p.hurried() {
			// 3. "send SIGTERM if it has not exited within a reasonable time"
			// — to the process group, so npx/uvx/sh -c wrappers' children hear it too.
			p.signalGroup(syscall.SIGTERM)
			termSent = time.Now()
		}
		// 4. wait TermGrace after SIGTERM.
		if !p.await(p.done, p.spec.TermGrace) {
			// 5. "send SIGKILL if it is still alive a reasonable time after SIGTERM"
			// — again to the whole group.
			p.signalGroup(syscall.SIGKILL)
			killSent = true
		}
	}
	// 6. Wait for the child to be reaped. Nothing is left that it could refuse.
	<-p.done

	err := p.takeGroup(termSent, killSent)
	if p.cell != nil {
		// Whatever left the group (setsid, a double fork) and is still in
		// the cell: the group's ladder is done, so SIGKILL at once.
		p.sentKill.Store(true)
		if cerr := p.cell.release(p.spec.TermGrace); cerr != nil && err == nil {
			err = fmt.Errorf("%q: %w", p.spec.Command, cerr)
		}
	}
	kin.groupStopped(p.pgid)
	p.joinPump()
	p.stdout.Close()
	return err
}

// takeGroup runs the tail of the ladder for whatever is left in the child's
// process group once the child itself has been reaped: SIGTERM, TermGrace,
// SIGKILL. A step already taken by the ladder is not repeated.
func (p *Process) takeGroup(termSent time.Time, killSent bool) error {
	if !p.groupRunning() {
		p.groupGone.Store(true)
		return nil
	}
	if !killSent && !p.hurried() {
		if termSent.IsZero() {
			p.signalGroup(syscall.SIGTERM)
			termSent = time.Now()
		}
		if p.awaitGroup(time.Until(termSent.Add(p.spec.TermGrace)), p.hurry) {
			p.groupGone.Store(true)
			return nil
		}
	}
	p.signalGroup(syscall.SIGKILL)
	// SIGKILL cannot be refused, but it is delivered asynchronously: wait
	// (bounded) until no member is running any more.
	if p.awaitGroup(p.spec.TermGrace, nil) {
		p.groupGone.Store(true)
		return nil
	}
	return fmt.Errorf("process group %d of %q: %w", p.pgid, p.spec.Command, ErrGroupSurvived)
}

// joinPump waits for the stderr pump. Every writer in the group is gone by
// now, so EOF is normally at hand; but a process that left the group
// (setsid) may still hold the pipe, so after TermGrace, or at once when
// hurried, Stop closes the read end to end the pump.
func (p *Process) joinPump() {
	if !p.await(p.pumpDone, p.spec.TermGrace) {
		p.stderr.Close()
		<-p.pumpDone
	}
}

// await waits up to d for ch to close, and reports whether it did. It
// gives up early when Stop is hurried.
func (p *Process) await(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	if p.hurried() {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	case <-p.hurry:
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}

// awaitGroup polls until no member of the group is running, for at most d
// or until hurry closes, and reports whether the group is gone. There is no
// notification for the death of processes we are not the parent of.
func (p *Process) awaitGroup(d time.Duration, hurry <-chan struct{}) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	interval := time.Millisecond
	for {
		if !p.groupRunning() {
			return true
		}
		tick := time.NewTimer(interval)
		select {
		case <-deadline.C:
			tick.Stop()
			return !p.groupRunning()
		case <-hurry:
			tick.Stop()
			return !p.groupRunning()
		case <-tick.C:
		}
		interval = min(2*interval, 50*time.Millisecond)
	}
}

func (p *Process) hurryUp() { p.hurryOnce.Do(func() { close(p.hurry) }) }

func (p *Process) hurried() bool {
	select {
	case <-p.hurry:
		return true
	default:
		return false
	}
}

// checkDir says what is wrong with a working directory, if anything: the
// kernel's own report of a chdir that fails in the child is a bare
// "fork/exec <command>: no such file or directory".
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %q does not exist", ErrWorkDir, dir)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrWorkDir, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: %q is not a directory", ErrWorkDir, dir)
	}
	return nil
}

// checkEnv rejects entries the kernel would refuse or misread.
func checkEnv(env []string) error {
	for _, kv := range env {
		key, _, ok := strings.Cut(kv, "=")
		if !ok || key == "" || strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("%w: %q", ErrInvalidEnv, kv)
		}
	}
	return nil
}

// findCommand resolves name the way the child's own shell would: a name with
// a slash is a path (relative to dir), any other is looked up in the PATH of
// env, falling back to the parent's PATH when env has none. Relative PATH
// entries are skipped (they would resolve against dir, as exec.ErrDot warns).
func findCommand(name, dir string, env []string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("start: empty command: %w", ErrCommandNotFound)
	}
	if strings.ContainsRune(name, '/') || (runtime.GOOS == "windows" && strings.ContainsRune(name, '\\')) {
		path := name
		if !filepath.IsAbs(path) && dir != "" {
			path = filepath.Join(dir, path)
		}
		path, err := filepath.Abs(path)
		if err == nil {
			err = executable(path)
		}
		if err != nil {
			return "", fmt.Errorf("start %q: %w: %w", name, ErrCommandNotFound, err)
		}
		return path, nil
	}
	pathList, ok := lookupEnv(env, "PATH")
	if !ok {
		pathList = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(pathList) {
		path := filepath.Join(d, name)
		if filepath.IsAbs(path) && executable(path) == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("start %q: %w in PATH %q", name, ErrCommandNotFound, pathList)
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}

// lookupEnv returns the last value of key in env, as the child would see it.
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// ExitInfo says how a child ended.
type ExitInfo struct {
	// Code is the exit status, or -1 if the child was killed by a signal or
	// could not be waited for.
	Code int
	// Signal names the signal that killed the child, e.g. "SIGKILL"; empty
	// if it exited by itself.
	Signal string
	// Err is a failure to wait for the child (not its exit status), or
	// ErrNotExited from Exit before Done.
	Err error
	// OutOfMemory: the child ran out of memory under its cell's limit. In
	// a cgroup with memory.max, the OOM killer killed a process of the cell
	// (memory.events oom_kill); otherwise the child died of a SIGKILL the
	// host did not send while a memory limit was set, which is what the
	// kernel's OOM killer does.
	OutOfMemory bool
	// MemoryLimit is the cell's memory limit, when OutOfMemory.
	MemoryLimit int64
}

// String reads like "exit status 3", "killed by SIGKILL" or "out of memory
// (limit 64 MiB): killed by SIGKILL".
func (e ExitInfo) String() string {
	if e.OutOfMemory {
		plain := e
		plain.OutOfMemory = false
		return fmt.Sprintf("out of memory (limit %s): %s", FormatBytes(e.MemoryLimit), plain)
	}
	switch {
	case e.Signal != "":
		return "killed by " + e.Signal
	case e.Err != nil:
		return e.Err.Error()
	default:
		return fmt.Sprintf("exit status %d", e.Code)
	}
}

func exitInfo(state *os.ProcessState, err error) ExitInfo {
	if state == nil {
		return ExitInfo{Code: -1, Err: err}
	}
	info := ExitInfo{Code: state.ExitCode(), Signal: signalOf(state)}
	if err != nil {
		if _, isExit := errors.AsType[*exec.ExitError](err); !isExit {
			info.Err = err
		}
	}
	return info
}
