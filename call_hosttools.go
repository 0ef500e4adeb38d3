package mcpvisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// hostToolStage answers the host's own tools (unless Options.NoHostTools):
// their calls never reach a server.
func (h *Host) hostToolStage(next CallFunc) CallFunc {
	if h.opts.NoHostTools {
		return next
	}
	return func(ctx context.Context, c *Call) (*Result, error) {
		if t := lookupHostTool(c.Tool); t != nil && c.toolCall() {
			return h.callHostTool(ctx, c.Scope, t, c.Arguments, c.Options)
		}
		return next(ctx, c)
	}
}

// isHostTool reports whether tool is one of the host's own tools, as this
// host serves them.
func (h *Host) isHostTool(tool string) bool {
	return !h.opts.NoHostTools && lookupHostTool(tool) != nil
}

// callHostTool runs one host-tool call: arguments checked, then approved,
// then run. A problem with the arguments, a denial or a failure is a tool
// error the model can read; the approval's wait does not count against
// the call's timeout.
func (h *Host) callHostTool(ctx context.Context, scope Scope, t *hostTool, args json.RawMessage, opts *CallOptions) (*Result, error) {
	hc, err := t.prepare(h, args)
	if err != nil {
		return toolError("%s: %v", t.name, err), nil
	}
	if t.name == ToolActivate && scope.Session == "" {
		return toolError("%s: a call without a session has nothing to activate tools for", t.name), nil
	}
	hostApproval := h.opts.Approve
	if hostApproval == nil && h.opts.ApprovalInbox && t.mutates() {
		hostApproval = h.approvals.decide
	}
	// The host's approval first, then the caller's own: both must allow.
	for _, approve := range []ApprovalFunc{hostApproval, opts.Approve} {
		if approve == nil {
			continue
		}
		req := &ApprovalRequest{Scope: scope, Tool: t.name, Arguments: bytes.Clone(args), Server: hc.server,
			Summary: hc.summary, Command: slices.Clone(hc.command), Destructive: t.destructive,
			Changes: t.mutates(), Created: time.Now()}
		d, err := approve(ctx, req)
		if req.Changes || err != nil || !d.Allow {
			// Calls that change nothing, allowed, would only be noise
			// among the events an agent processes.
			h.recordApproval(req, d, err)
		}
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%s: %w: %w", t.name, ErrCancelled, ctx.Err())
		case err != nil:
			return toolError("%s was not approved: %v", t.name, err), nil
		case !d.Allow:
			why := "denied"
			if d.Reason != "" {
				why += ": " + d.Reason
			}
			return toolError("%s was not approved (%s)", t.name, why), nil
		}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := hc.run(rctx, h, scope)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w: %w", t.name, ErrCancelled, ctx.Err())
	}
	if err != nil {
		return toolError("%s: %v", t.name, err), nil
	}
	return res, nil
}

// recordApproval journals a decision on a host-tool call, as an
// mcpvisor/approval event: who asked for what, the summary a person read,
// and the answer. Never the arguments. Every decision on a call that
// changes the servers is recorded, and every refusal.
func (h *Host) recordApproval(req *ApprovalRequest, d ApprovalDecision, err error) {
	if err != nil {
		d = ApprovalDecision{Reason: err.Error()}
	}
	params, _ := json.Marshal(struct {
		Tool    string `json:"tool"`
		Server  string `json:"server,omitempty"`
		Session string `json:"session,omitempty"`
		Stack   string `json:"stack,omitempty"`
		Summary string `json:"summary"`
		Allowed bool   `json:"allowed"`
		Reason  string `json:"reason,omitempty"`
	}{req.Tool, req.Server, req.Scope.Session, req.Scope.Stack, req.Summary, d.Allow, d.Reason})
	h.journal.writer.Ingest(req.Server, persistence.AppendEvent(persistence.EventRecord{
		Server: req.Server, Method: EventMethodApproval, Params: params, Received: time.Now(),
	}))
}
