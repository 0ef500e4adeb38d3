package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// The journal's reads, and the journal opened alone.

// OpenJournal opens the store in dir (a data directory's journal
// directory) and starts its writer, without starting any server: for tools
// that read events and history, or acknowledge events. Close closes the
// store too. A directory held by another journal (a running host's) fails
// with an error wrapping persistence.ErrLocked that names it. A nil logger
// is slog.Default().
func OpenJournal(dir string, opts JournalOptions, logger *slog.Logger) (*Journal, error) {
	if logger == nil {
		logger = slog.Default()
	}
	store, err := persistence.Open(dir, persistence.Options{
		Logger:                logger,
		EventRetention:        opts.EventRetention,
		PendingEventRetention: opts.PendingEventRetention,
		EventLimit:            opts.EventLimit,
		HistoryRetention:      opts.HistoryRetention,
		Compress:              opts.Compress,
		DiskReserve:           opts.DiskReserve,
	})
	if err != nil {
		return nil, err
	}
	j := NewJournal(store, opts, logger)
	j.ownsStore = true
	return j, nil
}

// Events lists journaled events, oldest first.
func (j *Journal) Events(f persistence.EventFilter) ([]persistence.EventRecord, error) {
	return j.store.Events(f)
}

// EventsPage lists one page of events, oldest first, and the cursor to go
// on (persistence.Store.EventsPage): at most 1,000, 100 by default.
func (j *Journal) EventsPage(f persistence.EventFilter) (persistence.EventPage, error) {
	return j.store.EventsPage(f)
}

// LastEventSeq is the newest committed event's seq (0 for none), read
// without touching the store: where a listing of what comes next starts.
func (j *Journal) LastEventSeq() uint64 { return j.store.LastEventSeq() }

// Subscribe delivers the events that match f and come after f.After, as
// they are committed, oldest first, until ctx ends or the journal closes;
// then the channel is closed. f.Limit is ignored. A subscriber that keeps
// up is handed each commit's events by the writer, into a bounded queue
// (JournalOptions.LiveBuffer), from the moment Subscribe returns; one that
// falls behind holds no more memory in the journal and never slows its
// writer: it reads from the store where it left off, then joins again.
// Nothing is skipped.
func (j *Journal) Subscribe(ctx context.Context, f persistence.EventFilter) <-chan persistence.EventRecord {
	return j.subscribe(ctx, f, false)
}

// SubscribeBounded is Subscribe for a subscriber that may be slow and must
// cost nothing then (a network stream): once it falls more than
// JournalOptions.LiveBuffer events behind, it receives one record of
// method MethodEventsLagged, params {"skipped": N, "after": ID}, N the
// events it missed so far, and its channel closes. A new subscription with
// After = ID resumes it without loss.
func (j *Journal) SubscribeBounded(ctx context.Context, f persistence.EventFilter) <-chan persistence.EventRecord {
	return j.subscribe(ctx, f, true)
}

func (j *Journal) subscribe(ctx context.Context, f persistence.EventFilter, bounded bool) <-chan persistence.EventRecord {
	out := make(chan persistence.EventRecord, 64)
	// Joined before returning: every commit after Subscribe returns
	// reaches the subscriber, however late its goroutine starts.
	sub := j.fanout.add(f, j.liveBuffer)
	j.subs.Add(1)
	go func() {
		defer j.subs.Done()
		defer close(out)
		j.follow(ctx, f, sub, out, bounded)
	}()
	return out
}

// History lists history records, oldest first.
func (j *Journal) History(f persistence.HistoryFilter) ([]persistence.HistoryRecord, error) {
	return j.store.History(f)
}

// HistoryPage is EventsPage for history records.
func (j *Journal) HistoryPage(f persistence.HistoryFilter) (persistence.HistoryPage, error) {
	return j.store.HistoryPage(f)
}

// WhoHadAccess answers which scopes (sessions, or stack frames of them)
// held the group of tool (its server, for a namespaced name; else the
// group named) at the instant at, from the grant history.
func (j *Journal) WhoHadAccess(tool string, at time.Time) ([]persistence.Scope, error) {
	group := tool
	if server, _, ok := SplitToolName(tool); ok {
		group = server
	}
	return j.store.AccessAt(group, at)
}

// Servers lists the registry: every server the journal knows, with its
// origin and whether it is enabled.
func (j *Journal) Servers() ([]persistence.ServerRecord, error) { return j.store.Servers() }
