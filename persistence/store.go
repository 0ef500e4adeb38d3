package persistence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Defaults applied to a zero Options field.
const (
	DefaultEventRetention      = 7 * 24 * time.Hour
	DefaultHistoryRetention    = 30 * 24 * time.Hour
	DefaultMaintenanceInterval = 10 * time.Minute
	// DefaultPendingEventRetention: events nobody acknowledged are kept a
	// month, so a consumer that stopped for a while finds them.
	DefaultPendingEventRetention = 30 * 24 * time.Hour
	// DefaultEventLimit is how many events a journal keeps at most:
	// about 10 MiB of raw tables at ~100 bytes an event.
	DefaultEventLimit = 100_000
)

// Options configures a Store. The zero value is ready to use; Open copies it.
type Options struct {
	// Logger receives the store's and Badger's messages (Badger's Info and
	// Debug at slog Debug). Nil discards them.
	Logger *slog.Logger

	// EventRetention: Prune deletes processed events whose ProcessedAt is
	// older than this. 0 means DefaultEventRetention; negative: this rule
	// deletes none (PendingEventRetention and EventLimit still apply).
	EventRetention time.Duration

	// PendingEventRetention: Prune deletes the oldest events, pending or
	// not, while their Received is older than this. 0 means
	// DefaultPendingEventRetention; negative keeps them forever.
	PendingEventRetention time.Duration

	// EventLimit: while the journal holds more events than this, Prune
	// deletes the oldest processed events, then, if that is not enough,
	// the oldest pending ones. 0 means DefaultEventLimit; negative: no
	// limit.
	EventLimit int

	// HistoryRetention: Prune deletes history records whose Time, and Done
	// tasks whose Updated, is older than this. 0 means
	// DefaultHistoryRetention; negative keeps them.
	HistoryRetention time.Duration

	// MaintenanceInterval: a goroutine owned by the Store runs Prune and
	// then RunValueLogGC this often. 0 means DefaultMaintenanceInterval;
	// negative never.
	MaintenanceInterval time.Duration

	// Now is the clock for ProcessedAt, default times and retention. Nil
	// means time.Now.
	Now func() time.Time

	// Compress writes the LSM tables Snappy-compressed, which makes events
	// take about a quarter of the disk (and a quarter of the table files),
	// and reads them through a 16 MiB block cache. It costs memory: Badger's
	// table builders then hold each block both raw and compressed (measured
	// under a million-event flood: about 50 MiB more anonymous memory at
	// the peak). Off, the default, tables are written raw and read straight
	// from their memory maps. Tables keep the compression they were written
	// with, so a journal may be reopened either way.
	Compress bool

	// DiskReserve is the free space, in bytes, the store keeps on its
	// filesystem for Badger's own writes: below it the store turns
	// read-only (writes fail with ErrDiskFull) until the space returns
	// (disk.go tells why). 0 means DefaultDiskReserve (256 MiB); negative
	// turns the watch off.
	DiskReserve int64

	// DiskCheckInterval is how often the free space is checked, and the
	// marks file rewritten (when read-only, how soon a return of the space
	// is seen); between two checks a commit checks only once the commits
	// since the last check may have used half the room above the reserve.
	// 0 means DefaultDiskCheckInterval (1 s).
	DiskCheckInterval time.Duration

	// freeSpace, when set (by tests), stands for statfs: the bytes free on
	// dir's filesystem.
	freeSpace func(dir string) (uint64, error)

	// reopened, when set (by tests), is called after the store switched
	// between writable and read-only.
	reopened func(readOnly bool)

	// maintained, when set (by tests), is called after each maintenance run.
	maintained func(PruneResult, error)
}

// Store is a journal directory opened for writing. Reads are safe
// concurrently with each other and with Apply; Apply and Prune serialise
// on one writer lock.
type Store struct {
	dir  string
	opts Options
	log  *slog.Logger
	db   *badger.DB // swapped by reopen under closeMu; nil once closed
	disk *diskWatch

	// closeMu is held shared by every operation and exclusively by Close,
	// so Close waits for operations in flight and later ones see closed.
	closeMu sync.RWMutex
	closed  bool

	stop      chan struct{} // closed when Close begins
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup // the upkeep goroutine

	writeMu sync.Mutex // one Apply or Prune at a time
	gcMu    sync.Mutex // badger rejects concurrent value-log GCs

	// Reserved seqs, guarded by writeMu: the highest seq handed out.
	reservedEvent, reservedHistory uint64
	// Apply's buffer for blocks of calls, kept for its capacity; guarded
	// by writeMu.
	calls callBlock
	// The pending mark: every event below it is processed. Guarded by
	// writeMu; pendingFromPub is its committed value for readers.
	pendingFrom    uint64
	pendingFromPub atomic.Uint64

	// Committed high-water marks and the pending-event count, readable
	// without locks.
	lastEvent, lastHistory atomic.Uint64
	pending                atomic.Int64
	lastLSM, lastVLog      atomic.Int64 // Stats' last sizes
	recordsRead            atomic.Int64 // events and history records listings decoded

	recovery Recovery // what Open found and did; set before Open returns

	marksMu    sync.Mutex        // one marks file write at a time; guards the three below
	marks      Marks             // last written
	dropped    map[string]uint64 // drop counts kept (KeepDropped), not yet journaled
	dropsMoved bool              // dropped changed since the marks were written

	pendingCounted bool // Open counted the pending events rather than take the clean mark's count (tests)

	pruneChunk int          // records per Prune read transaction; tests lower it
	pageBudget int          // records a page reads at most (PageScanBudget); tests lower it
	commits    atomic.Int64 // badger transactions committed by Apply and Prune (tests)
}

// lockedError reports a journal directory another process (or another
// Store in this one) holds.
type lockedError struct {
	dir   string
	cause error
}

func (e *lockedError) Error() string {
	return "journal " + e.dir + " is in use by another process"
}

func (e *lockedError) Unwrap() []error { return []error{ErrLocked, e.cause} }

// Open opens the journal in dir, creating the directory (mode 0700) if
// needed. It fails with an error wrapping ErrLocked when another process or
// another Store holds dir. New seqs continue above every seq ever
// committed in dir, even if retention has since deleted the records.
func Open(dir string, opts Options) (*Store, error) {
	if opts.EventRetention == 0 {
		opts.EventRetention = DefaultEventRetention
	}
	if opts.HistoryRetention == 0 {
		opts.HistoryRetention = DefaultHistoryRetention
	}
	if opts.PendingEventRetention == 0 {
		opts.PendingEventRetention = DefaultPendingEventRetention
	}
	if opts.EventLimit == 0 {
		opts.EventLimit = DefaultEventLimit
	}
	if opts.MaintenanceInterval == 0 {
		opts.MaintenanceInterval = DefaultMaintenanceInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("journal", dir)

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal %s: %w", dir, err)
	}
	// Inspected under Badger's lock, so that a running host's journal is
	// reported in use rather than its compactions taken for damage; the
	// lock is let go for Badger to take it.
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	// The files as a clean close left them need less checking; the clean
	// mark is taken back once they are checked, before Badger may change
	// them (a refused journal keeps its files as they were, the marks
	// included).
	marks, written, clean := readCleanMark(dir)
	var stamps map[string]TableStamp // nil: verify every table
	if clean {
		stamps = marks.Tables
	}
	rec, err := inspectBeforeOpen(dir, opts.Now(), logger, stamps, written)
	if err == nil && clean {
		err = takeBackCleanMark(dir, marks, logger)
	}
	unlock()
	if err != nil {
		return nil, err
	}
	disk := newDiskWatch(opts)
	// A disk already short opens read-only: opening writable would write a
	// new write-ahead log through a memory map, and die of it.
	readOnly, err := disk.short(dir)
	if err != nil {
		logger.Warn("journal: checking free space", "err", err)
	}
	created := false
	if readOnly && isEmptyDir(dir) && disk.lastFree.Load() >= minCreateFree {
		// Badger opens read-only only what exists: make the journal
		// (a few pages), then reopen it read-only below.
		db, err := badger.Open(badgerOptions(dir, logger, opts.Compress))
		if err == nil {
			err = db.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("journal %s: creating on a short disk: %w", dir, err)
		}
		created = true
	}
	var db *badger.DB
	err = guard(func() (err error) {
		db, err = badger.Open(badgerOptions(dir, logger, opts.Compress).WithReadOnly(readOnly))
		return err
	})
	if err != nil {
		if isLockFailure(err) {
			return nil, &lockedError{dir: dir, cause: err}
		}
		if isDamage(err) && !readOnly {
			return nil, rec.refuse(dir, logger, err)
		}
		if readOnly {
			return nil, fmt.Errorf("journal %s: open: %w (%d bytes free, %d kept in reserve): %w", dir, ErrDiskFull, disk.lastFree.Load(), disk.reserve, err)
		}
		return nil, fmt.Errorf("journal %s: open: %w", dir, err)
	}
	s := &Store{dir: dir, opts: opts, log: logger, db: db, disk: disk, stop: make(chan struct{}), pruneChunk: defaultPruneChunk, pageBudget: PageScanBudget,
		marks: Marks{Event: marks.Event, History: marks.History, Dropped: marks.Dropped}, dropped: marks.Dropped} // as takeBackCleanMark left the file
	pending := int64(-1) // count them
	if clean {
		pending = marks.Pending
	}
	if err := guard(func() error { return s.load(pending) }); err != nil {
		err = errors.Join(err, db.Close())
		if isDamage(err) {
			return nil, rec.refuse(dir, logger, err)
		}
		return nil, fmt.Errorf("journal %s: %w", dir, err)
	}
	s.countLoss(&rec, marks)
	s.recovery = rec
	s.writeMarks()
	if !readOnly {
		s.openProbe()
		s.journalDropped()
	}
	if readOnly {
		disk.setReadOnly(true, opts.Now())
		logger.Error("journal: read-only: disk full; writes fail until space returns",
			"free", disk.lastFree.Load(), "reserve", disk.reserve, "created", created)
	}
	s.wg.Add(1)
	go s.upkeep()
	return s, nil
}

// readCleanMark reads dir's marks file and reports whether it says the
// journal was closed cleanly, and when it was written (unix nanoseconds).
func readCleanMark(dir string) (m Marks, written int64, clean bool) {
	m, err := readMarks(dir)
	if err != nil || !m.Clean {
		return m, 0, false
	}
	info, err := os.Stat(filepath.Join(dir, marksFile))
	if err != nil {
		return m, 0, false
	}
	return m, info.ModTime().UnixNano(), true
}

// takeBackCleanMark writes the marks file again saying the journal was not
// closed cleanly, synced, before Badger opens it: a start killed from
// here on must not pass for clean. A journal whose clean mark cannot be
// taken back is not opened, since a crash would then go unchecked.
func takeBackCleanMark(dir string, m Marks, logger *slog.Logger) error {
	unclean := Marks{Event: m.Event, History: m.History, Dropped: m.Dropped}
	if err := writeMarks(dir, unclean, true); err != nil {
		if rmErr := os.Remove(filepath.Join(dir, marksFile)); rmErr != nil {
			return fmt.Errorf("journal %s: taking back its clean mark: %w", dir, err)
		}
		logger.Warn("journal: marks file removed: it could not be rewritten", "err", err)
	}
	logger.Debug("journal: closed cleanly; its tables' checksums were not all verified")
	return nil
}

// badgerOptions keeps memory bounded under a flood of small events: a few
// small memtables, raw tables unless compress, small caches, two
// compactors, and a single writer so no conflict detection. See doc.go for
// the reasoning behind each figure.
func badgerOptions(dir string, logger *slog.Logger, compress bool) badger.Options {
	opts := badger.DefaultOptions(dir).
		WithLogger(badgerLogger{logger}).
		WithSyncWrites(true).
		WithDetectConflicts(false).
		WithNumVersionsToKeep(1).
		WithCompactL0OnClose(true).
		WithMemTableSize(16 << 20).
		WithNumMemtables(3).
		WithNumLevelZeroTables(10).
		WithNumLevelZeroTablesStall(20).
		WithNumCompactors(2).
		WithValueThreshold(16 << 10).
		WithValueLogFileSize(64 << 20).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithIndexCacheSize(16 << 20).
		WithMetricsEnabled(false)
	if compress {
		// Compressed blocks are decompressed on every read unless cached.
		opts = opts.WithCompression(options.Snappy).WithBlockCacheSize(16 << 20)
	}
	opts.TableSizeMultiplier = 1 // no option method; deeper levels' bigger tables meant bigger compaction buffers
	return opts
}

// isLockFailure tells badger's directory-lock failure from other errors.
// Badger formats the flock errno into its message instead of wrapping it
// (unless built in its debug mode), so the message is the fallback.
func isLockFailure(err error) bool {
	return errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EAGAIN) ||
		strings.Contains(err.Error(), "Cannot acquire directory lock")
}

// load reads the seq high-water marks and the pending mark and, unless
// pending (a clean close's count) is not negative, counts the pending
// events from the mark on: a decode of every pending event, which with
// the checksums verified made Open take 3.4-4.5 s at a million of them
// (TestStartupTime; 44-470 ms after a clean close without either).
func (s *Store) load(pending int64) error {
	return s.db.View(func(txn *badger.Txn) error {
		ev, err := highWater(txn, keyEventMark, prefixEvent)
		if err != nil {
			return err
		}
		hi, err := highWater(txn, keyHistoryMark, prefixHistory)
		if err != nil {
			return err
		}
		s.reservedEvent, s.reservedHistory = ev, hi
		s.lastEvent.Store(ev)
		s.lastHistory.Store(hi)

		from, err := readMark(txn, keyPendingFrom)
		if err != nil {
			return err
		}
		s.pendingFrom = from
		s.pendingFromPub.Store(from)
		if pending >= 0 {
			s.pending.Store(pending)
			return nil
		}
		s.pendingCounted = true
		var n int64
		err = scan(txn, iteration{prefix: []byte(prefixEvent), start: seqKey(prefixEvent, max(from, 1))},
			func(_ []byte, e EventRecord) (bool, error) {
				if e.Status == EventPending {
					n++
				}
				return true, nil
			})
		s.pending.Store(n)
		return err
	})
}

// highWater is the larger of the stored mark and the last record's seq; the
// mark alone would do, the record is a second witness.
func highWater(txn *badger.Txn, markKey, prefix string) (uint64, error) {
	mark, err := readMark(txn, markKey)
	if err != nil {
		return 0, err
	}
	err = iterate(txn, iteration{prefix: []byte(prefix), reverse: true}, func(item *badger.Item) (bool, error) {
		seq, err := keySeq(item.Key())
		mark = max(mark, seq)
		return false, err
	})
	return mark, err
}

// readMark reads a uint64 mark; a missing one is 0.
func readMark(txn *badger.Txn, key string) (uint64, error) {
	item, err := txn.Get([]byte(key))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return 0, nil
	case err != nil:
		return 0, err
	}
	var mark uint64
	err = item.Value(func(v []byte) error {
		mark, err = decodeMark(key, v)
		return err
	})
	return mark, err
}

// pendingMark is the committed pending mark, at least 1.
func (s *Store) pendingMark() uint64 { return max(s.pendingFromPub.Load(), 1) }

// Close stops the maintenance goroutine, waits for operations in flight and
// closes the database. It may be called more than once and concurrently;
// every call returns the first one's result. Afterwards every method
// returns ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.closeMu.Lock()
		defer s.closeMu.Unlock()
		s.closed = true
		if s.disk.probe != nil {
			s.disk.probe.Close()
		}
		clean := s.db != nil // nil: a failed reopen closed it
		if s.db != nil {
			if err := s.db.Close(); err != nil {
				s.closeErr = fmt.Errorf("journal %s: close: %w", s.dir, err)
				clean = false
			}
			s.db = nil
		}
		s.writeCloseMarks(clean)
	})
	return s.closeErr
}

// writeCloseMarks writes the marks at Close, with the clean mark if
// Badger closed without error: the pending count, and the table files as
// Badger left them.
func (s *Store) writeCloseMarks(clean bool) {
	s.marksMu.Lock()
	defer s.marksMu.Unlock()
	m := Marks{Event: s.lastEvent.Load(), History: s.lastHistory.Load(), Dropped: s.dropped, Clean: clean}
	if clean {
		m.Pending = s.pending.Load()
		m.Tables = tableStamps(s.dir)
	}
	s.putMarks(m, true)
}

// acquire takes the shared side of closeMu; release with s.closeMu.RUnlock.
func (s *Store) acquire() error {
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return ErrClosed
	}
	return nil
}

// Dir returns the directory passed to Open.
func (s *Store) Dir() string { return s.dir }

// LastEventSeq returns the event high-water mark: no committed event has a
// higher seq and the next one appended will be higher. It does not block.
func (s *Store) LastEventSeq() uint64 { return s.lastEvent.Load() }

// LastHistorySeq is LastEventSeq for history records.
func (s *Store) LastHistorySeq() uint64 { return s.lastHistory.Load() }

// Stats describes the store's size.
type Stats struct {
	LSMBytes, VLogBytes          int64 // sizes of the table and value-log files, as badger counts them (the open value-log file is preallocated)
	LastEventSeq, LastHistorySeq uint64
	PendingEvents                int64
	// RecordsRead counts the event and history records listings decoded
	// since Open: what the journal's readers cost it.
	RecordsRead int64
}

// Stats reports sizes and counters. It does not block: while the store is
// being closed or reopened it reports the sizes it last saw. After Close
// the byte counts are zero.
func (s *Store) Stats() Stats {
	st := Stats{
		LastEventSeq:   s.lastEvent.Load(),
		LastHistorySeq: s.lastHistory.Load(),
		PendingEvents:  s.pending.Load(),
		RecordsRead:    s.recordsRead.Load(),
	}
	// Never wait for the lock: a reopen holds it while Badger flushes,
	// and a scrape must not wait on the disk. Then the last sizes do.
	if !s.closeMu.TryRLock() {
		st.LSMBytes, st.VLogBytes = s.lastLSM.Load(), s.lastVLog.Load()
		return st
	}
	defer s.closeMu.RUnlock()
	if s.closed {
		return st
	}
	st.LSMBytes, st.VLogBytes = dirSizes(s.dir)
	s.lastLSM.Store(st.LSMBytes)
	s.lastVLog.Store(st.VLogBytes)
	return st
}

// dirSizes sums the sizes of badger's table and value-log files. Badger's
// own Size is refreshed only once a minute and needs its global metrics.
func dirSizes(dir string) (lsm, vlog int64) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil { // deleted by a compaction since ReadDir
			continue
		}
		switch {
		case strings.HasSuffix(e.Name(), ".sst"):
			lsm += info.Size()
		case strings.HasSuffix(e.Name(), ".vlog"):
			vlog += info.Size()
		}
	}
	return lsm, vlog
}

// upkeep is the store's one goroutine: every DiskCheckInterval it checks
// the free space (switching between writable and read-only) and rewrites
// the marks file if they moved; when a commit finds the disk short it
// checks at once; every MaintenanceInterval it has Prune and value-log GC
// run. Those two can take long on a big journal, and the disk must be
// watched meanwhile, so they run on a goroutine of their own that upkeep
// starts (one run at a time; a tick that finds one running is skipped)
// and joins. It runs until Close.
func (s *Store) upkeep() {
	defer s.wg.Done()
	tick := time.NewTicker(s.disk.interval)
	defer tick.Stop()
	var maintain <-chan time.Time
	if s.opts.MaintenanceInterval > 0 {
		t := time.NewTicker(s.opts.MaintenanceInterval)
		defer t.Stop()
		maintain = t.C
	}
	var maintaining chan struct{} // closed when the run ends; nil while none runs
	for {
		select {
		case <-s.stop:
			if maintaining != nil {
				<-maintaining
			}
			return
		case <-tick.C:
			s.checkDisk()
			s.writeMarks()
		case <-s.disk.kick:
			s.checkDisk()
		case <-maintaining:
			maintaining = nil
		case <-maintain:
			if maintaining == nil {
				maintaining = make(chan struct{})
				go func(done chan struct{}) {
					defer close(done)
					s.maintain()
				}(maintaining)
			}
		}
	}
}

// maintain runs Prune and value-log GC once.
func (s *Store) maintain() {
	if s.disk.readOnly.Load() {
		return // both would write
	}
	res, err := s.Prune()
	if err == nil {
		err = s.RunValueLogGC()
	}
	switch {
	case errors.Is(err, ErrClosed):
	case err != nil:
		s.log.Warn("journal maintenance failed", "err", err)
	case res.PendingEvents > 0:
		s.log.Warn("journal pruned events nobody acknowledged", "pending_events", res.PendingEvents,
			"events", res.Events, "history", res.History, "tasks", res.Tasks,
			"event_limit", s.opts.EventLimit, "pending_event_retention", s.opts.PendingEventRetention)
	case res != PruneResult{}:
		s.log.Info("journal pruned", "events", res.Events, "history", res.History, "tasks", res.Tasks)
	}
	if s.opts.maintained != nil {
		s.opts.maintained(res, err)
	}
}

// stopping reports whether Close has begun, so long loops can give up.
func (s *Store) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// badgerLogger routes Badger's logging to slog; Badger is chatty at Info.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any)   { b.log(slog.LevelError, f, a) }
func (b badgerLogger) Warningf(f string, a ...any) { b.log(slog.LevelWarn, f, a) }
func (b badgerLogger) Infof(f string, a ...any)    { b.log(slog.LevelDebug, f, a) }
func (b badgerLogger) Debugf(f string, a ...any)   { b.log(slog.LevelDebug, f, a) }

func (b badgerLogger) log(level slog.Level, format string, args []any) {
	ctx := context.Background()
	if !b.l.Enabled(ctx, level) {
		return
	}
	b.l.Log(ctx, level, strings.TrimSpace(fmt.Sprintf(format, args...)), "component", "badger")
}
