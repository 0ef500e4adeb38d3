package persistence

import (
	"bytes"
	"encoding/json"
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
// ingestion overflowed: params {"dropped": N}; or when a server pushed
// events past its rate bound: params {"dropped": N, "method": M,
// "reason": "rate", "intervalMs": I}.
const MethodEventsDropped = "mcpvisor/events_dropped"

// EventRecord is one notification a server pushed, waiting to be processed.
// Its JSON is the API's: camelCase, Seq as "id", the version left out.
type EventRecord struct {
	V           int       `msgpack:"v" json:"-"`
	Seq         uint64    `msgpack:"seq" json:"id"` // assigned when committed; increasing, never reused
	Server      string    `msgpack:"server" json:"server"`
	Method      string    `msgpack:"method" json:"method"`
	Params      RawJSON   `msgpack:"params,omitempty" json:"params,omitempty"` // raw JSON as received
	Received    time.Time `msgpack:"received" json:"received"`
	Status      string    `msgpack:"status" json:"status"` // EventPending or EventProcessed
	ProcessedAt time.Time `msgpack:"processed_at,omitempty" json:"processedAt,omitzero"`
}

// RawJSON is a JSON value kept as its bytes. It marshals as those bytes
// when they are valid JSON and as null otherwise, so that one bad record
// cannot make json.Marshal of a list fail; it unmarshals as a copy of the
// value, nil for null. In msgpack it is a byte string, as []byte is. (It
// has no IsZero method on purpose: msgpack's omitempty would call it.)
type RawJSON []byte

// MarshalJSON implements json.Marshaler.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 || !json.Valid(r) {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*r = nil
		return nil
	}
	*r = append((*r)[:0], b...)
	return nil
}

// Scope is who holds grants: a session (root agent, Stack "") or one stack
// frame within it (a sub-agent).
type Scope struct {
	Session string `msgpack:"session" json:"session"`
	Stack   string `msgpack:"stack,omitempty" json:"stack,omitempty"`
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
	HistoryTool      HistoryKind = "tool"      // a tool definition seen, changed, approved or rejected
)

// HistoryRecord is one entry of the append-only history. Its JSON is
// camelCase, Seq as "id", the version left out, Duration in nanoseconds.
type HistoryRecord struct {
	V      int         `msgpack:"v" json:"-"`
	Seq    uint64      `msgpack:"seq" json:"id"` // assigned when committed
	Time   time.Time   `msgpack:"time" json:"time"`
	Kind   HistoryKind `msgpack:"kind" json:"kind"`
	Server string      `msgpack:"server,omitempty" json:"server,omitempty"`

	// HistoryLifecycle: Transition is spawned, ready, exited, backoff,
	// failed, stopped, enabled, disabled, registered or unregistered.
	Transition string   `msgpack:"transition,omitempty" json:"transition,omitempty"`
	Detail     string   `msgpack:"detail,omitempty" json:"detail,omitempty"` // exit status, error, backoff delay
	PID        int      `msgpack:"pid,omitempty" json:"pid,omitempty"`
	Stderr     []string `msgpack:"stderr,omitempty" json:"stderr,omitempty"` // the last lines before an exit

	// HistoryCall: a tools/call, or (Method) another request that passed
	// the host's request pipeline, whose Tool is then what it was about
	// (the resource's URI, the prompt's name).
	Method   string `msgpack:"method,omitempty" json:"method,omitempty"` // "" for tools/call
	Scope    Scope  `msgpack:"scope,omitempty" json:"scope,omitzero"`
	Tool     string `msgpack:"tool,omitempty" json:"tool,omitempty"`          // namespaced, with the server's own name for the tool
	CalledAs string `msgpack:"called_as,omitempty" json:"calledAs,omitempty"` // the name the caller used, when not Tool (a bare or mapped one)
	// Duration leaves out Waited, the time the call waited for a person
	// (an elicitation, an approval): it is the server's time, not theirs.
	Duration   time.Duration `msgpack:"duration,omitempty" json:"durationNs,omitempty"`
	Waited     time.Duration `msgpack:"waited,omitempty" json:"waitedNs,omitempty"`
	CallID     string        `msgpack:"call_id,omitempty" json:"callId,omitempty"`  // the call's id as the inbox showed it (pipeline.Call.ID)
	Outcome    string        `msgpack:"outcome,omitempty" json:"outcome,omitempty"` // ok, tool_error, timeout, cancelled, unavailable, error
	Error      string        `msgpack:"error,omitempty" json:"error,omitempty"`
	ResultSize int           `msgpack:"result_size,omitempty" json:"resultSize,omitempty"`
	Arguments  RawJSON       `msgpack:"arguments,omitempty" json:"arguments,omitempty"` // only when the host is told to keep them
	Result     RawJSON       `msgpack:"result,omitempty" json:"result,omitempty"`

	// HistoryGrant, HistoryRevoke (Scope above)
	Group string `msgpack:"group,omitempty" json:"group,omitempty"`

	// HistoryTool (Tool above, Transition new, changed, removed, approved
	// or rejected, Detail the diff from the approved definition or the
	// findings): Hash is the definition's toolpin hash, Definition its
	// canonical JSON when new or changed, By who decided.
	Hash       string  `msgpack:"hash,omitempty" json:"hash,omitempty"`
	Definition RawJSON `msgpack:"definition,omitempty" json:"definition,omitempty"`
	By         string  `msgpack:"by,omitempty" json:"by,omitempty"`
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

// GatewayTaskRecord is a task of the gateway's own (the 2026-07-28 tasks
// extension, served for any tool): written when the task is created and
// when it ends, so that tasks/get answers after a restart, until Expires.
type GatewayTaskRecord struct {
	V       int       `msgpack:"v"`
	ID      string    `msgpack:"id"`
	Tool    string    `msgpack:"tool"`
	Created time.Time `msgpack:"created"`
	Updated time.Time `msgpack:"updated"`
	Expires time.Time `msgpack:"expires"`          // Prune deletes it after this
	Status  string    `msgpack:"status"`           // working, completed, failed, cancelled
	Result  []byte    `msgpack:"result,omitempty"` // the CallToolResult JSON, once completed
	Error   []byte    `msgpack:"error,omitempty"`  // the JSON-RPC error object JSON, once failed
}

// TaskRecord is one MCP task the host started with a tools/call and polls
// with tasks/get until it ends, then (2025-11-25 tasks) fetches with
// tasks/result. It is kept
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
	// Extension marks a task of the 2026-07-28 tasks extension
	// (io.modelcontextprotocol/tasks): polled with tasks/get, which
	// carries its outcome, and answered with tasks/update; false (every
	// record written before it existed) is a 2025-11-25 task.
	Extension bool `msgpack:"extension,omitempty"`
	// Legacy marks a task a legacy client's call started
	// (actors.CallOptions.Legacy): its requests go where that call went,
	// to the server's legacy incarnation when it runs one.
	Legacy bool `msgpack:"legacy,omitempty"`
}

// ContainmentRecord says where one incarnation of a stdio server runs, so
// that a host restarting after a crash finds and stops what the previous
// life left: written before the process starts (Cgroup, Marker), completed
// once it runs (PGID, LeaderStart, Session), deleted once it is stopped
// and nothing of it is left. Keyed by ID.
type ContainmentRecord struct {
	V      int    `msgpack:"v"`
	ID     string `msgpack:"id"` // the incarnation's marker, unique
	Server string `msgpack:"server"`
	// Mode is "cgroup" or "process-group".
	Mode   string `msgpack:"mode"`
	Cgroup string `msgpack:"cgroup,omitempty"` // the cell's cgroup directory
	Marker string `msgpack:"marker,omitempty"` // MCPVISOR_CELL in the processes' environment
	PGID   int    `msgpack:"pgid,omitempty"`
	// LeaderStart is the group leader's start time in clock ticks after
	// boot; Session its session: a recycled group id differs in one.
	LeaderStart uint64    `msgpack:"leader_start,omitempty"`
	Session     int       `msgpack:"session,omitempty"`
	BootID      string    `msgpack:"boot_id,omitempty"`
	HostPID     int       `msgpack:"host_pid,omitempty"`
	Started     time.Time `msgpack:"started"`
}

func (r *ContainmentRecord) schemaVersion() *int { return &r.V }
