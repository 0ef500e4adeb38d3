package supervision

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"
)

// prepare sets attr so that the child is cloned straight into the cell's
// cgroup (CLONE_INTO_CGROUP, Linux 5.7): nothing it does can run outside.
// The returned func closes the cgroup's directory once the child started.
func (c *Cell) prepare(attr *syscall.SysProcAttr) (done func(), err error) {
	if c.cgroup == nil {
		return func() {}, nil
	}
	f, err := c.cgroup.open()
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", c.cgroup.dir, err)
	}
	attr.UseCgroupFD, attr.CgroupFD = true, int(f.Fd())
	return func() { f.Close() }, nil
}

// cloneRefused reports whether a start failed because the kernel would not
// clone into a cgroup (before 5.7, or a seccomp filter refusing clone3):
// the start is tried again without, and the child moved in at once.
func cloneRefused(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ENOSYS, syscall.EINVAL, syscall.EPERM, syscall.EACCES,
		syscall.EBUSY, syscall.EOPNOTSUPP, syscall.E2BIG} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// unprepare undoes prepare after cloneRefused.
func (c *Cell) unprepare(attr *syscall.SysProcAttr) { attr.UseCgroupFD, attr.CgroupFD = false, 0 }

// started completes the placement once the child runs as pid, the leader
// of its own group, and enforces the limits the cgroup does not. late: the
// child was started outside the cgroup and must be moved in.
func (c *Cell) started(pid int, late bool) {
	st, _ := readStat(pid)
	c.mu.Lock()
	defer c.mu.Unlock()
	if late && c.cgroup != nil {
		if err := c.cgroup.adopt(pid); err != nil {
			_ = c.cgroup.remove()
			c.cgroup, c.mode = nil, ContainProcessGroup
			c.fallback = fmt.Sprintf("cannot move the process into its cgroup: %v", err)
			c.placement.Mode, c.placement.Cgroup = ContainProcessGroup, ""
		}
	}
	c.placement.PGID, c.placement.LeaderStart, c.placement.Session = pid, st.start, st.session
	l := c.limits
	if l.Memory > 0 && c.enforced.Memory == "" {
		// Set after exec (os/exec offers no hook between fork and exec):
		// a process the server forks in its first instants keeps no limit.
		lim := syscall.Rlimit{Cur: uint64(l.Memory), Max: uint64(l.Memory)}
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_AS,
			uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
			c.enforced.Memory = notEnforcedMemoryAS + ": " + errno.Error()
		} else {
			c.enforced.Memory = enforcedRlimitAS
		}
	}
	if l.CPU > 0 && c.enforced.CPU == "" {
		c.enforced.CPU = notEnforcedCPU
	}
	if l.Processes > 0 && c.enforced.Processes == "" {
		c.enforced.Processes = notEnforcedProcs
	}
}

// signal sends sig to every process of the cell beyond the process group:
// the whole cgroup, or every process carrying the marker.
func (c *Cell) signal(sig syscall.Signal) {
	if c.cgroup != nil {
		c.cgroup.signal(sig)
		return
	}
	marked := markedProcesses(c.marker)
	c.mu.Lock()
	c.marked = marked
	c.mu.Unlock()
	for pid, start := range marked {
		kin.mark(pid, start)
		_ = syscall.Kill(pid, sig)
	}
}

// running reports whether a process of the cell is alive: in its cgroup,
// or, in process-group mode, among those carrying its marker (found by the
// last signal, or by a scan if none was sent yet).
func (c *Cell) running() bool {
	if c.cgroup != nil {
		return c.cgroup.populated()
	}
	c.mu.Lock()
	marked := c.marked
	c.mu.Unlock()
	if marked == nil {
		marked = markedProcesses(c.marker)
		c.mu.Lock()
		c.marked = marked
		c.mu.Unlock()
	}
	for pid, start := range marked {
		if st, ok := readStat(pid); ok && st.start == start && st.live() {
			return true
		}
	}
	return false
}

// release runs once the leader was reaped and its group taken: whatever is
// left in the cell is killed (cgroup.kill, or every process with the
// marker, again until none is found), for at most d; then the cgroup is
// removed. It fails with ErrGroupSurvived if something outlived that.
func (c *Cell) release(d time.Duration) error {
	if c.cgroup != nil {
		_, err := c.cgroup.killAndRemove(d)
		return err
	}
	deadline := time.Now().Add(d)
	for {
		marked := markedProcesses(c.marker)
		if len(marked) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%d processes marked %s=%s: %w", len(marked), EnvMarker, c.marker, ErrGroupSurvived)
		}
		for pid, start := range marked {
			kin.mark(pid, start)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		waitGone(marked, time.Until(deadline))
	}
}

// outOfMemory says whether the cell's process ended for want of memory
// under its limit: the OOM killer acted in its cgroup, or, with the limit
// enforced otherwise, the child died of a SIGKILL the host did not send.
func (c *Cell) outOfMemory(exit ExitInfo, sentKill bool) bool {
	if c.limits.Memory <= 0 {
		return false
	}
	c.mu.Lock()
	enforced := c.enforced.Memory
	c.mu.Unlock()
	if c.cgroup != nil && enforced == "cgroup memory.max" {
		return c.cgroup.oomKills() > 0
	}
	return exit.Signal == "SIGKILL" && !sentKill
}

// waitGone polls until none of procs (pid → start time) is alive, for at
// most d, and reports whether they are all gone.
func waitGone(procs map[int]uint64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	interval := time.Millisecond
	for {
		alive := false
		for pid, start := range procs {
			if st, ok := readStat(pid); ok && st.start == start && st.live() {
				alive = true
				break
			}
		}
		if !alive {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(interval)
		interval = min(2*interval, 50*time.Millisecond)
	}
}

// reclaimWait bounds how long Reclaim waits for what it killed to die.
const reclaimWait = 5 * time.Second

func reclaim(ps []Placement) []Reclaimed {
	out := make([]Reclaimed, len(ps))
	errs := make([][]error, len(ps))
	live := make([]bool, len(ps)) // still to look for in /proc
	byMarker := map[string]int{}
	for i, p := range ps {
		if p.BootID != "" && bootID() != "" && p.BootID != bootID() {
			continue // rebooted since: nothing of that life runs
		}
		if p.Cgroup != "" {
			n, err := reclaimCgroup(p.Cgroup)
			if errors.Is(err, ErrInvalidPlacement) {
				out[i].Err = err
				continue
			}
			out[i].Killed += n
			if err != nil {
				errs[i] = append(errs[i], err)
			}
		}
		live[i] = true
		if p.Marker != "" {
			byMarker[p.Marker] = i
		}
	}
	self := os.Getpid()
	victims := make([]map[int]uint64, len(ps))
	eachProcess(func(pid int, st procInfo) bool {
		if pid == self || !st.live() || kin.isGroup(st.pgrp) {
			return true // a live server of this process is never another life's
		}
		owner := -1
		for i, p := range ps {
			if live[i] && p.PGID > 0 && st.pgrp == p.PGID && st.session == p.Session && st.start >= p.LeaderStart {
				owner = i
				break
			}
		}
		if owner < 0 && len(byMarker) > 0 {
			if i, ok := byMarker[markerOf(pid)]; ok && st.start >= ps[i].LeaderStart {
				owner = i
			}
		}
		if owner >= 0 {
			if victims[owner] == nil {
				victims[owner] = map[int]uint64{}
			}
			victims[owner][pid] = st.start
		}
		return true
	})
	deadline := time.Now().Add(reclaimWait)
	for i, vs := range victims {
		for pid := range vs {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				out[i].Killed++
			}
		}
	}
	for i, vs := range victims {
		if len(vs) > 0 && !waitGone(vs, time.Until(deadline)) {
			errs[i] = append(errs[i], fmt.Errorf("%s: %w", ps[i], ErrGroupSurvived))
		}
		if out[i].Err == nil {
			out[i].Err = errors.Join(errs[i]...)
		}
	}
	return out
}

// reclaimCgroup kills what is in a dead host's cell and removes it, and
// the dead host's subtree once that is empty.
func reclaimCgroup(dir string) (int, error) {
	if !isCellDir(dir) {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return 0, nil // removed already
		}
		return 0, fmt.Errorf("%w: %q is not a cgroup a host made", ErrInvalidPlacement, dir)
	}
	cell := &cgroupCell{dir: dir}
	_, err := os.Stat(filepath.Join(dir, "cgroup.kill"))
	cell.kill = err == nil
	n, err := cell.killAndRemove(reclaimWait)
	_ = os.Remove(filepath.Dir(dir))
	return n, err
}
