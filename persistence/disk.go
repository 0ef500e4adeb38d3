package persistence

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// A full disk, and why the store watches for it.
//
// Badger writes everything through memory maps: the memtables' write-ahead
// logs (.mem, sparse files it truncates to twice the memtable size), the
// tables a flush or a compaction builds (truncated to size, then copied
// into the map), the value log. A store on a full filesystem does not get
// ENOSPC from a write: the page fault that needs a block it cannot have
// kills the process with SIGBUS, and it does again at the next start,
// since opening writes a new write-ahead log. No Badger option writes
// those files another way, and preallocating them would need Badger's own
// file code changed. So the store keeps Badger away from the edge: it
// checks the free space of its directory's filesystem every
// DiskCheckInterval, and before a commit once the bytes committed since
// the last check might have used half the room above the reserve (with a
// statfs per commit, a commit's check under the writer's lock took
// 6.4-7.0 µs; 2.6-3.2 µs without, BenchmarkCommitCheck), and when less
// than the reserve is free it
// closes Badger (the flush and L0 compaction of that close use the
// reserve) and reopens it read-only, in which mode Badger writes nothing
// at all: however full the disk then gets, nothing faults. Writes fail
// with ErrDiskFull; reads go on. When the free space is back above the
// reserve and a quarter, the store reopens Badger writable by itself. A
// store opened on a disk already short starts read-only; a new one is made
// first if at least 8 MiB are free, else Open fails with ErrDiskFull.

// DefaultDiskReserve is Options.DiskReserve's default: what Badger may need
// after the store stops accepting writes: the flush of its three 16 MiB
// memtables, the compaction of L0 (at most 10 tables of about a memtable
// each, rewritten before the old ones are deleted) when it closes to
// reopen read-only, and headroom for the value log's last file.
const DefaultDiskReserve = 256 << 20

// minCreateFree is the least free space in which a new journal is made
// (then opened read-only) on a disk short of the reserve: Badger's first
// files take a MiB and a few pages.
const minCreateFree = 8 << 20

// isEmptyDir reports whether dir holds no file at all: a new journal.
func isEmptyDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) == 0
}

// DefaultDiskCheckInterval is Options.DiskCheckInterval's default.
const DefaultDiskCheckInterval = time.Second

// DiskState is what the store last saw of its filesystem.
type DiskState struct {
	// ReadOnly: less than Reserve was free, so writes fail with
	// ErrDiskFull until the space returns.
	ReadOnly bool
	// Since is when the store became read-only; zero when writable.
	Since time.Time
	// Free is the space available at the last check, in bytes; Reserve
	// the bound below which the store stops writing (0: not watched).
	Free, Reserve uint64
}

// diskWatch is the Store's view of its filesystem's free space.
type diskWatch struct {
	reserve  uint64 // 0: not watched
	interval time.Duration
	free     func(dir string) (uint64, error)

	probe *os.File // probeName, rewritten before each commit; nil if it could not be made

	readOnly atomic.Bool
	since    atomic.Int64 // unix nanoseconds, when readOnly
	lastFree atomic.Uint64
	kick     chan struct{} // a commit found the disk short (capacity 1)

	// Bytes the commits since the last check may have taken of the disk
	// (spent), and how many they may take before the next commit checks
	// (budget): half of what the last check found above the reserve, so
	// that the reserve is still there when a check finds it reached,
	// however fast the writes come between two ticks.
	spent, budget atomic.Int64
}

// chargeFactor and entryOverhead turn a commit's keys and values into the
// disk it may take: each byte is written to the write-ahead log, then to
// the table a flush makes of it (compactions rewrite tables later, which
// is what the reserve is for), and each entry has a header and checksum
// in the log and index and block overhead in the table.
const (
	chargeFactor  = 2
	entryOverhead = 64
)

// diskCost is what writing units and marks may take of the disk.
func diskCost(units []unit, marks []mutation) int64 {
	var n int64
	for _, u := range units {
		for _, m := range u.muts {
			n += int64(len(m.key) + len(m.value) + entryOverhead)
		}
	}
	for _, m := range marks {
		n += int64(len(m.key) + len(m.value) + entryOverhead)
	}
	return chargeFactor * n
}

func newDiskWatch(opts Options) *diskWatch {
	d := &diskWatch{interval: opts.DiskCheckInterval, free: opts.freeSpace, kick: make(chan struct{}, 1)}
	switch {
	case opts.DiskReserve == 0:
		d.reserve = DefaultDiskReserve
	case opts.DiskReserve > 0:
		d.reserve = uint64(opts.DiskReserve)
	}
	if d.interval <= 0 {
		d.interval = DefaultDiskCheckInterval
	}
	if d.free == nil {
		d.free = statfsFree
	}
	return d
}

// statfsFree is the space an unprivileged writer may still use on dir's
// filesystem (blocks reserved for root are not counted: a host running as
// root would eat into them only to find the same edge further on).
func statfsFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// short checks the free space now and reports whether it is below the
// reserve. A failed check reports not short: it changes nothing.
func (d *diskWatch) short(dir string) (bool, error) {
	if d.reserve == 0 {
		return false, nil
	}
	free, err := d.free(dir)
	if err != nil {
		d.budget.Store(0) // check again at the next commit
		return false, fmt.Errorf("free space of %s: %w", dir, err)
	}
	d.lastFree.Store(free)
	d.spent.Store(0)
	d.budget.Store(int64(max(free, d.reserve)-d.reserve) / 2)
	return free < d.reserve, nil
}

// recovered checks the free space now and reports whether it is back above
// the reserve and a quarter: the margin keeps a disk at the edge from
// flapping the store between read-only and writable.
func (d *diskWatch) recovered(dir string) bool {
	free, err := d.free(dir)
	if err != nil {
		return false
	}
	d.lastFree.Store(free)
	return free >= d.reserve+d.reserve/4
}

func (d *diskWatch) setReadOnly(on bool, now time.Time) {
	if on {
		d.since.Store(now.UnixNano())
	}
	d.readOnly.Store(on)
}

// Disk reports what the store last saw of its filesystem. It does not
// block and is safe concurrently.
func (s *Store) Disk() DiskState {
	st := DiskState{ReadOnly: s.disk.readOnly.Load(), Free: s.disk.lastFree.Load(), Reserve: s.disk.reserve}
	if st.ReadOnly {
		st.Since = time.Unix(0, s.disk.since.Load())
	}
	return st
}

// probeName is the one-byte file in the journal's directory the store
// rewrites with write(2) before each commit. On a frozen filesystem
// (fsfreeze, a snapshot) that write blocks in the kernel, where the Go
// runtime does not wait for it, instead of Badger's next write faulting on
// a mapped page, which the runtime cannot preempt: one such fault held
// every goroutine of the host, /healthz included, at the next garbage
// collection until the thaw.
const probeName = "disk.probe"

// openProbe makes the probe file, once the store is writable.
func (s *Store) openProbe() {
	if s.disk.probe != nil {
		return
	}
	f, err := os.OpenFile(filepath.Join(s.dir, probeName), os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		if _, err = f.WriteAt([]byte{0}, 0); err != nil {
			f.Close()
		}
	}
	if err != nil {
		s.log.Warn("journal: no disk probe; a frozen disk may stall the host", "err", err)
		return
	}
	s.disk.probe = f
}

// awaitDisk returns once a write to the disk goes through: at once, unless
// the filesystem is frozen. It gives up (and lets the commit try) on an
// error.
func (d *diskWatch) awaitDisk() {
	if d.probe != nil {
		d.probe.WriteAt([]byte{0}, 0)
	}
}

// writable fails with ErrDiskFull when the store is read-only or the disk
// has just fallen short (then the watcher is told to switch at once). It
// checks the free space only when the commits since the last check and
// this one's cost would spend more than their budget. The caller holds
// writeMu.
func (s *Store) writable(cost int64) error {
	if s.disk.readOnly.Load() {
		return fmt.Errorf("journal %s: %w", s.dir, ErrDiskFull)
	}
	if s.disk.reserve == 0 || s.disk.spent.Load()+cost <= s.disk.budget.Load() {
		s.disk.awaitDisk()
		return nil
	}
	short, err := s.disk.short(s.dir)
	if err != nil {
		s.log.Warn("journal: checking free space", "err", err)
	}
	if !short {
		s.disk.awaitDisk()
		return nil
	}
	select {
	case s.disk.kick <- struct{}{}:
	default:
	}
	return fmt.Errorf("journal %s: %w (%d bytes free, %d kept in reserve)", s.dir, ErrDiskFull, s.disk.lastFree.Load(), s.disk.reserve)
}

// checkDisk checks the free space now and switches the store between
// writable and read-only; upkeep calls it every interval, and at once when
// a commit found the disk short. Kept drop counts from before are
// journaled once the store is writable again.
func (s *Store) checkDisk() {
	if s.disk.reserve == 0 {
		return
	}
	if s.disk.readOnly.Load() {
		if s.disk.recovered(s.dir) && !s.reopen(false) {
			s.journalDropped()
		}
		return
	}
	short, err := s.disk.short(s.dir)
	if err != nil {
		s.log.Warn("journal: checking free space", "err", err)
	}
	if short {
		s.reopen(true)
	}
}

// reopen closes Badger and opens it again, read-only or writable, while
// every other operation waits. Should the writable open fail, it stays
// read-only; should every open fail, the store closes. It returns whether
// the store is read-only after.
func (s *Store) reopen(readOnly bool) bool {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return true
	}
	if err := s.db.Close(); err != nil {
		s.log.Error("journal: closing to reopen", "err", err)
	}
	db, err := badger.Open(badgerOptions(s.dir, s.log, s.opts.Compress).WithReadOnly(readOnly))
	if err != nil && !readOnly {
		s.log.Error("journal: reopening writable; staying read-only", "err", err)
		readOnly = true
		db, err = badger.Open(badgerOptions(s.dir, s.log, s.opts.Compress).WithReadOnly(true))
	}
	if err != nil {
		s.log.Error("journal: reopening failed; the journal is closed", "err", err)
		s.closed, s.db = true, nil
		return true
	}
	s.db = db
	s.disk.setReadOnly(readOnly, s.opts.Now())
	if !readOnly {
		s.openProbe()
	}
	if readOnly {
		s.log.Error("journal: read-only: disk full; writes fail until space returns",
			"free", s.disk.lastFree.Load(), "reserve", s.disk.reserve)
	} else {
		s.log.Warn("journal: writable again: disk space returned", "free", s.disk.lastFree.Load())
	}
	if s.opts.reopened != nil {
		s.opts.reopened(readOnly)
	}
	return readOnly
}
