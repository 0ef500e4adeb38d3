//go:build !unix

package supervision

import (
	"os"
	"syscall"
)

// Outside Unix there are no process groups or SIGTERM here: Stop's SIGTERM
// steps do nothing and SIGKILL kills the direct child only.

func sysProcAttr() *syscall.SysProcAttr { return nil }

func (p *Process) signalGroup(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		_ = p.cmd.Process.Kill()
	}
}

func (p *Process) groupRunning() bool { return false }

func signalOf(*os.ProcessState) string { return "" }
