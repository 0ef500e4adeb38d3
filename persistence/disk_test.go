package persistence

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// fakeDisk stands for statfs: its free space is what the test sets.
type fakeDisk struct{ free atomic.Uint64 }

func (d *fakeDisk) space(string) (uint64, error) { return d.free.Load(), nil }

// switches collects the store's switches between writable and read-only.
type switches chan bool

func (c switches) reopened(readOnly bool) { c <- readOnly }

func (c switches) await(t *testing.T, want bool) {
	t.Helper()
	select {
	case got := <-c:
		if got != want {
			t.Fatalf("store switched to readOnly=%v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("store never switched to readOnly=%v", want)
	}
}

func event(i int) Op {
	return AppendEvent(EventRecord{Server: "s", Method: "m", Params: []byte(fmt.Sprintf(`{"i":%d}`, i)), Received: time.Now()})
}

func TestDiskShortTurnsReadOnlyAndBack(t *testing.T) {
	const reserve = 64 << 20
	disk := &fakeDisk{}
	// So little above the reserve that every commit checks: a budget of
	// 512 bytes.
	disk.free.Store(reserve + 1<<10)
	sw := make(switches, 4)
	dir := t.TempDir()
	opts := Options{MaintenanceInterval: -1, DiskReserve: reserve, DiskCheckInterval: 5 * time.Millisecond,
		freeSpace: disk.space, reopened: sw.reopened}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply([]Op{event(1)}); err != nil {
		t.Fatal(err)
	}

	disk.free.Store(reserve - 1)
	if _, err := s.Apply([]Op{event(2)}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Apply on a short disk = %v, want ErrDiskFull", err)
	}
	sw.await(t, true)
	if st := s.Disk(); !st.ReadOnly || st.Since.IsZero() || st.Free != reserve-1 || st.Reserve != reserve {
		t.Fatalf("Disk() = %+v, want read-only since now with %d free", st, reserve-1)
	}
	evs, err := s.Events(EventFilter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("reads while read-only: %d events, %v; want the 1 committed", len(evs), err)
	}
	if _, err := s.Apply([]Op{AckEvents(1)}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Ack while read-only = %v, want ErrDiskFull", err)
	}
	if _, err := s.Prune(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Prune while read-only = %v, want ErrDiskFull", err)
	}

	// Just above the reserve is not enough: the margin keeps it from flapping.
	disk.free.Store(reserve + 1)
	if _, err := s.Apply([]Op{event(3)}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Apply just above the reserve = %v, want ErrDiskFull", err)
	}
	disk.free.Store(1 << 30)
	sw.await(t, false)
	a, err := s.Apply([]Op{event(4)})
	if err != nil {
		t.Fatalf("Apply once space returned: %v", err)
	}
	if len(a.Events) != 1 || a.Events[0].Seq <= 1 {
		t.Fatalf("event after recovery got seqs %v, want one above 1", a.Events)
	}
	if st := s.Disk(); st.ReadOnly || !st.Since.IsZero() {
		t.Fatalf("Disk() after recovery = %+v, want writable", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A start on a short disk opens read-only, with everything readable.
	disk.free.Store(1 << 20)
	s, err = Open(dir, opts)
	if err != nil {
		t.Fatalf("Open on a short disk: %v", err)
	}
	defer s.Close()
	if !s.Disk().ReadOnly {
		t.Fatal("a store opened on a short disk is writable")
	}
	if evs, err := s.Events(EventFilter{}); err != nil || len(evs) != 2 {
		t.Fatalf("reads after a read-only open: %d events, %v; want 2", len(evs), err)
	}
	if _, err := s.Apply([]Op{event(5)}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Apply after a read-only open = %v, want ErrDiskFull", err)
	}
	disk.free.Store(1 << 30)
	sw.await(t, false)
	if _, err := s.Apply([]Op{event(6)}); err != nil {
		t.Fatalf("Apply once space returned after a read-only open: %v", err)
	}
}

func TestOpenNewJournalOnShortDisk(t *testing.T) {
	disk := &fakeDisk{}
	disk.free.Store(1 << 20)
	opts := Options{MaintenanceInterval: -1, DiskReserve: 64 << 20, freeSpace: disk.space}
	_, err := Open(filepath.Join(t.TempDir(), "j"), opts)
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Open of a new journal on a full disk = %v, want ErrDiskFull", err)
	}

	// Room for Badger's first files, not for the reserve: made, read-only.
	disk.free.Store(32 << 20)
	s, err := Open(filepath.Join(t.TempDir(), "j"), opts)
	if err != nil {
		t.Fatalf("Open of a new journal on a short disk: %v", err)
	}
	defer s.Close()
	if !s.Disk().ReadOnly {
		t.Fatal("a new journal on a short disk is writable")
	}
	if evs, err := s.Events(EventFilter{}); err != nil || len(evs) != 0 {
		t.Fatalf("Events of a new read-only journal: %v, %v", evs, err)
	}
	if _, err := s.Apply([]Op{event(1)}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Apply = %v, want ErrDiskFull", err)
	}
}

// A real full disk: a tmpfs of 64 MiB filled up under a store. Before the
// reserve, the host died of SIGBUS here, and again at each start.
func TestDiskFullOnTmpfs(t *testing.T) {
	mnt := testenv.MountTmpfs(t, 96<<20)
	dir := filepath.Join(mnt, "journal")
	const reserve = 24 << 20
	sw := make(switches, 4)
	opts := Options{MaintenanceInterval: -1, DiskReserve: reserve, DiskCheckInterval: 10 * time.Millisecond, reopened: sw.reopened}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	filler := testenv.FillDisk(t, mnt, reserve+8<<20)

	params := make([]byte, 1000)
	for i := range params {
		params[i] = 'a' + byte(i%26)
	}
	body := fmt.Appendf(nil, `{"p":%q}`, params)
	committed := 0
	var full error
	for full == nil && committed < 1_000_000 {
		ops := make([]Op, 100)
		for i := range ops {
			ops[i] = AppendEvent(EventRecord{Server: "s", Method: "m", Params: body, Received: time.Now()})
		}
		if _, full = s.Apply(ops); full == nil {
			committed += len(ops)
		}
	}
	if !errors.Is(full, ErrDiskFull) {
		t.Fatalf("filling the disk ended with %v after %d events, want ErrDiskFull", full, committed)
	}
	sw.await(t, true)
	// Now someone else takes the rest: read-only, Badger writes nothing.
	rest := testenv.FillDisk(t, mnt, 0)
	if evs, err := s.Events(EventFilter{Limit: 10}); err != nil || len(evs) != 10 {
		t.Fatalf("reads on a full disk: %d, %v", len(evs), err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close on a full disk: %v", err)
	}
	// A start on the full disk: read-only, no crash.
	s, err = Open(dir, opts)
	if err != nil {
		t.Fatalf("Open on a full disk: %v", err)
	}
	defer s.Close()
	if !s.Disk().ReadOnly {
		t.Fatal("opened writable on a full disk")
	}
	n := 0
	for f := (EventFilter{Limit: 5000}); ; {
		evs, err := s.Events(f)
		if err != nil {
			t.Fatal(err)
		}
		n += len(evs)
		if len(evs) < f.Limit {
			break
		}
		f.After = evs[len(evs)-1].Seq
	}
	if n != committed {
		t.Fatalf("after the restart on a full disk %d events are listed, want the %d committed", n, committed)
	}

	// Space returns: the store is writable again by itself.
	if err := os.Remove(rest); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	sw.await(t, false)
	if _, err := s.Apply([]Op{event(1)}); err != nil {
		t.Fatalf("Apply once space returned: %v", err)
	}
}

// mountExt4 makes an ext4 filesystem of size bytes in a loop device and
// mounts it, or skips the test where it cannot.
func mountExt4(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a loop device needs root")
	}
	img := filepath.Join(t.TempDir(), "fs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v: %s", err, out)
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-o", "loop", img, dir).CombinedOutput(); err != nil {
		t.Skipf("mount -o loop: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// blockedThreads counts this process's threads in uninterruptible sleep:
// on a frozen filesystem, a write waiting for the thaw.
func blockedThreads(t *testing.T) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		// pid (comm) state ...: the state follows the last ')'.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'D' {
			n++
		}
	}
	return n
}

// A commit on a frozen filesystem waits in the kernel, not on a page fault
// of Badger's memory maps: a garbage collection (a stop of the world) still
// completes. Without the probe it waited for the thaw, and so did every
// goroutine of the host.
func TestFrozenDiskStopsNoWorld(t *testing.T) {
	mnt := mountExt4(t, 256<<20)
	if _, err := exec.LookPath("fsfreeze"); err != nil {
		t.Skip("no fsfreeze")
	}
	s, err := Open(filepath.Join(mnt, "journal"), Options{MaintenanceInterval: -1, DiskReserve: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Apply([]Op{event(1)}); err != nil {
		t.Fatal(err)
	}

	if out, err := exec.Command("fsfreeze", "-f", mnt).CombinedOutput(); err != nil {
		t.Skipf("fsfreeze: %v: %s", err, out)
	}
	thaw := func() { exec.Command("fsfreeze", "-u", mnt).Run() } // fails once thawed
	defer thaw()
	// Should the world stop until the thaw, no goroutine of this process
	// could thaw it: a watchdog process does, and leaves a mark, and the
	// test fails instead of hanging.
	mark := filepath.Join(t.TempDir(), "thawed")
	watchdog := exec.Command("sh", "-c", `sleep 10; touch "$2"; fsfreeze -u "$1"`, "watchdog", mnt, mark)
	if err := watchdog.Start(); err != nil {
		thaw()
		t.Fatal(err)
	}
	defer func() {
		watchdog.Process.Kill()
		watchdog.Wait()
	}()

	applied := make(chan error, 1)
	go func() {
		_, err := s.Apply([]Op{event(2)})
		applied <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for blockedThreads(t) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no thread waits on the frozen filesystem")
		}
		runtime.Gosched()
	}
	runtime.GC()
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("a garbage collection waited for the frozen filesystem's thaw")
	}
	select {
	case err := <-applied:
		t.Fatalf("Apply returned on a frozen filesystem: %v", err)
	default:
	}
	thaw()
	if err := <-applied; err != nil {
		t.Fatalf("Apply after the thaw: %v", err)
	}
}

// countingDisk is a fakeDisk that counts the checks.
type countingDisk struct {
	fakeDisk
	checks atomic.Int64
}

func (d *countingDisk) space(dir string) (uint64, error) {
	d.checks.Add(1)
	return d.fakeDisk.space(dir)
}

// The free space is not checked at every commit, only once the commits
// since the last check may have used half the room above the reserve: far
// from the reserve, commits do not check; near it, they check every few
// commits, and the commit that finds the reserve reached fails.
func TestDiskCheckBudget(t *testing.T) {
	const reserve = 64 << 20
	disk := &countingDisk{}
	disk.free.Store(reserve + 1<<30)
	// No tick within the test: only commits check.
	opts := Options{MaintenanceInterval: -1, DiskReserve: reserve, DiskCheckInterval: time.Hour, freeSpace: disk.space}
	s := openStore(t, t.TempDir(), opts)
	opened := disk.checks.Load()
	for i := range 200 {
		mustApply(t, s, event(i))
	}
	if n := disk.checks.Load() - opened; n != 0 {
		t.Fatalf("200 small commits 1 GiB above the reserve checked the free space %d times, want none", n)
	}

	// 1 MiB above the reserve: a budget of 512 KiB, commits of about
	// 100 KiB each (100 events of 400 bytes, counted twice).
	disk.free.Store(reserve + 1<<20)
	s.disk.budget.Store(0) // as if a tick had just seen it
	batch := func() []Op {
		ops := make([]Op, 100)
		for i := range ops {
			ops[i] = AppendEvent(EventRecord{Server: "s", Method: "m", Params: []byte(`"` + strings.Repeat("x", 400) + `"`), Received: time.Now()})
		}
		return ops
	}
	before := disk.checks.Load()
	for range 20 {
		mustApply(t, s, batch()...)
	}
	if n := disk.checks.Load() - before; n < 2 || n > 10 {
		t.Fatalf("20 commits of ~100 KiB 1 MiB above the reserve checked %d times, want one every 4 or 5", n)
	}

	// Someone else takes the room: within a budget's worth of commits, one
	// checks and fails.
	disk.free.Store(reserve - 1)
	var err error
	commits := 0
	for ; commits < 10 && err == nil; commits++ {
		_, err = s.Apply(batch())
	}
	if !errors.Is(err, ErrDiskFull) || commits > 6 {
		t.Fatalf("after the disk fell short: %d commits, the last %v; want ErrDiskFull within 6", commits, err)
	}
}

// BenchmarkApplyOne is the commit path for the smallest commit: one event,
// one sync. Before the budget each paid a statfs.
func BenchmarkApplyOne(b *testing.B) {
	s := openStore(b, b.TempDir(), Options{MaintenanceInterval: -1})
	ops := []Op{smallEvent(1)}
	for b.Loop() {
		if _, err := s.Apply(ops); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitCheck is what a commit pays to know the disk has room,
// without the commit: a statfs before the budget (6.4-7.0 µs in all), a
// comparison now (2.6-3.2 µs), and the frozen-disk probe's write either
// way.
func BenchmarkCommitCheck(b *testing.B) {
	s := openStore(b, b.TempDir(), Options{MaintenanceInterval: -1})
	for b.Loop() {
		s.writeMu.Lock()
		err := s.writable(256)
		s.writeMu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
	}
}
