package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// MountTmpfs mounts a tmpfs of size bytes on a new directory for the test
// and unmounts it when the test ends, or skips the test where that cannot
// be done (not root, no rights to mount): a real small filesystem for the
// tests of a full disk.
func MountTmpfs(t testing.TB, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// FillDisk takes all but leave bytes of dir's filesystem with a new file
// in dir, whose path it returns (remove it to give the space back).
func FillDisk(t testing.TB, dir string, leave uint64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := st.Bavail * uint64(st.Bsize)
	f, err := os.CreateTemp(dir, "filler-")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if free > leave {
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(free-leave)); err != nil {
			t.Fatalf("fallocate: %v", err)
		}
	}
	return f.Name()
}
