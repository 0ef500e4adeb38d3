//go:build linux

package supervision

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process a test watches: its pid and start time, so a recycled pid is
// never taken for it.
type watched struct {
	Pid   int
	Start uint64
}

func watch(t *testing.T, pid int) watched {
	t.Helper()
	st, ok := readStat(pid)
	if !ok {
		t.Fatalf("process %d is gone already", pid)
	}
	return watched{pid, st.start}
}

// alive: the same process, not a zombie.
func (w watched) alive() bool {
	st, ok := readStat(w.Pid)
	return ok && st.start == w.Start && st.live()
}

// survivors counts those of ws still alive once d has passed without all
// of them dying (polling /proc: there is no notification for the death of
// processes we are not the parent of).
func survivors(ws []watched, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		n := 0
		for _, w := range ws {
			if w.alive() {
				n++
			}
		}
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// escapeeScript starts a background child in the group and a grandchild
// that leaves it with setsid, prints their pids, then serves cat on stdin
// as an sh -c wrapper that did not exec would.
const escapeeScript = `sleep 1000 & a=$!; setsid sleep 1001 & b=$!; echo "$a $b"; cat; echo done`

// modes lists the containments to test: process groups always, cgroups
// where this host can create one.
func modes(t *testing.T) map[ContainmentMode]ContainmentOptions {
	out := map[ContainmentMode]ContainmentOptions{ContainProcessGroup: {ProcessGroupsOnly: true}}
	c := NewContainment(ContainmentOptions{})
	if c.Mode() == ContainCgroup {
		out[ContainCgroup] = ContainmentOptions{}
	} else {
		t.Logf("no cgroup containment here: %s", c.Fallback())
	}
	c.Close()
	return out
}

func newContainment(t *testing.T, opts ContainmentOptions) *Containment {
	t.Helper()
	c := NewContainment(opts)
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Containment.Close: %v", err)
		}
	})
	return c
}

func TestStopTakesProcessesThatLeftTheGroup(t *testing.T) {
	for mode, opts := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			c := newContainment(t, opts)
			cell, err := c.NewCell("wrap", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if cell.Mode() != mode {
				t.Fatalf("cell mode %s, want %s (%s)", cell.Mode(), mode, cell.Fallback())
			}
			spec := shell(escapeeScript, 50*time.Millisecond, 50*time.Millisecond)
			spec.Cell = cell
			p := start(t, spec)
			l := newLines(t, p)
			var a, b int
			if _, err := fmt.Sscan(l.next(), &a, &b); err != nil {
				t.Fatal(err)
			}
			if !leftGroup(b, p.Pid()) {
				t.Fatalf("the setsid child %d is still in the group: the test proves nothing", b)
			}
			ws := []watched{watch(t, p.Pid()), watch(t, a), watch(t, b)}
			if err := p.Stop(context.Background()); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if n := survivors(ws, 0); n != 0 {
				t.Errorf("%d of the wrapper, its child and its setsid grandchild survived Stop", n)
			}
			if pl := cell.Placement(); pl.Cgroup != "" {
				if _, err := os.Stat(pl.Cgroup); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("cgroup %s left after Stop (%v)", pl.Cgroup, err)
				}
			}
		})
	}
}

// TestReclaimAfterHostKilled plays a host (the test binary, re-executed)
// that starts the wrapper in a cell and is then SIGKILLed: what it left is
// found from its Placement alone and killed.
func TestReclaimAfterHostKilled(t *testing.T) {
	for mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			host := exec.Command(os.Args[0], "-test.run=^$")
			host.Env = append(os.Environ(), helperHostEnv+"="+string(mode))
			out, err := host.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			host.Stderr = os.Stderr
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { host.Process.Kill(); host.Wait() })
			var report helperReport
			line, err := bufio.NewReader(out).ReadBytes('\n')
			if err != nil {
				t.Fatalf("reading the host's report: %v", err)
			}
			if err := json.Unmarshal(line, &report); err != nil {
				t.Fatalf("report %q: %v", line, err)
			}
			if report.Placement.Mode != mode {
				t.Fatalf("host contained by %s, want %s", report.Placement.Mode, mode)
			}
			host.Process.Kill()
			host.Wait()

			// The leader dies with the host (Pdeathsig); its child and the
			// setsid grandchild do not: that is what a restart must reclaim.
			left := report.Procs[1:]
			if n := survivors(left, 0); n != len(left) {
				t.Fatalf("%d of %d descendants alive after the host's death; want all, or the test proves nothing", n, len(left))
			}
			res := Reclaim(report.Placement)
			killed, err := res[0].Killed, res[0].Err
			if err != nil {
				t.Fatalf("Reclaim: %v", err)
			}
			if n := survivors(report.Procs, 0); n != 0 {
				t.Errorf("%d survivors after Reclaim (killed %d)", n, killed)
			}
			if killed < len(left) {
				t.Errorf("Reclaim says it killed %d, want at least %d", killed, len(left))
			}
			if dir := report.Placement.Cgroup; dir != "" {
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("cgroup %s left after Reclaim", dir)
				}
				if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the dead host's subtree %s left after Reclaim", filepath.Dir(dir))
				}
			}
		})
	}
}

// helperHostEnv, when set to a ContainmentMode, makes the test binary the
// host of TestReclaimAfterHostKilled (see TestMain).
const helperHostEnv = "SUPERVISION_TEST_HOST"

type helperReport struct {
	Placement Placement
	Procs     []watched // the leader, its child, the setsid grandchild
}

// maybeHelperHost, in the test binary started by TestReclaimAfterHostKilled,
// starts escapeeScript in a cell, reports, and waits to be killed.
func maybeHelperHost() {
	mode := ContainmentMode(os.Getenv(helperHostEnv))
	if mode == "" {
		return
	}
	c := NewContainment(ContainmentOptions{ProcessGroupsOnly: mode == ContainProcessGroup})
	cell, err := c.NewCell("wrap", Limits{})
	if err != nil {
		panic(err)
	}
	spec := shell(escapeeScript, time.Second, time.Second)
	spec.Cell = cell
	p, err := StartProcess(spec)
	if err != nil {
		panic(err)
	}
	var a, b int
	if _, err := fmt.Fscan(p.Stdout(), &a, &b); err != nil {
		panic(err)
	}
	if !leftGroup(b, p.Pid()) {
		panic("the setsid child stayed in the group")
	}
	r := helperReport{Placement: cell.Placement()}
	for _, pid := range []int{p.Pid(), a, b} {
		st, _ := readStat(pid)
		r.Procs = append(r.Procs, watched{pid, st.start})
	}
	json.NewEncoder(os.Stdout).Encode(r)
	select {}
}

func TestReclaimRefusesForeignCgroup(t *testing.T) {
	err := Reclaim(Placement{Mode: ContainCgroup, Cgroup: "/proc"})[0].Err
	if !errors.Is(err, ErrInvalidPlacement) {
		t.Errorf("Reclaim of /proc: %v, want ErrInvalidPlacement", err)
	}
}

// A record's process group matches only processes in the recorded session
// that started no earlier than the recorded leader, on the same boot: a
// recycled group id is left alone. A live server of this process is never
// taken, whatever the record says.
func TestReclaimChecksGroupIdentity(t *testing.T) {
	// A group leader this package did not start, as a dead host's would be.
	leader := exec.Command("sleep", "1000")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { leader.Wait(); close(exited) }()
	t.Cleanup(func() { leader.Process.Kill(); <-exited })
	w := watch(t, leader.Process.Pid)
	st, _ := readStat(w.Pid)
	match := Placement{Mode: ContainProcessGroup, PGID: w.Pid, LeaderStart: st.start, Session: st.session, BootID: bootID()}
	otherSession := match
	otherSession.Session++
	startedEarlier := match // the recorded leader started after this one
	startedEarlier.LeaderStart++
	otherBoot := match
	otherBoot.BootID = "another-boot"
	for i, res := range Reclaim(otherSession, startedEarlier, otherBoot) {
		if res.Killed != 0 || res.Err != nil {
			t.Errorf("placement %d: killed %d, %v", i, res.Killed, res.Err)
		}
	}
	if !w.alive() {
		t.Fatal("a recycled group id's process was killed")
	}

	server := start(t, shell("cat", time.Second, time.Second))
	sst, _ := readStat(server.Pid())
	res := Reclaim(Placement{Mode: ContainProcessGroup, PGID: server.Pid(), LeaderStart: sst.start, Session: sst.session, BootID: bootID()})
	if res[0].Killed != 0 || !watch(t, server.Pid()).alive() {
		t.Fatalf("a live server of this process was reclaimed: %+v", res)
	}

	// The record that does match takes it.
	if res := Reclaim(match); res[0].Killed != 1 || res[0].Err != nil {
		t.Errorf("matching placement: %+v, want one killed", res)
	}
	select {
	case <-exited:
	case <-time.After(bound):
		t.Error("the matching group's leader is still running")
	}
}

func TestStartMissingWorkDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, says string }{
		{dir, strconv.Quote(dir) + " does not exist"},
		{file, strconv.Quote(file) + " is not a directory"},
	} {
		_, err := StartProcess(ProcessSpec{Command: "cat", Dir: tc.dir, Env: BaseEnv(os.Environ())})
		if !errors.Is(err, ErrWorkDir) {
			t.Errorf("Dir %s: error %v, want ErrWorkDir", tc.dir, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "working directory: "+tc.says) || strings.Contains(msg, "fork/exec") {
			t.Errorf("Dir %s: error %q does not say %q", tc.dir, msg, "working directory: "+tc.says)
		}
	}
}

func TestLimitsWithoutCgroupControllers(t *testing.T) {
	c := newContainment(t, ContainmentOptions{ProcessGroupsOnly: true})
	lim := Limits{Memory: 256 << 20, CPU: 0.5, Processes: 32}
	cell, err := c.NewCell("limited", lim)
	if err != nil {
		t.Fatal(err)
	}
	// grep runs once StartProcess has returned, so after the limit was set
	// on the shell: the limit reaches what the server starts.
	spec := shell(`read go; grep "Max address space" /proc/self/limits; cat`, time.Second, time.Second)
	spec.Cell = cell
	p := start(t, spec)
	if _, err := p.Stdin().WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(newLines(t, p).next())
	if len(got) < 5 || got[3] != strconv.Itoa(256<<20) {
		t.Errorf("child's address space limit: %q, want %d", got, 256<<20)
	}
	e := cell.Enforcement()
	if e.Memory != enforcedRlimitAS {
		t.Errorf("memory enforced by %q", e.Memory)
	}
	if !strings.HasPrefix(e.CPU, "not enforced") || !strings.HasPrefix(e.Processes, "not enforced") {
		t.Errorf("cpu %q, processes %q: want both not enforced", e.CPU, e.Processes)
	}
	if lines := e.Lines(lim); len(lines) != 3 || !strings.HasPrefix(lines[0], "memory 256 MiB: RLIMIT_AS") {
		t.Errorf("Lines: %q", lines)
	}
}

func TestOutOfMemoryWithoutCgroup(t *testing.T) {
	c := newContainment(t, ContainmentOptions{ProcessGroupsOnly: true})
	run := func(script string, lim Limits) ExitInfo {
		t.Helper()
		cell, err := c.NewCell("oom", lim)
		if err != nil {
			t.Fatal(err)
		}
		spec := shell(script, time.Second, time.Second)
		spec.Cell = cell
		p := start(t, spec)
		waitDone(t, p)
		return p.Exit()
	}
	// The kernel's OOM killer sends SIGKILL; so does this child, to itself.
	exit := run("kill -KILL $$", Limits{Memory: 64 << 20})
	if !exit.OutOfMemory || exit.MemoryLimit != 64<<20 {
		t.Errorf("SIGKILL under a memory limit: %+v, want OutOfMemory", exit)
	}
	if got, want := exit.String(), "out of memory (limit 64 MiB): killed by SIGKILL"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if exit := run("kill -KILL $$", Limits{}); exit.OutOfMemory {
		t.Errorf("SIGKILL without a memory limit taken for OOM: %+v", exit)
	}
	if exit := run("exit 3", Limits{Memory: 64 << 20}); exit.OutOfMemory {
		t.Errorf("exit 3 taken for OOM: %+v", exit)
	}
	// A SIGKILL the host sent is not an OOM kill.
	cell, _ := c.NewCell("stopped", Limits{Memory: 64 << 20})
	spec := shell(`trap "" TERM; cat`, time.Millisecond, time.Millisecond)
	spec.Cell = cell
	p := start(t, spec)
	p.Stdin().Close()
	p.Stop(context.Background())
	if exit := p.Exit(); exit.OutOfMemory {
		t.Errorf("killed by Stop taken for OOM: %+v", exit)
	}
}

func TestSubreaperReapsAdoptedOrphansOnly(t *testing.T) {
	s, err := StartSubreaper()
	if err != nil {
		t.Skipf("no subreaper: %v", err)
	}
	defer s.Close()
	c := newContainment(t, ContainmentOptions{ProcessGroupsOnly: true})
	cell, err := c.NewCell("orphans", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// The subshell starts sleep and exits: sleep is an orphan.
	spec := shell(`(sleep 1000 & echo $!); cat`, time.Second, time.Second)
	spec.Cell = cell
	p := start(t, spec)
	orphan := watch(t, pidLine(t, newLines(t, p).next()))
	st, _ := readStat(orphan.Pid)
	for deadline := time.Now().Add(bound); st.ppid != os.Getpid(); st, _ = readStat(orphan.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the orphan's parent is %d, not this process (%d)", st.ppid, os.Getpid())
		}
		time.Sleep(time.Millisecond)
	}

	// A child some other code started, exited and not waited for yet.
	other := exec.Command("sh", "-c", "exit 3")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(bound); ; {
		if st, _ := readStat(other.Process.Pid); st.state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other child did not exit")
		}
		time.Sleep(time.Millisecond)
	}
	syscall.Kill(orphan.Pid, syscall.SIGKILL)
	// The orphan, a zombie now, is reaped (by the SIGCHLD pass, or this one).
	for deadline := time.Now().Add(bound); ; {
		reapOrphans()
		if _, ok := readStat(orphan.Pid); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed orphan was not reaped")
		}
		time.Sleep(time.Millisecond)
	}
	if err := other.Wait(); err == nil || other.ProcessState == nil || other.ProcessState.ExitCode() != 3 {
		t.Errorf("the other child's Wait: %v (state %v): its status was taken", err, other.ProcessState)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Error(err)
	}
	if p.Exit().Err != nil {
		t.Errorf("the server's own exit: %v", p.Exit().Err)
	}
}

// leftGroup waits until pid, started by a wrapper that leads group pgid,
// has called setsid (the wrapper prints its pid before it has).
func leftGroup(pid, pgid int) bool {
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if st, ok := readStat(pid); ok && st.pgrp != pgid {
			return true
		}
	}
	return false
}

func pidLine(t *testing.T, s string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("not a pid: %q", s)
	}
	return pid
}
