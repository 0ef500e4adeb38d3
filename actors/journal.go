package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// DefaultJournalQueue bounds the records ingested from servers (events,
// lifecycle and call history) that wait for the journal's next commit.
const DefaultJournalQueue = 1 << 14

// JournalOptions configure a Journal: the store's retention and
// compression (OpenJournal), the writer's queue, and what the host
// journals of each call. The zero value is the defaults.
type JournalOptions struct {
	// EventRetention: processed events older than this are deleted.
	// 0: 7 days; <0: not by this rule.
	EventRetention time.Duration
	// PendingEventRetention: the oldest events, acknowledged or not, are
	// deleted while older than this (counted and logged). 0: 30 days;
	// <0: not by this rule.
	PendingEventRetention time.Duration
	// EventLimit: the journal keeps at most this many events, deleting
	// the oldest processed ones first, then the oldest pending ones
	// (counted and logged). 0: 100,000; <0: no limit.
	EventLimit int
	// HistoryRetention: history records older than this are deleted.
	// 0: 30 days; <0: forever.
	HistoryRetention time.Duration
	// Queue bounds the records from servers (events, transitions, call
	// history) waiting to be written. Past it transitions and call records
	// are dropped, counted per server, and the count is itself journaled
	// as a persistence.MethodEventsDropped event; events wait (PaceWait)
	// first. 0: DefaultJournalQueue (16,384).
	Queue int
	// PaceWait is how long a server's reader waits for room in a full
	// queue before dropping one of its events (IngestPaced): a flood is
	// slowed to the disk's pace; only a stalled journal loses events
	// (counted). 0: DefaultPaceWait (1 s); <0: never wait, drop at once.
	PaceWait time.Duration
	// Linger is how long records from servers (call history, transitions,
	// events) may wait for more before they are written, so a busy host
	// syncs once per group rather than once per call. A crash loses at
	// most this much of them. Durable writes, Close and a queue a quarter
	// full end the wait at once. 0: DefaultLinger (5 ms); <0: no wait.
	Linger time.Duration
	// LiveBuffer bounds the committed events waiting for one subscriber
	// (Subscribe, SubscribeBounded) before it has lagged. 0:
	// DefaultLiveBuffer (4,096).
	LiveBuffer int
	// NoCallHistory turns off the history of tool calls (read by the
	// host, which records the calls).
	NoCallHistory bool
	// KeepCallPayloads stores each call's arguments and result in the
	// history. Off by default: they may hold what the journal should not.
	KeepCallPayloads bool
	// Compress keeps the journal's tables Snappy-compressed: events take
	// about a quarter of the disk, at the cost of memory while Badger
	// writes its tables (about 50 MiB more at the peak of a million-event
	// flood). Off by default, so memory stays bounded under a flood.
	// Durability is the same either way, and a journal written with one
	// setting opens with the other.
	Compress bool
	// DiskReserve is the free space the journal keeps on its filesystem:
	// below it the journal turns read-only (writes fail with
	// persistence.ErrDiskFull, records from servers are dropped and
	// counted) until the space returns, instead of Badger dying of SIGBUS.
	// 0: persistence.DefaultDiskReserve (256 MiB); <0: not watched.
	DiskReserve int64
}

// ReadOnlyDiskFull is JournalStats.ReadOnly while the disk is short.
const ReadOnlyDiskFull = "read-only: disk full"

// DefaultPaceWait is JournalOptions.PaceWait's default.
const DefaultPaceWait = time.Second

// DefaultLinger is JournalOptions.Linger's default: one sync per 5 ms at
// most for ingested records, about 2% of a core for Badger's WAL msync,
// where one per record took a third of the host's CPU at 40k calls/s.
const DefaultLinger = 5 * time.Millisecond

// JournalStats are the journal writer's counters since it started.
type JournalStats struct {
	Commits       uint64 // store transactions groups committed (one sync each)
	Records       uint64 // ops committed
	Events        uint64 // events committed
	Dropped       uint64 // ingested records dropped because the queue was full or a write failed
	Queued        int64  // ingested records waiting now
	WriteFailures uint64
	// ReadOnly says why the journal accepts no writes now ("read-only:
	// disk full"); empty when it does.
	ReadOnly string
	// DiskFree and DiskReserve: the space free on the journal's
	// filesystem at the last check, and the reserve below which it turns
	// read-only (0: not watched).
	DiskFree, DiskReserve uint64
}

// Journal is the host's memory: the server registry, the events servers
// pushed, the grants and the history, in a persistence.Store, and the
// single writer to that store. It is the same whether it belongs to a
// running host (mcpvisor.Host.Journal) or is opened alone to read and
// acknowledge events (OpenJournal).
//
// One goroutine, started by NewJournal (or OpenJournal) and joined by
// Close, commits: every write that arrives while a commit is under way is
// held, and goes into the next commit with the others (group commit), so a
// burst of events costs one sync.
//
// Durability: a write is durable once the method that made it returns
// (Write, Ack, and the host's registry and grant changes). Ingestion from
// server actors (Ingest) never blocks: it is bounded, and what overflows is
// counted and journaled rather than held in memory. Events from servers
// are durable once they are listed by Events.
type Journal struct {
	store  *persistence.Store
	logger *slog.Logger
	limit  int64
	batch  int // ingested records that end a linger
	pace   time.Duration
	linger time.Duration

	ops     []persistence.Op // the writer goroutine's batch, reused from commit to commit
	queued  atomic.Int64
	failing atomic.Bool // the last commit failed: log the next failure only once it succeeded again
	stats   struct {
		commits, records, events, dropped, failures atomic.Uint64
	}

	dropMu  sync.Mutex
	dropped map[string]uint64 // per server, not yet journaled
	// keepArmed: a handover of the drop counts to the store is due
	// (keepDropsSoon).
	keepArmed atomic.Bool

	// What waits for the next commit. Ingested records cost one append
	// under this lock; the writer is kicked when the queue was empty.
	mu       sync.Mutex
	writes   []*journalWrite
	ingested ingestQueue
	// spare is the last commit's ingested queue, emptied, which the next
	// takes in turn: at tens of thousands of calls a second, growing a new
	// one per commit was most of what queueing a call's record cost.
	spare    ingestQueue
	flushing []chan struct{} // closed once nothing is left to commit
	room     chan struct{}   // closed when a commit frees room in the queue
	stalled  atomic.Bool     // a paced wait timed out: drop until room returns
	closed   atomic.Bool     // set under mu

	kick   chan struct{} // something was queued (capacity 1)
	quit   chan struct{} // closed by Close once flushed
	exited chan struct{} // closed when the writer goroutine returns

	notifyMu sync.Mutex
	notify   chan struct{} // closed after a commit that appended events

	subs       sync.WaitGroup // Subscribe's goroutines, joined by Close
	fanout     eventFanout    // each commit's events to the subscribers that keep up
	liveBuffer int
	ownsStore  bool // opened by OpenJournal: Close closes it
	closeOnce  sync.Once
	closeErr   error
	done       chan struct{}
}

// NewJournal starts the writer for store: its goroutine runs until Close.
// The caller keeps owning store and closes it after Journal.Close. Only
// Queue, PaceWait, Linger and LiveBuffer of opts concern it. logger receives write
// failures and overflow reports; nil discards them.
func NewJournal(store *persistence.Store, opts JournalOptions, logger *slog.Logger) *Journal {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	limit := int64(opts.Queue)
	if limit <= 0 {
		limit = DefaultJournalQueue
	}
	pace := opts.PaceWait
	if pace == 0 {
		pace = DefaultPaceWait
	}
	linger := opts.Linger
	if linger == 0 {
		linger = DefaultLinger
	}
	j := &Journal{
		store:   store,
		logger:  logger,
		limit:   limit,
		batch:   int(max(limit/4, 1)),
		pace:    pace,
		linger:  linger,
		room:    make(chan struct{}),
		dropped: map[string]uint64{},
		kick:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		exited:  make(chan struct{}),
		notify:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	j.liveBuffer = opts.LiveBuffer
	if j.liveBuffer <= 0 {
		j.liveBuffer = DefaultLiveBuffer
	}
	go j.run()
	return j
}

// Store is the store this journal writes to, for reads. Writes go
// through the journal (Write, WriteAsync, Ingest), its single writer.
func (j *Journal) Store() *persistence.Store { return j.store }

// Write commits ops and returns once they are durable, or ctx ends (the ops
// may still be committed then). Safe for concurrent use; concurrent writers
// share commits.
func (j *Journal) Write(ctx context.Context, ops ...persistence.Op) error {
	done := make(chan error, 1)
	j.WriteAsync(ops, func(err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WriteAsync queues ops and calls done once they are committed (nil) or
// failed. done runs on the journal's goroutine, in commit order, and must
// not block. Writes from one goroutine are committed in the order given.
func (j *Journal) WriteAsync(ops []persistence.Op, done func(error)) {
	j.write(ops, func(_ persistence.Applied, err error) {
		if done != nil {
			done(err)
		}
	})
}

// write queues ops; done gets what the whole commit applied, which may
// hold other writers' ops too.
func (j *Journal) write(ops []persistence.Op, done func(persistence.Applied, error)) {
	j.mu.Lock()
	if j.closed.Load() {
		j.mu.Unlock()
		done(persistence.Applied{}, ErrClosed)
		return
	}
	j.writes = append(j.writes, &journalWrite{ops: ops, done: done})
	j.mu.Unlock()
	j.wakeWriter()
}

// wakeWriter tells the writer goroutine something is queued.
func (j *Journal) wakeWriter() {
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// Ack marks events processed. It returns once that is durable. Unknown ids
// (never committed, or pruned) are reported in an error wrapping
// persistence.ErrUnknownEvent; the known ones are acknowledged all the
// same.
func (j *Journal) Ack(ctx context.Context, ids ...uint64) error {
	if len(ids) == 0 {
		return nil
	}
	type result struct {
		applied persistence.Applied
		err     error
	}
	done := make(chan result, 1)
	j.write([]persistence.Op{persistence.AckEvents(ids...)}, func(a persistence.Applied, err error) { done <- result{a, err} })
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		r.err = ctx.Err()
	}
	if r.err != nil {
		return fmt.Errorf("journal: ack: %w", r.err)
	}
	// The commit may hold other acks: report only ours.
	var unknown []uint64
	for _, id := range r.applied.UnknownAcks {
		if slices.Contains(ids, id) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: %v", persistence.ErrUnknownEvent, unknown)
	}
	return nil
}

// Ingest queues one record from a server without blocking. It reports false
// when the queue is full: the record is dropped and counted against server,
// and the count is journaled with the next commit.
func (j *Journal) Ingest(server string, op persistence.Op) bool {
	if ok, _ := j.tryIngest(server, op, nil); ok {
		return true
	}
	j.drop(server, 1)
	return false
}

// IngestHistory is Ingest of persistence.AppendHistory(*rec), for the
// record of every call: the queue keeps a copy of *rec in place of a
// record of its own on the heap, which was most of the garbage a call's
// record made. rec is the caller's again once it returns.
func (j *Journal) IngestHistory(server string, rec *persistence.HistoryRecord) bool {
	if ok, _ := j.tryIngest(server, persistence.Op{}, rec); ok {
		return true
	}
	j.drop(server, 1)
	return false
}

// IngestPaced is Ingest for a server's reader goroutine, which may wait: a
// full queue makes it wait up to PaceWait for the next commit to free room,
// so a flooding server is slowed to the disk's pace instead of losing its
// events. When a wait times out (the journal is stalled) it drops, as
// Ingest does, without waiting again until a commit frees room. The caller
// must hold no lock and be no actor: only its own server waits.
func (j *Journal) IngestPaced(server string, op persistence.Op) bool {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		ok, room := j.tryIngest(server, op, nil)
		if ok {
			return true
		}
		if room == nil || j.pace < 0 || j.stalled.Load() {
			break
		}
		if timer == nil {
			timer = time.NewTimer(j.pace)
		}
		select {
		case <-room:
			continue
		case <-timer.C:
			j.stalled.Store(true)
		}
		break
	}
	j.drop(server, 1)
	return false
}

// tryIngest queues op, or a history record copied from *rec when rec is
// not nil, if there is room. When there is none it returns the channel
// closed when a commit frees some (nil once closed).
func (j *Journal) tryIngest(server string, op persistence.Op, rec *persistence.HistoryRecord) (bool, <-chan struct{}) {
	j.mu.Lock()
	if j.closed.Load() {
		j.mu.Unlock()
		return false, nil
	}
	if j.queued.Load() >= j.limit {
		room := j.room
		j.mu.Unlock()
		return false, room
	}
	j.queued.Add(1)
	n := j.ingested.push(server, op, rec)
	j.mu.Unlock()
	if n == 1 || n == j.batch {
		j.wakeWriter()
	}
	return true, nil
}

// freed wakes the readers waiting for room after a commit.
func (j *Journal) freed() {
	j.mu.Lock()
	close(j.room)
	j.room = make(chan struct{})
	j.mu.Unlock()
	j.stalled.Store(false)
}

func (j *Journal) drop(server string, n uint64) {
	j.stats.dropped.Add(n)
	j.dropMu.Lock()
	j.dropped[server] += n
	j.dropMu.Unlock()
}

// takeDrops turns the drop counts into events for the next commit, and
// returns the counts taken, to put back should the commit fail.
func (j *Journal) takeDrops(now time.Time) ([]persistence.Op, map[string]uint64) {
	j.dropMu.Lock()
	defer j.dropMu.Unlock()
	if len(j.dropped) == 0 {
		return nil, nil
	}
	servers := make([]string, 0, len(j.dropped))
	for s := range j.dropped {
		servers = append(servers, s)
	}
	sort.Strings(servers)
	ops := make([]persistence.Op, 0, len(servers))
	for _, s := range servers {
		n := j.dropped[s]
		params, _ := json.Marshal(map[string]uint64{"dropped": n})
		ops = append(ops, persistence.AppendEvent(persistence.EventRecord{
			Server: s, Method: persistence.MethodEventsDropped, Params: params, Received: now}))
	}
	taken := j.dropped
	j.dropped = map[string]uint64{}
	return ops, taken
}

// restoreDrops puts back counts whose commit failed, so the next commit
// journals them; the dropped records were counted in Stats already.
func (j *Journal) restoreDrops(counts map[string]uint64) {
	j.dropMu.Lock()
	defer j.dropMu.Unlock()
	for s, n := range counts {
		j.dropped[s] += n
	}
}

// Changed returns a channel closed at the next commit that appends events.
// Subscribers wait on it, then read the store after their last seq.
func (j *Journal) Changed() <-chan struct{} {
	j.notifyMu.Lock()
	defer j.notifyMu.Unlock()
	return j.notify
}

func (j *Journal) wake() {
	j.notifyMu.Lock()
	close(j.notify)
	j.notify = make(chan struct{})
	j.notifyMu.Unlock()
}

// Disk reports what the journal last saw of its disk's free space, and
// whether it is read-only for want of it. It does not block.
func (j *Journal) Disk() persistence.DiskState { return j.store.Disk() }

// Done is closed when the journal has closed.
func (j *Journal) Done() <-chan struct{} { return j.done }

// Stats returns the writer's counters and the store's sizes.
// It does not wait for the writer.
func (j *Journal) Stats() (JournalStats, persistence.Stats) {
	disk := j.store.Disk()
	w := JournalStats{
		Commits:       j.stats.commits.Load(),
		Records:       j.stats.records.Load(),
		Events:        j.stats.events.Load(),
		Dropped:       j.stats.dropped.Load(),
		Queued:        j.queued.Load(),
		WriteFailures: j.stats.failures.Load(),
		DiskFree:      disk.Free,
		DiskReserve:   disk.Reserve,
	}
	if disk.ReadOnly {
		w.ReadOnly = ReadOnlyDiskFull
	}
	return w, j.store.Stats()
}

// closeTimeout bounds Close's flush: a store that does not return leaves
// the writer goroutine behind rather than the caller.
const closeTimeout = 30 * time.Second

// Close commits everything queued, stops the writer, waits for the
// subscribers to end, and closes the store if OpenJournal opened it (a
// store given to NewJournal is its caller's). Writes after Close fail with
// ErrClosed and ingested records are counted as dropped. Idempotent: later
// calls return the first one's error. For a host's journal, the host's
// Close does it.
func (j *Journal) Close() error {
	j.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		err := j.stop(ctx)
		j.subs.Wait()
		if j.ownsStore {
			err = errors.Join(err, j.store.Close())
		}
		j.closeErr = err
	})
	return j.closeErr
}

// stop commits everything queued, then stops the writer and returns once
// its goroutine has exited. If ctx ends first (a store that does not
// return), it returns ctx's error without waiting further; the goroutine
// then ends when the commit under way returns.
func (j *Journal) stop(ctx context.Context) error {
	var err error
	flushed := make(chan struct{})
	j.mu.Lock()
	j.flushing = append(j.flushing, flushed)
	j.mu.Unlock()
	j.wakeWriter()
	select {
	case <-flushed:
	case <-ctx.Done():
		err = fmt.Errorf("journal: flushing on close: %w", ctx.Err())
	}
	j.mu.Lock()
	j.closed.Store(true)
	close(j.room) // paced readers see closed and drop
	j.room = make(chan struct{})
	j.mu.Unlock()
	close(j.quit)
	select {
	case <-j.exited:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("journal: waiting for the writer: %w", ctx.Err())
		}
	}
	close(j.done)
	j.wake()
	j.reportUnjournaledDrops()
	return err
}

// keepDropsSoon hands the drop counts of a read-only journal to the store
// within a second (at most one handover a second: each is a synced write
// of the marks file), so that a host killed while read-only loses at most
// the last second's counts rather than all of them.
func (j *Journal) keepDropsSoon() {
	if j.keepArmed.Swap(true) {
		return
	}
	time.AfterFunc(time.Second, func() {
		j.keepArmed.Store(false)
		j.dropMu.Lock()
		defer j.dropMu.Unlock()
		if j.store.Disk().ReadOnly {
			j.store.KeepDropped(j.dropped)
			clear(j.dropped)
		}
	})
}

// reportUnjournaledDrops logs the drop counts the journal could not
// journal before it closed (a read-only journal's) and keeps them in the
// store's marks file, so the next start that can write journals them.
func (j *Journal) reportUnjournaledDrops() {
	j.dropMu.Lock()
	defer j.dropMu.Unlock()
	for _, s := range slices.Sorted(maps.Keys(j.dropped)) {
		j.logger.Error("journal: records dropped, and their count not journaled yet: kept for the next start", "server", s, "count", j.dropped[s])
	}
	j.store.KeepDropped(j.dropped)
	clear(j.dropped)
}

// journalWrite is one writer's ops.
type journalWrite struct {
	ops  []persistence.Op
	done func(persistence.Applied, error)
}

// run is the writer goroutine. It commits everything queued, again and
// again while more arrives during each commit, then waits for a kick. When
// only ingested records are queued it lingers first, for company. Once
// quit is closed nothing more can be queued: it commits what is left and
// returns.
func (j *Journal) run() {
	defer close(j.exited)
	var timer *time.Timer
	for {
		// A kick left from a record queued during the last commit must
		// not cut the linger short: drop it, then look at the queue.
		select {
		case <-j.kick:
		default:
		}
		wait, empty := j.lingering()
		if wait {
			if timer == nil {
				timer = time.NewTimer(j.linger)
			} else {
				timer.Reset(j.linger)
			}
		linger:
			for {
				select {
				case <-timer.C:
					break linger
				case <-j.kick: // a write, a flush, or a quarter-full queue
					// Or the first record's kick, come after the drain
					// above: then what is queued may wait still.
					if wait, _ := j.lingering(); wait {
						continue
					}
					timer.Stop()
					break linger
				case <-j.quit:
					timer.Stop()
					break linger
				}
			}
		}
		// Nothing queued when the linger was decided: a record that
		// arrives now kicks, and lingers from the top, instead of going out
		// alone in a commit that did not wait for it.
		if !empty && j.commit() {
			continue
		}
		j.mu.Lock()
		flushed := j.flushing
		j.flushing = nil
		j.mu.Unlock()
		for _, c := range flushed {
			close(c)
		}
		select {
		case <-j.kick:
		case <-j.quit:
			for j.commit() {
			}
			return
		}
	}
}

// lingering reports whether what is queued may wait (ingested records
// only, fewer than a batch, nobody waiting on a write or a flush), and
// whether nothing at all is queued, drop counts included.
func (j *Journal) lingering() (wait, empty bool) {
	j.dropMu.Lock()
	drops := len(j.dropped)
	j.dropMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	n := j.ingested.n
	empty = n == 0 && drops == 0 && len(j.writes) == 0 && len(j.flushing) == 0
	wait = j.linger >= 0 && n > 0 && n < j.batch && len(j.writes) == 0 && len(j.flushing) == 0 && !j.closed.Load()
	return wait, empty
}

// commit takes everything queued (writes, ingested records, drop counts),
// applies it in one transaction and answers the writers. It reports false
// when there was nothing to commit.
func (j *Journal) commit() bool {
	j.mu.Lock()
	writes, ingested := j.writes, j.ingested
	j.writes, j.ingested, j.spare = nil, j.spare, ingestQueue{}
	j.mu.Unlock()
	defer func() {
		ingested.reset() // the records are committed or counted: let them go
		j.mu.Lock()
		j.spare = ingested
		j.mu.Unlock()
	}()
	n := ingested.n
	for _, w := range writes {
		n += len(w.ops)
	}
	readOnly := j.store.Disk().ReadOnly
	if n > 0 && readOnly {
		// Nothing can be written: fail at once, and keep the drop counts
		// for the first commit once the space returns.
		j.finish(writes, ingested, persistence.Applied{}, fmt.Errorf("journal %s: %w", j.store.Dir(), persistence.ErrDiskFull))
		j.keepDropsSoon()
		return true
	}
	var drops []persistence.Op
	var dropCounts map[string]uint64
	if !readOnly {
		drops, dropCounts = j.takeDrops(time.Now())
	}
	if n+len(drops) == 0 {
		// Writes of no ops, if any, are committed as they stand.
		for _, w := range writes {
			w.done(persistence.Applied{}, nil)
		}
		return len(writes) > 0
	}
	ops := slices.Grow(j.ops[:0], n+len(drops))
	for _, w := range writes {
		ops = append(ops, w.ops...)
	}
	ingested.each(func(in *ingestedOp) {
		if in.isHistory {
			// ingested is this commit's alone until finish: the record
			// stays where the op points.
			ops = append(ops, persistence.AppendHistoryOf(&in.history))
		} else {
			ops = append(ops, in.op)
		}
	})
	ops = append(ops, drops...)
	// Writers read events and acks back from what was applied, never the
	// calls: each would be copied into the report for nothing.
	applied, err := j.store.ApplyWith(ops, persistence.ApplyOptions{OmitCalls: true})
	clear(ops)
	j.ops = ops[:0]
	if err != nil {
		j.restoreDrops(dropCounts) // logged by the commit that journals them
	} else {
		for _, s := range slices.Sorted(maps.Keys(dropCounts)) {
			j.logger.Warn("journal: records dropped", "server", s, "count", dropCounts[s])
		}
	}
	j.finish(writes, ingested, applied, err)
	// Drop counts alone that failed wait for the next write: retrying
	// them at once would spin on a store that keeps failing.
	return err == nil || n > 0
}

func (j *Journal) finish(writes []*journalWrite, ingested ingestQueue, applied persistence.Applied, err error) {
	j.queued.Add(-int64(ingested.n))
	if ingested.n > 0 {
		j.freed()
	}
	if err != nil {
		j.stats.failures.Add(1)
		if !j.failing.Swap(true) { // a full disk fails every commit: say it once
			j.logger.Error("journal: commit failed; records from servers are dropped and counted until commits succeed", "err", err)
		}
		// Ingested records are lost: count them, so the loss itself is
		// journaled once the store accepts writes again.
		ingested.each(func(in *ingestedOp) { j.drop(in.server, 1) })
	} else {
		if j.failing.Swap(false) {
			j.logger.Warn("journal: commits succeed again")
		}
		j.stats.commits.Add(1)
		n := ingested.n
		for _, w := range writes {
			n += len(w.ops)
		}
		j.stats.records.Add(uint64(n))
		j.stats.events.Add(uint64(len(applied.Events)))
	}
	for _, w := range writes {
		w.done(applied, err)
	}
	if len(applied.Events) > 0 {
		j.fanout.publish(applied.Events)
		j.wake()
	}
}
