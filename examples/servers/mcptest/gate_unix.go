//go:build unix

package main

import (
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// gateStdin returns stdin read through the runtime's poller, looking at
// stopped each time input is there before it reads: once stopped is set,
// nothing more leaves the pipe. A plain read blocked on os.Stdin when the
// flag is set would still take the next line; this way a server that stops
// reading leaves what the client sends next in the pipe, where the client
// can see it wait.
func gateStdin(stopped *atomic.Bool) io.Reader {
	if err := syscall.SetNonblock(0, true); err != nil {
		return os.Stdin
	}
	raw, err := os.NewFile(0, "stdin").SyscallConn()
	if err != nil {
		return os.Stdin
	}
	return &gatedStdin{raw: raw, stopped: stopped}
}

type gatedStdin struct {
	raw     syscall.RawConn
	stopped *atomic.Bool
}

func (g *gatedStdin) Read(b []byte) (int, error) {
	var n int
	var rerr error
	halted := false
	err := g.raw.Read(func(fd uintptr) bool {
		if g.stopped.Load() {
			halted = true
			return true
		}
		n, rerr = syscall.Read(int(fd), b)
		return rerr != syscall.EAGAIN && rerr != syscall.EINTR
	})
	if halted {
		for {
			time.Sleep(time.Hour) // alive, reading nothing
		}
	}
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, rerr
	case n == 0 && len(b) > 0:
		return 0, io.EOF
	}
	return n, nil
}
