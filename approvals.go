package mcpvisor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/inbox"
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

// approvalInbox holds host-tool calls until ResolveApproval or their
// deadline. All methods are safe for concurrent use.
type approvalInbox struct {
	in  *inbox.Inbox[ApprovalRequest, ApprovalDecision]
	log *slog.Logger
}

func newApprovalInbox(deadline time.Duration, log *slog.Logger) *approvalInbox {
	if deadline <= 0 {
		deadline = DefaultApprovalDeadline
	}
	b := &approvalInbox{log: log}
	expired := ApprovalDecision{Reason: fmt.Sprintf("no decision within %s", deadline)}
	b.in = inbox.New(inbox.Options[ApprovalRequest, ApprovalDecision]{
		Deadline: deadline, OnDeadline: expired, OnClose: ApprovalDecision{Reason: "the host is closing"},
		Left: func(e inbox.Entry[ApprovalRequest], why error) {
			reason := "the call was abandoned"
			switch {
			case errors.Is(why, inbox.ErrClosed):
				return
			case errors.Is(why, inbox.ErrExpired):
				reason = expired.Reason
			}
			log.Info("host tool call not approved", "approval", approval(e), "reason", reason)
		},
	})
	return b
}

// decide is an ApprovalFunc: it queues req and waits for an answer, the
// deadline (denied) or ctx.
func (b *approvalInbox) decide(ctx context.Context, req *ApprovalRequest) (ApprovalDecision, error) {
	t, err := b.in.Open(*req)
	if err != nil {
		return ApprovalDecision{}, ErrClosed
	}
	b.log.Info("host tool call waits for approval", "approval", approval(t.Entry))
	return t.Wait(ctx)
}

func (b *approvalInbox) resolve(id string, d ApprovalDecision) error {
	e, err := b.in.Resolve(id, d)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrUnknownApproval, id)
	}
	b.log.Info("host tool call decided", "approval", approval(e), "allow", d.Allow)
	return nil
}

func (b *approvalInbox) list() []ApprovalRequest {
	es := b.in.Pending()
	out := make([]ApprovalRequest, len(es))
	for i, e := range es {
		out[i] = approval(e)
	}
	slices.SortFunc(out, func(a, b ApprovalRequest) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// close denies every pending request, and any queued later.
func (b *approvalInbox) close() { b.in.Close() }

// approval is the waiting call e, with its id and deadline.
func approval(e inbox.Entry[ApprovalRequest]) ApprovalRequest {
	r := e.Req
	r.ID, r.Deadline = e.ID, e.Deadline
	return r
}

// Approvals lists the host-tool calls waiting in the approval inbox
// (Options.ApprovalInbox), oldest first. It never blocks.
func (h *Host) Approvals() []ApprovalRequest { return h.approvals.list() }

// ApprovalsChanged returns a channel closed at the next change to
// Approvals. Take it before calling Approvals, and again once it fires.
func (h *Host) ApprovalsChanged() <-chan struct{} { return h.approvals.in.Changed() }

// ResolveApproval decides a call waiting in the approval inbox. An id that
// is not pending (answered, expired, abandoned) is ErrUnknownApproval.
// A reason longer than MaxApprovalReason bytes is cut: it reaches a model.
func (h *Host) ResolveApproval(id string, allow bool, reason string) error {
	if len(reason) > MaxApprovalReason {
		reason = strings.ToValidUTF8(reason[:MaxApprovalReason], "") + "…"
	}
	return h.approvals.resolve(id, ApprovalDecision{Allow: allow, Reason: reason})
}

// MaxApprovalReason bounds the reason given with a decision.
const MaxApprovalReason = 1000
