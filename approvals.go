package mcpvisor

import (
	"context"
	"fmt"

	"github.com/mcpvisor/mcpvisor/internal/hosttools"
)

// DefaultApprovalDeadline is how long a host-tool call waits in the
// approval inbox before it is denied, when Options.ApprovalDeadline is 0.
const DefaultApprovalDeadline = hosttools.DefaultDeadline

// Approvals lists the host-tool calls waiting in the approval inbox
// (Options.ApprovalInbox), oldest first. It never blocks.
func (h *Host) Approvals() []ApprovalRequest { return h.approvals.Pending() }

// ApprovalsChanged returns a channel closed at the next change to
// Approvals. Take it before calling Approvals, and again once it fires.
func (h *Host) ApprovalsChanged() <-chan struct{} { return h.approvals.Changed() }

// ResolveApproval decides a call waiting in the approval inbox. An id that
// is not pending (answered, expired, abandoned) is ErrUnknownApproval.
// A reason longer than MaxApprovalReason bytes is cut: it reaches a model.
func (h *Host) ResolveApproval(id string, allow bool, reason string) error {
	return h.ResolveApprovalAs("", id, allow, reason)
}

// ResolveApprovalAs is ResolveApproval on behalf of a request
// authenticated with credential (named as for WithCredential): a call
// raised under that same credential is not decided, and the error is
// ErrSelfApproval, so that whoever asked for a change cannot approve it
// too. "" is the embedder itself, which may decide any call.
func (h *Host) ResolveApprovalAs(credential, id string, allow bool, reason string) error {
	if p, ok := h.approvals.Get(id); ok && credential != "" && p.RaisedBy == credential {
		return fmt.Errorf("approval %q: %w", id, ErrSelfApproval)
	}
	if !h.approvals.Resolve(id, hosttools.Decision{Allow: allow, Reason: reason}) {
		return fmt.Errorf("%w: %q", ErrUnknownApproval, id)
	}
	return nil
}

// WithCredential returns ctx saying that the calls made under it are asked
// for by a request authenticated with the credential id: a name of it
// that is no secret and is the same for every request made with it (a
// hash of a bearer token, never the token). A host-tool call made under
// it that waits for approval records it (ApprovalRequest.RaisedBy), and
// ResolveApprovalAs with the same id refuses to decide it. "" leaves ctx
// as it is. The sidecar puts its token's name on every request.
func WithCredential(ctx context.Context, id string) context.Context {
	return hosttools.WithCredential(ctx, id)
}

// CredentialOf is the credential WithCredential put on ctx, "" for none.
func CredentialOf(ctx context.Context) string { return hosttools.CredentialOf(ctx) }

// MaxApprovalReason bounds the reason given with a decision.
const MaxApprovalReason = hosttools.MaxReason
