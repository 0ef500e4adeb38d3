package supervision

import (
	"bytes"
	"os"
	"strconv"
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
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		state, group, ok := parseStat(stat)
		if ok && group == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// parseStat returns the state and process group from /proc/<pid>/stat:
// "pid (comm) state ppid pgrp ...", where comm may itself hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(stat []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], pgrp, true
}
