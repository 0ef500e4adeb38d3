package member

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// Host is what a host's replica needs of the host beyond its runtime
// (Replica.Join): the operations that go through the host's own paths
// (its askers, registry, grants, journal). The root package implements
// it. All methods are safe for concurrent use.
type Host interface {
	// Run runs a request another member forwarded, on a server this
	// member runs: a tools/call (r.Tool) or a request of r.Method. The
	// server's questions that belong to it are asked through r.Ask. It
	// blocks until the server answers or ctx ends.
	Run(ctx context.Context, r Run) (json.RawMessage, error)
	// Flows are the flows of the call ctx belongs to, for a request to a
	// server on another member. It does not block.
	Flows(ctx context.Context) Flows
	// ApplyServer makes another member's change to a server here, as
	// Register, Unregister or SetEnabled would (journaled), without
	// telling the replica of it again. It blocks until done.
	ApplyServer(ctx context.Context, c ServerChange) error
	// ServerSecrets are the values of the references to the secret store
	// (names) that server's registration here holds, for a member that
	// applies the registration (the registry's gossip carries the
	// references only). It does not block.
	ServerSecrets(server string, names []string) (map[string]string, error)
	// ApprovalGate reports whether this member holds a model's
	// register_mcp for approval (an approver, or the approval inbox): a
	// registration from another member that no gate approved is then held
	// for it too (ApproveServer).
	ApprovalGate() bool
	// Allowed reports whether server is registered here enabled with
	// the configuration sc (secrets as references, the enabled flag
	// aside): a registration held for the gate is registered disabled
	// until allowed, so one found enabled was allowed here before (or
	// needed no approval then). It does not block.
	Allowed(server string, sc config.Server) bool
	// ApproveServer asks this member's approval gate whether a
	// registration another member made, that no gate approved, may run
	// here. It blocks until a person decides, the gate's deadline passes
	// (denied) or ctx ends.
	ApproveServer(ctx context.Context, r Held) (bool, error)
	// ApplyGrants makes another member's change to a scope's grants
	// here, as Session.Activate or End would (journaled), without telling
	// the replica of it again. It blocks until done.
	ApplyGrants(ctx context.Context, g Grants) error
	// Subscribe hands fn every event of the host, until it closes; fn
	// must not block.
	Subscribe(fn func(actors.Event))
	// History, Events, WhoHadAccess and Ack are the host's journal's, for
	// another member's cluster-wide question. They do not wait on a
	// server.
	History(f persistence.HistoryFilter) ([]persistence.HistoryRecord, error)
	Events(f persistence.EventFilter) ([]persistence.EventRecord, error)
	WhoHadAccess(tool string, at time.Time) ([]persistence.Scope, error)
	Ack(ctx context.Context, ids ...uint64) error
}

// Run is a request forwarded to the member that runs its server.
type Run struct {
	Server string
	Tool   string // a tools/call: the namespaced tool
	Method string // any other request
	Params json.RawMessage
	Meta   json.RawMessage // a call's _meta
	// Options are the call's; OnProgress, when set, sends its progress to
	// the caller.
	Options *actors.CallOptions
	// Scope and Client are the caller's, to which the server's questions
	// are attributed as if the call were made here; TaskID the task a
	// tasks/get or tasks/result polls.
	Scope  persistence.Scope
	Client string
	TaskID string
	// Ask asks the calling member a question of the server's
	// (elicitation/create, sampling/createMessage); nil: none is asked.
	Ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Flows are what a call made on one member brings to a server that runs
// on another: whom the server's questions are attributed to there, and
// what answers them here.
type Flows struct {
	Scope  persistence.Scope
	Client string
	// Ask answers a question of the server's (elicitation/create,
	// sampling/createMessage) through the call's own handlers, else the
	// host's hooks or inbox. It blocks until answered or ctx ends.
	Ask func(ctx context.Context, method, server string, params json.RawMessage) (json.RawMessage, error)
}

// ServerChange is a change to a server's registration at run time.
type ServerChange struct {
	Name string
	// Config is the server's configuration when it was registered (nil:
	// only enabled or disabled, or deleted). In a change another member
	// made (Host.ApplyServer) its secret values are references to the
	// secret store, and Secrets holds their values, by reference name.
	Config  *config.Server
	Secrets map[string]string
	Enabled bool
	Deleted bool
	// Provenance is who made the registration (with Config).
	Provenance Provenance
}

// Who made a registration (Provenance.By).
const (
	ByOperator = "operator" // the embedder's Register: the admin API, the CLI through a sidecar
	ByTool     = "tool"     // a register_mcp call (a model's, or one made for it)
)

// Provenance is who made a registration, and the approval it got where
// it was made: what decides whether another member holds it for its own
// approval gate (docs/design.md, "Cluster").
type Provenance struct {
	By      string `json:"by"`                // ByOperator or ByTool
	Session string `json:"session,omitempty"` // a register_mcp call's session
	// ApprovedBy is how the gate of the member where it was made allowed
	// a register_mcp call (ApprovedInInbox, ApprovedByApprover), at
	// ApprovedAt; "" when no gate decided it.
	ApprovedBy string    `json:"approvedBy,omitempty"`
	ApprovedAt time.Time `json:"approvedAt,omitzero"`
}

// Gated reports whether p needs no further approval: an operator's, or
// a person allowed it in the approval inbox where it was made. One an
// approver allowed (a policy, such as --approve-host-tools) is put to
// each member's own gate, which may be a stricter one.
func (p Provenance) Gated() bool { return p.By == ByOperator || p.ApprovedBy == ApprovedInInbox }

// How a register_mcp call was allowed (Provenance.ApprovedBy).
const (
	ApprovedInInbox    = "inbox"    // a person, in the approval inbox
	ApprovedByApprover = "approver" // the host's approver (Options.Approve)
)

// Held is a registration another member made, held for this member's
// approval gate (Host.ApproveServer). Config's secrets are references.
type Held struct {
	Server     string
	From       string // the member that made it
	Config     config.Server
	Provenance Provenance
}

// Grants are a scope's grants after a change: its groups, or its end.
type Grants struct {
	Scope  persistence.Scope
	Groups []string
	Ended  bool
}

// Request is a call or request this member sends to the member its
// server runs on (Replica.Forward).
type Request struct {
	Server string
	Tool   string // a tools/call: the namespaced tool
	Method string // any other request
	Params json.RawMessage
	Meta   json.RawMessage
	// The call's task field and a multi round-trip retry's input (a
	// fragment of params, not a JSON value).
	Task  json.RawMessage
	Input json.RawMessage

	Timeout, MaxTotalTimeout time.Duration
	ResetTimeoutOnProgress   bool
	// Legacy: made for a legacy client that can be asked
	// (actors.CallOptions.Legacy).
	Legacy bool
	// ProgressToken is the caller's token that outlives the call (its
	// task's): the progress of a task the call starts is relayed to it.
	ProgressToken string
	// OnProgress, when set, receives the call's progress on the
	// caller's goroutine, before the result.
	OnProgress func(actors.Progress)
}

// Decision is a tool decision (ApproveTool, RejectTool).
type Decision struct {
	Server, Tool, Hash, By string
	Allow                  bool
}

// Answer is one other member's answer to a question asked of all
// (Replica.Gather): its result (JSON), or why it did not answer.
type Answer struct {
	Member string
	Result json.RawMessage
	Err    string
}

// Journal questions asked of every member (Replica.Gather, Replica.Ask).
const (
	OpHistory = "history" // HistoryFilter → []HistoryRecord
	OpEvents  = "events"  // EventFilter → []EventRecord
	OpAccess  = "access"  // AccessQuery → []Scope
	OpAck     = "ack"     // []uint64 → {}
)

// AccessQuery is OpAccess's question: who held tool at At.
type AccessQuery struct {
	Tool string    `json:"tool"`
	At   time.Time `json:"at"`
}

// Status is a member's view of its cluster (mcpvisor.ClusterStatus).
type Status struct {
	Name, Self     string
	Lost           bool
	Members        []MemberStatus
	PublishedBytes int64
	Published      map[string]int64
}

// MemberStatus is one member as another sees it.
type MemberStatus struct {
	Address string
	Self    bool
	Labels  []string
	// Servers are those it runs, as it last published them; Agreed: it
	// last placed the servers by the same membership as this member.
	Servers []string
	Agreed  bool
}

// Replica is a host's membership of a cluster with the replication on
// top: placement, gossip of status and catalogs, the shared registry,
// grants and pins, forwarded calls. Package cluster makes it; the host
// calls it from its own paths. All methods are safe for concurrent use.
type Replica interface {
	// Join makes the member join, once the host's servers are
	// registered on rt; the replica drives rt's placement from then on.
	Join(rt *actors.Runtime) error
	// Leave takes the member out of the cluster, once the host's
	// background work has stopped: it blocks until the replica's
	// goroutines have exited. It may be called before Join.
	Leave()
	// Placement is rt's (actors.Options.Placement): "" for a server
	// placed here.
	Placement(name, label string) string
	// Owner is the member server runs on when not here ("": here, or
	// placed nowhere).
	Owner(server string) string
	// Forward sends a call or request to the member owner and returns
	// the server's raw result; the server's questions are answered here
	// through ctx's flows (Host.Flows). It blocks until answered.
	Forward(ctx context.Context, owner string, r Request) (json.RawMessage, error)
	// Restart restarts server on owner; Decide makes a tool decision
	// there. They block until done there.
	Restart(ctx context.Context, owner, server string) error
	Decide(ctx context.Context, owner string, d Decision) error
	// ServerChanged and GrantsChanged tell the replica of a change made
	// here, which it replicates; they do not block.
	ServerChanged(c ServerChange)
	GrantsChanged(g Grants)
	// Reviews are local's and the other members' tool reviews, for the
	// servers placed on them; ReviewsChanged is closed at the next change
	// of either.
	Reviews(local []actors.ToolReview) []actors.ToolReview
	ReviewsChanged() <-chan struct{}
	// Status is this member's view of the cluster.
	Status() Status
	// Self is this member's address.
	Self() string
	// Gather asks every other member op (OpHistory…) with params, at
	// once, within 10 s; the answers are by address. Ask asks one.
	Gather(ctx context.Context, op string, params any) ([]Answer, error)
	Ask(ctx context.Context, member, op string, params any) (json.RawMessage, error)
}

// Gather asks this member (local) and, through r, every other (op with
// params, whose answer decodes as T), and lists the answers as R: this
// member's first, then the others' by address, each with its error. With
// r nil (no cluster) it is local's answer alone, under member "".
func Gather[T, R any](ctx context.Context, r Replica, op string, params any, local func() (T, error), wrap func(member string, v T, err string) R) ([]R, error) {
	mine, err := local()
	if err != nil {
		return nil, err
	}
	if r == nil {
		return []R{wrap("", mine, "")}, nil
	}
	answers, err := r.Gather(ctx, op, params)
	if err != nil {
		return nil, err
	}
	out := []R{wrap(r.Self(), mine, "")}
	for _, a := range answers {
		var v T
		e := a.Err
		if e == "" {
			if err := json.Unmarshal(a.Result, &v); err != nil {
				e = err.Error()
			}
		}
		out = append(out, wrap(a.Member, v, e))
	}
	return out, nil
}
