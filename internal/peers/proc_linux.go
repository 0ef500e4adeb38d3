//go:build linux

package peers

import "syscall"

// sysProcAttr puts the server in a process group of its own, so that the
// cleanup kills all of it, and kills it should the test binary die first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
