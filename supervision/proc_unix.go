//go:build unix

package supervision

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// signalGroup sends sig to every member of the child's process group, and
// to the child itself in case it moved to another group (os.Process.Signal
// uses a pidfd, so it never hits a recycled pid), and to every process of
// its cell. An empty group (ESRCH) or a reaped child is not an error: there
// is nobody left to signal.
func (p *Process) signalGroup(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		p.sentKill.Store(true)
	}
	_ = syscall.Kill(-p.pgid, sig)
	_ = p.cmd.Process.Signal(sig)
	if p.cell != nil {
		p.cell.signal(sig)
	}
}

// groupRunning reports whether any member of the child's process group, or
// of its cell, is still running. Zombies do not count: they hold no
// resources but a pid, and when the host runs under a PID 1 that does not
// reap, orphaned zombies would otherwise look alive forever.
func (p *Process) groupRunning() bool {
	if p.cell != nil && p.cell.running() {
		return true
	}
	if err := syscall.Kill(-p.pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	return groupHasLiveMember(p.pgid)
}

func signalOf(state *os.ProcessState) string {
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	return signalName(ws.Signal())
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT", syscall.SIGALRM: "SIGALRM", syscall.SIGBUS: "SIGBUS",
	syscall.SIGCHLD: "SIGCHLD", syscall.SIGCONT: "SIGCONT", syscall.SIGFPE: "SIGFPE",
	syscall.SIGHUP: "SIGHUP", syscall.SIGILL: "SIGILL", syscall.SIGINT: "SIGINT",
	syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE", syscall.SIGPROF: "SIGPROF",
	syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGSTOP: "SIGSTOP",
	syscall.SIGSYS: "SIGSYS", syscall.SIGTERM: "SIGTERM", syscall.SIGTRAP: "SIGTRAP",
	syscall.SIGTSTP: "SIGTSTP", syscall.SIGTTIN: "SIGTTIN", syscall.SIGTTOU: "SIGTTOU",
	syscall.SIGURG: "SIGURG", syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGVTALRM: "SIGVTALRM", syscall.SIGWINCH: "SIGWINCH", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ",
}

func signalName(sig syscall.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return fmt.Sprintf("signal %d", int(sig))
}
