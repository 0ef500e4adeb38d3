package harness

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// cpuUse is the CPU time spent during a measured window: this process's
// (the harness: the client of every contender and, for mcpvisor, the host
// in it), and its child processes' (the echo servers), user and system
// time together.
type cpuUse struct {
	user, sys time.Duration // this process: getrusage(RUSAGE_SELF)
	children  time.Duration // its child processes
}

// host is this process's CPU time, user and system.
func (u cpuUse) host() time.Duration { return u.user + u.sys }

// cpuSnapshot is the CPU time used so far by this process and its children.
type cpuSnapshot struct {
	user, sys time.Duration
	reaped    time.Duration         // children waited for: getrusage(RUSAGE_CHILDREN)
	live      map[int]time.Duration // children not yet waited for, by pid: their CPU clocks
}

// cpuStart is the snapshot that opens a window: the children first, then
// this process, so that reading /proc is not counted in the window.
func cpuStart() cpuSnapshot {
	var s cpuSnapshot
	s.reaped, s.live = childrenCPU()
	s.user, s.sys = rusage(syscall.RUSAGE_SELF)
	return s
}

// cpuSince closes the window start opened: this process first, then its
// children. A child alive at both ends counts what its clock advanced; one
// born in the window, all of its time; one waited for in the window, what
// it added to RUSAGE_CHILDREN less what its clock read at the start.
func cpuSince(start cpuSnapshot) cpuUse {
	user, sys := rusage(syscall.RUSAGE_SELF)
	reaped, live := childrenCPU()
	u := cpuUse{user: user - start.user, sys: sys - start.sys, children: reaped - start.reaped}
	for pid, t := range live {
		u.children += t - start.live[pid]
	}
	for pid, t := range start.live {
		if _, ok := live[pid]; !ok {
			u.children -= t
		}
	}
	return u
}

// rusage is the user and system time of who (RUSAGE_SELF or
// RUSAGE_CHILDREN).
func rusage(who int) (user, sys time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// childrenCPU is the CPU time of the children already waited for, and that
// of each child not yet waited for. A child waited for while /proc is
// read would count twice or not at all, so the reading is repeated (at
// most three times) until RUSAGE_CHILDREN is the same on both sides of it.
func childrenCPU() (reaped time.Duration, live map[int]time.Duration) {
	waitedFor := func() time.Duration {
		user, sys := rusage(syscall.RUSAGE_CHILDREN)
		return user + sys
	}
	for range 3 {
		before := waitedFor()
		live = liveChildrenCPU()
		if reaped = waitedFor(); reaped == before {
			break
		}
	}
	return reaped, live
}

// liveChildrenCPU is the CPU time of each process whose parent is this
// one, found in /proc, by pid.
func liveChildrenCPU() map[int]time.Duration {
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	cpu := map[int]time.Duration{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || parentPID(pid) != self {
			continue
		}
		if t, ok := processCPU(pid); ok {
			cpu[pid] = t
		}
	}
	return cpu
}

// parentPID is the parent of process pid, from /proc/<pid>/stat (-1 if
// unreadable).
func parentPID(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses,
	// so the fields are counted from its last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return -1
	}
	return ppid
}

// processCPU is the CPU time process pid has used, user and system, every
// thread (exited ones too), read from its CPU-time clock
// (clock_getcpuclockid(3)) to the nanosecond, where /proc/<pid>/stat counts
// clock ticks.
func processCPU(pid int) (time.Duration, bool) {
	const cpuClockSched = 2 // CPUCLOCK_SCHED: the scheduler's runtime of the whole process
	clock := (^int32(pid))<<3 | cpuClockSched
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(clock), uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// perHundredK is d, spent on calls calls, in seconds per 100,000 calls.
func perHundredK(d time.Duration, calls int) float64 {
	if calls == 0 {
		return 0
	}
	return d.Seconds() * 1e5 / float64(calls)
}
