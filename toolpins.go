package mcpvisor

import (
	"context"
	"fmt"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/internal/toolpin"
)

// Tool pinning: what the host does when a server lists a tool definition
// that no person approved (a new server's tools, a new tool, a changed
// description, schema, icon or _meta), set host-wide (Options.ToolPolicy) and per
// server (ServerConfig.ToolPolicy).
const (
	// ToolPolicyOff: every tool is exposed as listed; nothing is pinned.
	ToolPolicyOff = string(toolpin.PolicyOff)
	// ToolPolicyWarn: a tool's first definition is pinned unattended; a
	// definition that differs from its pin is exposed, and reported in
	// status (ToolReviews), the log and the journal until approved.
	ToolPolicyWarn = string(toolpin.PolicyWarn)
	// ToolPolicyHold: a tool is exposed only while its definition is the
	// one a person approved; any other is withheld from every session,
	// and a call to it fails with ErrToolWithheld, until ApproveTool.
	ToolPolicyHold = string(toolpin.PolicyHold)
)

// ToolPolicyEnv names the environment variable Options.ToolPolicy falls
// back on.
const ToolPolicyEnv = "MCPVISOR_TOOL_POLICY"

type (
	// ToolReview is a listed tool definition that no person approved,
	// with its diff from the approved one and what the description checks
	// found.
	ToolReview = actors.ToolReview
	// ToolDefinition is what is pinned of a tool: name, title,
	// description, input and output schema, annotations, icons, _meta.
	ToolDefinition = toolpin.Definition
	// ToolChange is one difference between two definitions.
	ToolChange = toolpin.Change
	// ToolFinding is one description check that matched.
	ToolFinding = toolpin.Finding
)

// ToolReviews returns the tool definitions awaiting a person on every
// server, by server then tool: withheld ones (Held) under the hold policy
// or rejected, changed or flagged ones under warn. It never blocks.
//
// In a cluster, the reviews of every member's servers.
func (h *Host) ToolReviews() []ToolReview {
	if h.cluster != nil {
		return h.cluster.Reviews(h.rt.ToolReviews())
	}
	return h.rt.ToolReviews()
}

// ToolReviewsChanged returns a channel closed at the next change to
// ToolReviews. Take it before calling ToolReviews, and again once it
// fires.
func (h *Host) ToolReviewsChanged() <-chan struct{} {
	if h.cluster != nil {
		return h.cluster.ReviewsChanged()
	}
	return h.rt.ToolReviewsChanged()
}

// ApproveTool approves the definition hash (ToolReview.Hash) of a
// server's tool (the server's own name for it) on behalf of by, which the
// journal records. The approval is durable when it returns, and the tool
// is exposed at once (sessions of the gateway are sent list_changed). A
// hash the server no longer lists for the tool is ErrStaleReview: what
// was shown is not what would be approved.
func (h *Host) ApproveTool(ctx context.Context, server, tool, hash, by string) error {
	return h.decideTool(ctx, server, tool, hash, true, by)
}

// RejectTool rejects the definition hash of a server's tool: it stays
// withheld, whatever the policy, and is not offered again until the
// server lists another definition.
func (h *Host) RejectTool(ctx context.Context, server, tool, hash, by string) error {
	return h.decideTool(ctx, server, tool, hash, false, by)
}

func (h *Host) decideTool(ctx context.Context, server, tool, hash string, allow bool, by string) error {
	if server == "" || tool == "" || hash == "" {
		return fmt.Errorf("%w: a tool decision needs the server, the tool and the definition's hash", ErrStaleReview)
	}
	if owner := h.remoteOwner(server); owner != "" {
		// Pinned on the member that runs the server: decided there.
		return h.cluster.Decide(ctx, owner, member.Decision{Server: server, Tool: tool, Hash: hash, By: by, Allow: allow})
	}
	return h.rt.DecideTool(ctx, server, tool, hash, allow, by)
}
