package persistence

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Open's policy on damage: it never lets Badger delete or truncate what it
// cannot read without a copy kept, and never starts an empty journal over
// files that hold records. What it cannot open without losing records
// (a MANIFEST missing, unreadable or not naming the tables present; a
// table whose checksums fail or that is cut short) it refuses with a
// *DamagedError; what Badger drops by design (a WAL's unreadable tail) it
// lets go, and counts with the marks file. Either way the files were
// first copied into dir/quarantine-<time>, and the findings are logged at
// error level.

// Recovery is what Open found wrong with the journal and did about it.
// The zero value is a journal that opened whole.
type Recovery struct {
	// Findings are what Inspect found before Badger opened the journal.
	Findings []Finding `json:"findings,omitempty"`
	// Quarantine is the directory the journal's files were copied to
	// before it was opened, when anything was found; "" otherwise.
	Quarantine string `json:"quarantine,omitempty"`
	// LostEvents and LostHistory count the events and history records
	// (transitions, calls, grants) committed before the journal was last
	// closed or killed that are not in it now: at least this many, as the
	// marks file may lag by a second.
	LostEvents  uint64 `json:"lostEvents,omitempty"`
	LostHistory uint64 `json:"lostHistory,omitempty"`
}

// Damaged reports whether Open found anything wrong.
func (r Recovery) Damaged() bool {
	return len(r.Findings) > 0 || r.LostEvents > 0 || r.LostHistory > 0
}

// String says in one line what was found and lost.
func (r Recovery) String() string {
	if !r.Damaged() {
		return "whole"
	}
	var parts []string
	if r.LostEvents > 0 || r.LostHistory > 0 {
		parts = append(parts, fmt.Sprintf("lost at least %d events and %d history records", r.LostEvents, r.LostHistory))
	}
	for _, f := range r.Findings {
		parts = append(parts, f.String())
	}
	if r.Quarantine != "" {
		parts = append(parts, "the files as found are kept in "+r.Quarantine)
	}
	return strings.Join(parts, "; ")
}

// Recovery returns what Open found and did. It does not block.
func (s *Store) Recovery() Recovery { return s.recovery }

// DamagedError is Open's refusal of a damaged journal. It wraps
// ErrDamaged.
type DamagedError struct {
	Dir        string
	Findings   []Finding
	Quarantine string // where the files were copied, or "" if copying failed
	Cause      error  // Badger's error, when it was Badger that failed
}

func (e *DamagedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "journal %s is damaged and was not opened", e.Dir)
	for _, f := range e.Findings {
		b.WriteString("; " + f.String())
	}
	if e.Cause != nil {
		b.WriteString("; " + firstLine(e.Cause.Error()))
	}
	if e.Quarantine != "" {
		fmt.Fprintf(&b, "; nothing was deleted, and a copy of its files is in %s", e.Quarantine)
	} else {
		b.WriteString("; nothing was deleted")
	}
	b.WriteString(": restore the journal from a backup, or set it aside (mcpvisor doctor --reset) to start an empty one")
	return b.String()
}

func (e *DamagedError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrDamaged}
	}
	return []error{ErrDamaged, e.Cause}
}

// inspectBeforeOpen inspects dir and, when anything is wrong, copies its
// files aside and logs the findings; it refuses (a *DamagedError) when a
// finding is fatal.
// Tables stamped in clean are checked for structure only (see inspect).
func inspectBeforeOpen(dir string, now time.Time, logger *slog.Logger, clean map[string]TableStamp, written int64) (Recovery, error) {
	var rec Recovery
	var in Inspection
	err := guard(func() (err error) {
		in, err = inspect(dir, clean, written)
		return err
	})
	if err != nil {
		return rec, fmt.Errorf("journal %s: %w", dir, err)
	}
	rec.Findings = in.Findings
	if len(in.Findings) == 0 {
		return rec, nil
	}
	q, err := quarantine(dir, now)
	if err != nil {
		// Without a copy nothing may go on that could change the files.
		return rec, &DamagedError{Dir: dir, Findings: in.Findings,
			Cause: fmt.Errorf("copying its files aside failed: %w", err)}
	}
	rec.Quarantine = q
	for _, f := range in.Findings {
		logger.Error("journal damaged", "file", f.File, "problem", f.Problem, "records", f.Records, "quarantine", q)
	}
	if in.Fatal() {
		return rec, &DamagedError{Dir: dir, Findings: in.Findings, Quarantine: q}
	}
	return rec, nil
}

// refuse is Open's answer to Badger failing on damage Inspect did not see:
// the files are copied aside now, if they were not before.
func (r Recovery) refuse(dir string, logger *slog.Logger, cause error) error {
	q := r.Quarantine
	if q == "" {
		if copied, err := quarantine(dir, time.Now()); err == nil {
			q = copied
		}
	}
	logger.Error("journal damaged: not opened", "err", cause, "quarantine", q)
	return &DamagedError{Dir: dir, Findings: r.Findings, Quarantine: q, Cause: cause}
}

// isDamage tells an open failure caused by the files' contents from one
// of the system's (permissions, a full disk), which is no damage.
func isDamage(err error) bool {
	if errors.Is(err, ErrDamaged) || errors.Is(err, ErrCorrupt) {
		return true
	}
	var pathErr *os.PathError
	var errno syscall.Errno
	return !errors.As(err, &pathErr) && !errors.As(err, &errno)
}

// countLoss compares the journal's high-water marks with those of the
// marks file, m, and, when the file's are higher, counts the difference
// as lost and keeps the seqs above them unused, so no new record takes a
// lost one's seq.
func (s *Store) countLoss(rec *Recovery, m Marks) {
	if m.Event > s.reservedEvent {
		rec.LostEvents = m.Event - s.reservedEvent
		s.reservedEvent = m.Event
		s.lastEvent.Store(m.Event)
	}
	if m.History > s.reservedHistory {
		rec.LostHistory = m.History - s.reservedHistory
		s.reservedHistory = m.History
		s.lastHistory.Store(m.History)
	}
	if rec.LostEvents > 0 || rec.LostHistory > 0 {
		// The raised marks are committed, so the loss is counted once and
		// the lost seqs stay unused after the next start too.
		err := s.db.Update(func(txn *badger.Txn) error {
			if err := txn.Set([]byte(keyEventMark), encodeMark(s.reservedEvent)); err != nil {
				return err
			}
			return txn.Set([]byte(keyHistoryMark), encodeMark(s.reservedHistory))
		})
		if err != nil {
			s.log.Error("journal marks not raised past the lost records", "err", err)
		}
		s.log.Error("journal lost records: they were committed before it was last closed or killed, and are not in it now",
			"events", rec.LostEvents, "history", rec.LostHistory, "quarantine", rec.Quarantine)
	}
}

// writeMarks writes the marks file if the seq marks or the drop counts
// moved since the last write. A failure is logged at debug: the seq marks
// only serve to count a loss, and the next write tries again.
func (s *Store) writeMarks() {
	s.marksMu.Lock()
	defer s.marksMu.Unlock()
	m := Marks{Event: s.lastEvent.Load(), History: s.lastHistory.Load(), Dropped: s.dropped}
	if m.Event == s.marks.Event && m.History == s.marks.History && !s.dropsMoved {
		return
	}
	s.putMarks(m, false)
}

// putMarks writes m as the marks file. The caller holds marksMu.
func (s *Store) putMarks(m Marks, sync bool) error {
	if err := writeMarks(s.dir, m, sync); err != nil {
		s.log.Debug("journal marks not written", "err", err)
		return err
	}
	s.marks, s.dropsMoved = m, false
	return nil
}

// KeepDropped keeps counts, per server, of records the caller dropped and
// could not journal (a journal read-only for want of space fails every
// write) in the marks file, so that they are not lost with the process:
// the next Open that can write, or this store once it is writable again,
// journals them as MethodEventsDropped events. The counts add to those
// kept before. It is safe concurrently, and after Close.
func (s *Store) KeepDropped(counts map[string]uint64) {
	if len(counts) == 0 {
		return
	}
	s.marksMu.Lock()
	defer s.marksMu.Unlock()
	if s.dropped == nil {
		s.dropped = map[string]uint64{}
	}
	for server, n := range counts {
		s.dropped[server] += n
	}
	s.dropsMoved = true
	m := s.marks // after Close, the clean mark it wrote
	m.Dropped = s.dropped
	if err := s.putMarks(m, true); err != nil {
		s.log.Error("journal: drop counts not kept", "err", err, "counts", counts)
	}
}

// journalDropped journals the drop counts kept in the marks file (by a
// host that stopped while the journal was read-only) as
// MethodEventsDropped events, and then forgets them. Should the process
// die between the commit and the rewrite of the marks, the next start
// journals them again: counted twice rather than lost.
func (s *Store) journalDropped() {
	s.marksMu.Lock()
	counts := maps.Clone(s.dropped)
	s.marksMu.Unlock()
	if len(counts) == 0 {
		return
	}
	now := s.opts.Now()
	servers := slices.Sorted(maps.Keys(counts))
	ops := make([]Op, 0, len(servers))
	for _, server := range servers {
		params, _ := json.Marshal(map[string]uint64{"dropped": counts[server]})
		ops = append(ops, AppendEvent(EventRecord{Server: server, Method: MethodEventsDropped, Params: params, Received: now}))
	}
	if _, err := s.Apply(ops); err != nil {
		s.log.Warn("journal: drop counts kept from before not journaled yet", "err", err)
		return
	}
	for _, server := range servers {
		s.log.Warn("journal: records dropped before the last stop", "server", server, "count", counts[server])
	}
	s.marksMu.Lock()
	defer s.marksMu.Unlock()
	for server, n := range counts {
		if s.dropped[server] -= n; s.dropped[server] == 0 {
			delete(s.dropped, server)
		}
	}
	s.dropsMoved = true
	m := s.marks
	m.Event, m.History, m.Dropped = s.lastEvent.Load(), s.lastHistory.Load(), s.dropped
	s.putMarks(m, true)
}
