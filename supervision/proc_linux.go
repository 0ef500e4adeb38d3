package supervision

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:   true,            // own process group, so the ladder can signal everything the child starts
		Pdeathsig: syscall.SIGKILL, // the child dies with us even if Stop never runs
	}
}

// groupHasLiveMember scans /proc for a process in group pgid that is not a
// zombie. If /proc cannot be read it assumes there is one.
func groupHasLiveMember(pgid int) bool {
	found := false
	ok := eachProcess(func(pid int, st procInfo) bool {
		found = st.pgrp == pgid && st.live()
		return !found
	})
	return found || !ok
}

// procInfo is what /proc/<pid>/stat says of a process that the
// containment needs.
type procInfo struct {
	state   byte
	ppid    int
	pgrp    int
	session int
	start   uint64 // clock ticks after boot
}

// live: neither a zombie nor dead.
func (s procInfo) live() bool { return s.state != 'Z' && s.state != 'X' }

// readStat reads /proc/<pid>/stat; ok is false when the process is gone.
func readStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	return parseProcInfo(b)
}

// parseProcInfo parses "pid (comm) state ppid pgrp session ... starttime
// ...", where comm may itself hold spaces and parentheses, so fields are
// counted from the last ')'. starttime is the 22nd field.
func parseProcInfo(stat []byte) (procInfo, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, false
	}
	var st procInfo
	var err error
	st.state = f[0][0]
	ints := []*int{&st.ppid, &st.pgrp, &st.session}
	for k, p := range ints {
		if *p, err = strconv.Atoi(string(f[1+k])); err != nil {
			return procInfo{}, false
		}
	}
	if st.start, err = strconv.ParseUint(string(f[19]), 10, 64); err != nil {
		return procInfo{}, false
	}
	return st, true
}

// parseStat returns the state and process group from /proc/<pid>/stat.
func parseStat(stat []byte) (state byte, pgrp int, ok bool) {
	st, ok := parseProcInfo(stat)
	return st.state, st.pgrp, ok
}

// eachProcess calls fn with every process in /proc until fn returns false.
// It reports false if /proc could not be read.
func eachProcess(fn func(pid int, st procInfo) bool) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := readStat(pid)
		if !ok {
			continue // gone meanwhile
		}
		if !fn(pid, st) {
			break
		}
	}
	return true
}

// markerOf is EnvMarker's value in pid's environment, "" if none: the
// environment it was started with, which is what its own children
// inherited unless they were given another. (With EnvMarker set twice, the
// last is the one the process sees.)
func markerOf(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	prefix := []byte(EnvMarker + "=")
	marker := ""
	for len(b) > 0 {
		entry, rest, _ := bytes.Cut(b, []byte{0})
		if v, ok := bytes.CutPrefix(entry, prefix); ok {
			marker = string(v)
		}
		b = rest
	}
	return marker
}

// markedProcesses lists the live processes other than the host that carry
// marker, with their start times.
func markedProcesses(marker string) map[int]uint64 {
	self := os.Getpid()
	out := map[int]uint64{}
	eachProcess(func(pid int, st procInfo) bool {
		if pid != self && st.live() && markerOf(pid) == marker {
			out[pid] = st.start
		}
		return true
	})
	return out
}

var bootIDOnce = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// bootID is the kernel's boot id, "" if unknown.
func bootID() string { return bootIDOnce() }
