package actors

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// unread asks the kernel how many bytes wait in the pipe (FIONREAD, named
// TIOCINQ here, which a pipe answers at either end).
func (f fileStdin) unread() (int, bool) {
	n, ok := 0, false
	f.raw.Control(func(fd uintptr) {
		var err error
		n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
		ok = err == nil
	})
	return n, ok
}

// processCPU is the CPU time, user and system in clock ticks, that process
// pid has used (/proc/PID/stat's utime and stime; every thread's).
func processCPU(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command, field 2, is in parentheses and may hold anything: count
	// from its closing one. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	s, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	return u + s, err1 == nil && err2 == nil
}
