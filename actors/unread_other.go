//go:build !linux

package actors

// unread cannot be told here: the drain watch is off, and only a write
// that blocks shows a server that does not read.
func (f fileStdin) unread() (int, bool) { return 0, false }

// processCPU is not read here.
func processCPU(int) (int64, bool) { return 0, false }
