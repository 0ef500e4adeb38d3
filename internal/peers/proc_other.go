//go:build !unix

package peers

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the process (no process groups here).
func killGroup(p *os.Process) { p.Kill() }
