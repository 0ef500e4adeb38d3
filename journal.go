package mcpvisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// Journal record types, re-exported.
type (
	// JournalEvent is a notification a server pushed, as journaled.
	JournalEvent = persistence.EventRecord
	// EventFilter selects journaled events.
	EventFilter = persistence.EventFilter
	// HistoryRecord is one entry of the history: a server's transition, a
	// tool call, a grant or a revocation.
	HistoryRecord = persistence.HistoryRecord
	// HistoryFilter selects history records.
	HistoryFilter = persistence.HistoryFilter
	// HistoryKind tells what a HistoryRecord reports.
	HistoryKind = persistence.HistoryKind
	// RawJSON is a JSON value a journal record keeps as bytes (an event's
	// params, a call's arguments and result): it marshals as itself when
	// valid, else as null.
	RawJSON = persistence.RawJSON
	// JournalStats are the journal writer's counters.
	JournalStats = actors.JournalStats
	// StoreStats are the store's sizes and sequence high-water marks.
	StoreStats = persistence.Stats
	// ServerRecord is one server of the registry: its origin, whether it is
	// enabled, and its entry as JSON with ${VAR} references unexpanded.
	ServerRecord = persistence.ServerRecord
)

// Origins of a ServerRecord.
const (
	OriginConfig = persistence.OriginConfig // from the config file
	OriginAPI    = persistence.OriginAPI    // from Register or a host tool
)

// Event statuses and history kinds.
const (
	EventPending      = persistence.EventPending
	EventProcessed    = persistence.EventProcessed
	HistoryLifecycle  = persistence.HistoryLifecycle
	HistoryCall       = persistence.HistoryCall
	HistoryGrant      = persistence.HistoryGrant
	HistoryRevoke     = persistence.HistoryRevoke
	HistoryTool       = persistence.HistoryTool // a tool definition seen, changed, approved or rejected
	MethodEventsDrops = persistence.MethodEventsDropped
)

// JournalOptions configure the journal kept in DataDir/journal. The zero
// value is the defaults.
type JournalOptions struct {
	// EventRetention: processed events older than this are deleted. Pending
	// events are never deleted. 0: 7 days; <0: forever.
	EventRetention time.Duration
	// HistoryRetention: history records older than this are deleted.
	// 0: 30 days; <0: forever.
	HistoryRetention time.Duration
	// Queue bounds the records from servers (events, transitions, call
	// history) waiting to be written. Past it transitions and call records
	// are dropped and the number dropped is itself journaled; events wait
	// (PaceWait) first. 0: 16,384.
	Queue int
	// PaceWait is how long a server's reader waits for room in a full
	// queue before dropping one of its events: a flood is slowed to the
	// disk's pace; only a stalled journal loses events (counted). 0: 1 s;
	// <0: never wait, drop at once.
	PaceWait time.Duration
	// Linger is how long records from servers (call history, transitions,
	// events) may wait for more before they are written, so a busy host
	// syncs once per group rather than once per call. A crash loses at
	// most this much of them; durable writes never wait. 0: 5 ms; <0: no
	// wait.
	Linger time.Duration
	// NoCallHistory turns off the history of tool calls.
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
}

// Journal is the host's memory: the server registry, the events servers
// pushed, the grants and the history, in a Badger store. It is the same
// whether it belongs to a running Host (Host.Journal) or is opened alone to
// read and acknowledge events (OpenJournal).
//
// Durability: a write is durable once the method that made it returns
// (Ack, and the Host's Register, Unregister, SetEnabled, Activate and End).
// Events from servers are durable once they are listed by Events.
type Journal struct {
	store  *persistence.Store
	writer *actors.Journal

	closeOnce sync.Once
	closeErr  error
	subs      sync.WaitGroup
}

// OpenJournal opens the journal of a data directory without starting any
// server: for tools that read events and history, or acknowledge events.
// A directory held by a running host fails with an error wrapping
// ErrJournalLocked that names it.
func OpenJournal(dataDir string, opts JournalOptions, logger *slog.Logger) (*Journal, error) {
	if dataDir == "" {
		dataDir = DefaultDataDir
	}
	if logger == nil {
		logger = slog.Default()
	}
	store, err := persistence.Open(filepath.Join(dataDir, "journal"), persistence.Options{
		Logger:           logger,
		EventRetention:   opts.EventRetention,
		HistoryRetention: opts.HistoryRetention,
		Compress:         opts.Compress,
	})
	if err != nil {
		return nil, err
	}
	return &Journal{
		store:  store,
		writer: actors.NewJournal(store, actors.JournalOptions{Logger: logger, Queue: opts.Queue, PaceWait: opts.PaceWait, Linger: opts.Linger}),
	}, nil
}

// Close flushes what is queued and closes the store. Idempotent. For a
// host's journal, Host.Close does it.
func (j *Journal) Close() error {
	j.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := j.writer.Close(ctx)
		j.subs.Wait()
		j.closeErr = errors.Join(err, j.store.Close())
	})
	return j.closeErr
}

// Events lists journaled events, oldest first.
func (j *Journal) Events(f EventFilter) ([]JournalEvent, error) { return j.store.Events(f) }

// Ack marks events processed. It returns once that is durable. Unknown ids
// are reported in an error wrapping ErrUnknownEvent; the known ones are
// acknowledged all the same.
func (j *Journal) Ack(ctx context.Context, ids ...uint64) error {
	if len(ids) == 0 {
		return nil
	}
	unknown, err := j.writer.Ack(ctx, ids...)
	if err != nil {
		return fmt.Errorf("journal: ack: %w", err)
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: %v", ErrUnknownEvent, unknown)
	}
	return nil
}

// Subscribe delivers the events that match f and come after f.After, as
// they are committed, oldest first, until ctx ends or the journal closes;
// then the channel is closed. f.Limit is ignored. A slow reader holds no
// memory in the journal: it reads from the store where it left off.
func (j *Journal) Subscribe(ctx context.Context, f EventFilter) <-chan JournalEvent {
	out := make(chan JournalEvent, 64)
	j.subs.Add(1)
	go func() {
		defer j.subs.Done()
		defer close(out)
		f.Limit = 1024
		for {
			changed := j.writer.Changed() // before reading: no commit is missed
			evs, err := j.store.Events(f)
			if err != nil {
				return
			}
			for _, ev := range evs {
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				case <-j.writer.Done():
					return
				}
				f.After = ev.Seq
			}
			if len(evs) == f.Limit {
				continue
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			case <-j.writer.Done():
				return
			}
		}
	}()
	return out
}

// History lists history records, oldest first.
func (j *Journal) History(f HistoryFilter) ([]HistoryRecord, error) { return j.store.History(f) }

// WhoHadAccess answers which scopes (sessions, or stack frames of them)
// held the group of tool (its server, for a namespaced name; else the
// group named) at the instant at, from the grant history.
func (j *Journal) WhoHadAccess(tool string, at time.Time) ([]Scope, error) {
	group := tool
	if server, _, ok := SplitToolName(tool); ok {
		group = server
	}
	return j.store.AccessAt(group, at)
}

// Stats returns the writer's counters and the store's sizes.
func (j *Journal) Stats() (JournalStats, StoreStats) { return j.writer.Stats(), j.store.Stats() }

// Servers lists the registry: every server the journal knows, with its
// origin and whether it is enabled.
func (j *Journal) Servers() ([]ServerRecord, error) { return j.store.Servers() }
