//go:build unix

package persistence

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes the lock Badger takes on a journal directory (an
// exclusive flock of the directory), so that nothing opens it meanwhile.
// Badger's own open fails while it is held, even in this process.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &lockedError{dir: dir, cause: err}
		}
		return nil, fmt.Errorf("journal %s: lock: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
