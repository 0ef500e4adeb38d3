//go:build unix

package peers

import (
	"os"
	"syscall"
)

// killGroup kills the process group that p leads.
func killGroup(p *os.Process) {
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		p.Kill()
	}
}
