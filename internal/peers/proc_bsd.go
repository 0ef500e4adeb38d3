//go:build unix && !linux

package peers

import "syscall"

// sysProcAttr puts the server in a process group of its own, so that the
// cleanup kills all of it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
