//go:build unix

package testenv

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time, user and system, this process has used: every
// goroutine's, child processes' not.
func ProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
