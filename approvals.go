package mcpvisor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/hosttools"
)

// DefaultApprovalDeadline is how long a host-tool call waits in the
// approval inbox before it is denied, when Options.ApprovalDeadline is 0.
const DefaultApprovalDeadline = 5 * time.Minute

// ApprovalRequest is one host-tool call waiting for a decision: a model,
// through some session, wants to run one of the host's own tools.
//
// Arguments are the model's, in full, secrets included: they are for an
// ApprovalFunc, and are never logged, journaled or listed by the sidecar.
// Summary and Command are what a person is shown.
type ApprovalRequest struct {
	ID        string // set when the request waits in the inbox
	Scope     Scope  // who asks; empty for Host.Call
	Tool      string // register_mcp, delete_mcp, toggle_item, list_items or activate_tools
	Arguments json.RawMessage
	// Server is the server the call acts on, "" for list_items and
	// activate_tools.
	Server string
	// Summary says what happens if the call is allowed, in one line: for
	// register_mcp the transport, the command line or URL, and the names
	// (not the values) of the environment variables, headers and API key.
	Summary string
	// Command is, for register_mcp of a stdio server, the command and every
	// argument exactly as they will be run. The MCP security guidance asks
	// that whoever approves a model-initiated server sees it in full.
	Command     []string
	Destructive bool // delete_mcp: irreversible
	// Changes is true for the calls that change the servers (register_mcp,
	// delete_mcp, toggle_item): the ones the approval inbox holds.
	Changes  bool
	Created  time.Time
	Deadline time.Time // zero unless the request waits in the inbox
}

// LogValue keeps Arguments, which may hold secrets, out of logs.
func (r ApprovalRequest) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", r.ID), slog.String("tool", r.Tool),
		slog.String("server", r.Server), slog.String("session", r.Scope.Session))
}

// String is the request without its arguments, for fmt.
func (r ApprovalRequest) String() string {
	return fmt.Sprintf("approval %s: %s: %s", r.ID, r.Tool, r.Summary)
}

// ApprovalDecision answers an ApprovalRequest. Reason, when set, is shown
// to the model with a denial.
type ApprovalDecision struct {
	Allow  bool
	Reason string
}

// ApprovalFunc decides a host-tool call before it runs. It may block (a
// person deciding); ctx ends when the call is abandoned. An error denies
// the call with the error's text.
type ApprovalFunc func(ctx context.Context, req *ApprovalRequest) (ApprovalDecision, error)

// approvalRequest is the call p as the approval API shows it.
func approvalRequest(p hosttools.Pending) ApprovalRequest {
	r := p.Request
	return ApprovalRequest{ID: p.ID, Scope: r.Scope, Tool: r.Tool, Arguments: r.Arguments, Server: r.Server,
		Summary: r.Summary, Command: r.Command, Destructive: r.Destructive, Changes: r.Changes,
		Created: r.Created, Deadline: p.Deadline}
}

// newApprovalInbox is the host's approval inbox (Options.ApprovalInbox).
func newApprovalInbox(deadline time.Duration, log *slog.Logger) *hosttools.Inbox {
	if deadline <= 0 {
		deadline = DefaultApprovalDeadline
	}
	return hosttools.NewInbox(deadline, log)
}

// Approvals lists the host-tool calls waiting in the approval inbox
// (Options.ApprovalInbox), oldest first. It never blocks.
func (h *Host) Approvals() []ApprovalRequest {
	ps := h.approvals.Pending()
	out := make([]ApprovalRequest, len(ps))
	for i, p := range ps {
		out[i] = approvalRequest(p)
	}
	return out
}

// ApprovalsChanged returns a channel closed at the next change to
// Approvals. Take it before calling Approvals, and again once it fires.
func (h *Host) ApprovalsChanged() <-chan struct{} { return h.approvals.Changed() }

// ResolveApproval decides a call waiting in the approval inbox. An id that
// is not pending (answered, expired, abandoned) is ErrUnknownApproval.
// A reason longer than MaxApprovalReason bytes is cut: it reaches a model.
func (h *Host) ResolveApproval(id string, allow bool, reason string) error {
	if len(reason) > MaxApprovalReason {
		reason = strings.ToValidUTF8(reason[:MaxApprovalReason], "") + "…"
	}
	if !h.approvals.Resolve(id, hosttools.Decision{Allow: allow, Reason: reason}) {
		return fmt.Errorf("%w: %q", ErrUnknownApproval, id)
	}
	return nil
}

// MaxApprovalReason bounds the reason given with a decision.
const MaxApprovalReason = 1000
