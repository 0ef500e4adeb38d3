package persistence

import (
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// SchemaVersion is written into every record (field "v"). A decoder meeting
// a higher version than it knows refuses the record with ErrSchemaVersion
// rather than misreading it; lower versions are upgraded on read.
const SchemaVersion = 1

// Origins of a server in the registry.
const (
	OriginConfig = "config" // upserted from the config file at every start
	OriginAPI    = "api"    // added by Register; kept until Unregister
)

// ServerRecord is one row of the server registry, the source of truth for
// which servers exist.
type ServerRecord struct {
	V            int       `msgpack:"v"`
	Name         string    `msgpack:"name"`
	Origin       string    `msgpack:"origin"` // OriginConfig or OriginAPI
	Enabled      bool      `msgpack:"enabled"`
	EnabledByAPI bool      `msgpack:"enabled_by_api"` // Enabled was last set by SetEnabled, which a config upsert keeps
	Transport    string    `msgpack:"transport"`
	Description  string    `msgpack:"description,omitempty"`
	FriendlyName string    `msgpack:"friendly_name,omitempty"`
	Config       []byte    `msgpack:"config"` // the entry as JSON, as in an mcpServers file; ${VAR} references unexpanded
	Created      time.Time `msgpack:"created"`
	Updated      time.Time `msgpack:"updated"`
}

// CatalogRecord is the last tool catalog a server listed.
type CatalogRecord struct {
	V       int          `msgpack:"v"`
	Server  string       `msgpack:"server"`
	Tools   []ToolRecord `msgpack:"tools"`
	Updated time.Time    `msgpack:"updated"`
}

// ToolRecord is one tool of a catalog, as the host publishes it (already
// namespaced and trimmed). The JSON fields are kept as raw bytes.
type ToolRecord struct {
	Name         string `msgpack:"name"` // mcp__<server>__<tool>
	Tool         string `msgpack:"tool"` // the server's own name
	Title        string `msgpack:"title,omitempty"`
	Description  string `msgpack:"description,omitempty"`
	InputSchema  []byte `msgpack:"input_schema,omitempty"`
	OutputSchema []byte `msgpack:"output_schema,omitempty"`
	Annotations  []byte `msgpack:"annotations,omitempty"` // JSON
	Icons        []byte `msgpack:"icons,omitempty"`       // JSON
	Meta         []byte `msgpack:"meta,omitempty"`
	Destructive  bool   `msgpack:"destructive"`
	TaskSupport  string `msgpack:"task_support,omitempty"`
}

// Event statuses.
const (
	EventPending   = "pending"
	EventProcessed = "processed"
)

// MethodEventsDropped is the method of the event the journal writes when
// ingestion overflowed: params {"dropped": N}.
const MethodEventsDropped = "mcpvisor/events_dropped"

// EventRecord is one notification a server pushed, waiting to be processed.
type EventRecord struct {
	V           int       `msgpack:"v"`
	Seq         uint64    `msgpack:"seq"` // assigned when committed; increasing, never reused
	Server      string    `msgpack:"server"`
	Method      string    `msgpack:"method"`
	Params      []byte    `msgpack:"params,omitempty"` // raw JSON as received
	Received    time.Time `msgpack:"received"`
	Status      string    `msgpack:"status"` // EventPending or EventProcessed
	ProcessedAt time.Time `msgpack:"processed_at,omitempty"`
}

// Scope is who holds grants: a session (root agent, Stack "") or one stack
// frame within it (a sub-agent).
type Scope struct {
	Session string `msgpack:"session"`
	Stack   string `msgpack:"stack,omitempty"`
}

// GrantRecord gives a scope a tool group: a server name or "config".
type GrantRecord struct {
	V       int       `msgpack:"v"`
	Scope   Scope     `msgpack:"scope"`
	Group   string    `msgpack:"group"`
	Granted time.Time `msgpack:"granted"`
}

// HistoryKind tells what a HistoryRecord reports.
type HistoryKind string

const (
	HistoryLifecycle HistoryKind = "lifecycle" // a server's transition
	HistoryCall      HistoryKind = "call"      // one tool call
	HistoryGrant     HistoryKind = "grant"     // a group granted to a scope
	HistoryRevoke    HistoryKind = "revoke"    // a grant removed (frame or session ended)
)

// HistoryRecord is one entry of the append-only history.
type HistoryRecord struct {
	V      int         `msgpack:"v"`
	Seq    uint64      `msgpack:"seq"` // assigned when committed
	Time   time.Time   `msgpack:"time"`
	Kind   HistoryKind `msgpack:"kind"`
	Server string      `msgpack:"server,omitempty"`

	// HistoryLifecycle: Transition is spawned, ready, exited, backoff,
	// failed, stopped, enabled, disabled, registered or unregistered.
	Transition string   `msgpack:"transition,omitempty"`
	Detail     string   `msgpack:"detail,omitempty"` // exit status, error, backoff delay
	PID        int      `msgpack:"pid,omitempty"`
	Stderr     []string `msgpack:"stderr,omitempty"` // the last lines before an exit

	// HistoryCall
	Scope      Scope         `msgpack:"scope,omitempty"`
	Tool       string        `msgpack:"tool,omitempty"` // namespaced
	Duration   time.Duration `msgpack:"duration,omitempty"`
	Outcome    string        `msgpack:"outcome,omitempty"` // ok, tool_error, timeout, cancelled, unavailable, error
	Error      string        `msgpack:"error,omitempty"`
	ResultSize int           `msgpack:"result_size,omitempty"`
	Arguments  []byte        `msgpack:"arguments,omitempty"` // only when the host is told to keep them
	Result     []byte        `msgpack:"result,omitempty"`

	// HistoryGrant, HistoryRevoke (Scope above)
	Group string `msgpack:"group,omitempty"`
}

// Task statuses: the five of MCP tasks (2025-11-25) as a server reports
// them, and two the host sets itself.
const (
	TaskWorking       = protocol.TaskWorking
	TaskInputRequired = protocol.TaskInputRequired
	TaskCompleted     = protocol.TaskCompleted
	TaskFailed        = protocol.TaskFailed
	TaskCancelled     = protocol.TaskCancelled
	TaskLost          = "lost"    // the server no longer knows the task (tasks/get failed with an unknown id, or it restarted)
	TaskExpired       = "expired" // Deadline passed before the task ended
)

// TaskRecord is one MCP task the host started with a tools/call and polls
// with tasks/get until it ends, then fetches with tasks/result. It is kept
// so a restarted host resumes polling; keyed by (Server, TaskID), as task
// ids are unique per server only.
type TaskRecord struct {
	V             int           `msgpack:"v"`
	Server        string        `msgpack:"server"`
	TaskID        string        `msgpack:"task_id"`
	Tool          string        `msgpack:"tool"` // namespaced
	Scope         Scope         `msgpack:"scope,omitempty"`
	Created       time.Time     `msgpack:"created"`
	Updated       time.Time     `msgpack:"updated"`
	TTL           time.Duration `msgpack:"ttl,omitempty"`           // as the server gave it; 0: none given
	PollInterval  time.Duration `msgpack:"poll_interval,omitempty"` // as the server suggested; 0: none
	Status        string        `msgpack:"status"`                  // TaskWorking ... TaskExpired
	StatusMessage string        `msgpack:"status_message,omitempty"`
	Detached      bool          `msgpack:"detached"`           // the caller did not wait for the outcome
	Deadline      time.Time     `msgpack:"deadline,omitempty"` // the host gives up (TaskExpired) here; zero: never
	Result        []byte        `msgpack:"result,omitempty"`   // the tasks/result JSON, once completed
	Error         string        `msgpack:"error,omitempty"`
	Done          bool          `msgpack:"done"`                // terminal and its outcome delivered; Prune may delete it
	EventSeq      uint64        `msgpack:"event_seq,omitempty"` // the event that announced the outcome; 0 until then
}
