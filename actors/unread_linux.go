package actors

import "golang.org/x/sys/unix"

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
