package mcpvisor

import (
	"fmt"

	"github.com/mcpvisor/mcpvisor/internal/hosttools"
)

// DefaultApprovalDeadline is how long a host-tool call waits in the
// approval inbox before it is denied, when Options.ApprovalDeadline is 0.
const DefaultApprovalDeadline = hosttools.DefaultDeadline

// approvalRequest is the call p as the approval API shows it.
func approvalRequest(p hosttools.Pending) ApprovalRequest {
	r := p.Request
	return ApprovalRequest{ID: p.ID, Scope: r.Scope, Tool: r.Tool, Arguments: r.Arguments, Server: r.Server,
		Summary: r.Summary, Command: r.Command, Destructive: r.Destructive, Changes: r.Changes,
		Created: r.Created, Deadline: p.Deadline}
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
	if !h.approvals.Resolve(id, hosttools.Decision{Allow: allow, Reason: reason}) {
		return fmt.Errorf("%w: %q", ErrUnknownApproval, id)
	}
	return nil
}

// MaxApprovalReason bounds the reason given with a decision.
const MaxApprovalReason = hosttools.MaxReason
