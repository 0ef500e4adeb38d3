package mcpvisor

import (
	"log/slog"
	"path/filepath"

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
	// EventPage is one page of a listing of events and the cursor to go on.
	EventPage = persistence.EventPage
	// HistoryPage is one page of a listing of history records.
	HistoryPage = persistence.HistoryPage
	// HistoryKind tells what a HistoryRecord reports.
	HistoryKind = persistence.HistoryKind
	// RawJSON is a JSON value a journal record keeps as bytes (an event's
	// params, a call's arguments and result): it marshals as itself when
	// valid, else as null.
	RawJSON = persistence.RawJSON
	// JournalStats are the journal writer's counters.
	JournalStats = actors.JournalStats
	// JournalRecovery is what opening the journal found wrong with its
	// files and did about it: the findings, where the files were copied,
	// and the events and history records counted lost.
	JournalRecovery = persistence.Recovery
	// JournalFinding is one thing found wrong with a journal file.
	JournalFinding = persistence.Finding
	// JournalInspection is what InspectJournal found.
	JournalInspection = persistence.Inspection
	// StoreStats are the store's sizes and sequence high-water marks.
	StoreStats = persistence.Stats
	// DiskState is what the journal last saw of its disk's free space
	// (Journal.Disk).
	DiskState = persistence.DiskState
	// ServerRecord is one server of the registry: its origin, whether it is
	// enabled, and its entry as JSON with ${VAR} references unexpanded.
	ServerRecord = persistence.ServerRecord
)

// Origins of a ServerRecord.
const (
	OriginConfig = persistence.OriginConfig // from the config file
	OriginAPI    = persistence.OriginAPI    // from Register or a host tool
)

// Page bounds of Journal.EventsPage and Journal.HistoryPage, and of the
// sidecar's listings.
const (
	DefaultPageLimit = persistence.DefaultPageLimit // a page's size when no limit is given
	MaxPageLimit     = persistence.MaxPageLimit     // the largest page
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

// JournalReadOnlyDiskFull is JournalStats.ReadOnly, and /healthz's
// "journal", while the journal's disk has less than its reserve free.
const JournalReadOnlyDiskFull = actors.ReadOnlyDiskFull

// JournalOptions configure the journal kept in DataDir/journal. The zero
// value is the defaults.
type JournalOptions = actors.JournalOptions

// Journal is the host's memory: the server registry, the events servers
// pushed, the grants and the history, and the single writer to them
// (Host.Journal, or OpenJournal). Its methods are actors.Journal's.
type Journal = actors.Journal

// OpenJournal opens the journal of a data directory (DefaultDataDir when
// empty) without starting any server: for tools that read events and
// history, or acknowledge events. A directory held by a running host fails
// with an error wrapping ErrJournalLocked that names it. A nil logger is
// slog.Default().
func OpenJournal(dataDir string, opts JournalOptions, logger *slog.Logger) (*Journal, error) {
	if dataDir == "" {
		dataDir = DefaultDataDir
	}
	return actors.OpenJournal(filepath.Join(dataDir, "journal"), opts, logger)
}

// JournalDir is the journal's directory in a data directory
// (DefaultDataDir when empty).
func JournalDir(dataDir string) string {
	if dataDir == "" {
		dataDir = DefaultDataDir
	}
	return filepath.Join(dataDir, "journal")
}

// InspectJournal checks a data directory's journal without opening or
// changing it: its MANIFEST against its tables, every table's checksums,
// and its WALs' tails. It reads the whole journal. It fails with an error
// wrapping ErrJournalLocked while a host holds the journal.
func InspectJournal(dataDir string) (JournalInspection, error) {
	return persistence.Check(JournalDir(dataDir))
}

// SetJournalAside moves every file of a data directory's journal into a
// new quarantine directory inside it, so that the next start begins an
// empty journal; nothing is deleted. It fails with ErrJournalLocked while
// a host holds the journal. It returns the quarantine's path.
func SetJournalAside(dataDir string) (string, error) {
	return persistence.SetAside(JournalDir(dataDir))
}
