package hosttools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// Request is one host-tool call waiting for a decision: a model, through
// some session, wants to run one of the host's own tools. The root
// package and package pipeline export it as ApprovalRequest.
//
// Arguments are the model's, in full, secrets included: they are for an
// approver, and are never logged, journaled or listed by the sidecar.
// Summary and Command are what a person is shown.
type Request struct {
	ID        string            // set when the request waits in the inbox
	Scope     persistence.Scope // who asks; empty for Host.Call
	Tool      string            // register_mcp, delete_mcp, toggle_item, list_items or activate_tools
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
	// RaisedBy names the credential of the request that made the call
	// (mcpvisor.WithCredential: a hash, never a secret), "" for none. A
	// decision made with the same credential is refused.
	RaisedBy string
}

// LogValue keeps Arguments, which may hold secrets, out of logs.
func (r Request) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", r.ID), slog.String("tool", r.Tool),
		slog.String("server", r.Server), slog.String("session", r.Scope.Session))
}

// String is the request without its arguments, for fmt.
func (r Request) String() string {
	return fmt.Sprintf("approval %s: %s: %s", r.ID, r.Tool, r.Summary)
}

// credentialKey is the context key of WithCredential.
type credentialKey struct{}

// WithCredential returns ctx saying that what runs under it was asked for
// by a request authenticated with the credential id: a name of it that is
// no secret (a hash of a token, never the token). "" leaves ctx as it is.
func WithCredential(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, credentialKey{}, id)
}

// CredentialOf is the credential WithCredential put on ctx, "" for none.
func CredentialOf(ctx context.Context) string {
	id, _ := ctx.Value(credentialKey{}).(string)
	return id
}

// Decision answers a Request (ApprovalDecision, exported). Reason, when
// set, is shown to the model with a denial.
type Decision struct {
	Allow  bool
	Reason string
}

// Approver decides a call before it runs. It may block; ctx ends when the
// call is abandoned. An error denies the call with the error's text.
type Approver func(ctx context.Context, req *Request) (Decision, error)

// Approval is how the host's gate allowed the host-tool call a run
// belongs to (ApprovalOf).
type Approval struct {
	Scope persistence.Scope
	By    string // ByApprover or ByInbox
	At    time.Time
}

// Who allowed a call (Approval.By).
const (
	ByApprover = "approver" // Options.Approve
	ByInbox    = "inbox"    // a person, in the approval inbox (Options.Inbox)
)

type approvalKey struct{}

// ApprovalOf is the approval of the host-tool call ctx runs (its run's
// context), and whether it is one the host's gate allowed.
func ApprovalOf(ctx context.Context) (Approval, bool) {
	a, ok := ctx.Value(approvalKey{}).(Approval)
	return a, ok
}

// ByTool reports whether ctx runs a host-tool call, gated or not.
func ByTool(ctx context.Context) (persistence.Scope, bool) {
	s, ok := ctx.Value(toolKey{}).(persistence.Scope)
	return s, ok
}

type toolKey struct{}

// Call is one call of a host tool.
type Call struct {
	Scope     persistence.Scope // who calls; empty for the embedder's own call
	Tool      string
	Arguments json.RawMessage
	// Approve is the caller's own approver, asked after the host's; both
	// must allow.
	Approve Approver
	Timeout time.Duration // bounds the run, not the approval; 0: Options.CallTimeout
	// Waiting, when set, is told of each wait for an approver (a person),
	// so the call's latency leaves it out (pipeline.Call.Waiting).
	Waiting func() (done func())
}

// prepared is one call, checked and described, ready to approve and run.
type prepared struct {
	server  string
	summary string
	command []string
	run     func(ctx context.Context, scope persistence.Scope) (json.RawMessage, error)
}

// Run runs one host-tool call: arguments checked, then approved, then
// run, and returns its CallToolResult. A problem with the arguments, a
// denial or a failure is a tool error the model can read; the only Go
// error is the caller's context ending (wrapping actors.ErrCancelled).
// The approval's wait does not count against the call's timeout. It
// panics for a name Is does not know.
func (ts *Toolset) Run(ctx context.Context, c Call) (json.RawMessage, error) {
	t := lookup(c.Tool)
	if t == nil {
		panic("hosttools: Run of " + c.Tool + ", not a host tool")
	}
	p, err := t.prepare(ts, c.Arguments)
	if err != nil {
		return toolError("%s: %v", t.name, err), nil
	}
	if t.name == Activate && c.Scope.Session == "" {
		return toolError("%s: a call without a session has nothing to activate tools for", t.name), nil
	}
	hostApproval := ts.opts.Approve
	if hostApproval == nil && t.mutates() {
		hostApproval = ts.opts.Inbox
	}
	// The host's approval first, then the caller's own: both must allow.
	for _, approve := range []Approver{hostApproval, c.Approve} {
		if approve == nil {
			continue
		}
		req := &Request{Scope: c.Scope, Tool: t.name, Arguments: bytes.Clone(c.Arguments), Server: p.server,
			Summary: p.summary, Command: slices.Clone(p.command), Destructive: t.destructive,
			Changes: t.mutates(), Created: time.Now(), RaisedBy: CredentialOf(ctx)}
		asked := *req // an approver may change its copy, not what is recorded
		asked.Command = slices.Clone(req.Command)
		done := func() {}
		if c.Waiting != nil {
			done = c.Waiting()
		}
		d, err := approve(ctx, &asked)
		done()
		if req.Changes || err != nil || !d.Allow {
			// Calls that change nothing, allowed, would only be noise
			// among the events an agent processes.
			ts.recordApproval(req, d, err)
		}
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%s: %w: %w", t.name, actors.ErrCancelled, ctx.Err())
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
	if hostApproval != nil {
		a := Approval{Scope: c.Scope, By: ByInbox, At: time.Now()}
		if ts.opts.Approve != nil {
			a.By = ByApprover
		}
		ctx = context.WithValue(ctx, approvalKey{}, a)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = ts.opts.CallTimeout
	}
	if timeout <= 0 {
		timeout = actors.DefaultCallTimeout
	}
	rctx, cancel := context.WithTimeout(context.WithValue(ctx, toolKey{}, c.Scope), timeout)
	defer cancel()
	res, err := p.run(rctx, c.Scope)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w: %w", t.name, actors.ErrCancelled, ctx.Err())
	}
	if err != nil {
		return toolError("%s: %v", t.name, err), nil
	}
	return res, nil
}

// recordApproval journals a decision on a host-tool call: who asked for
// what, the summary a person read, and the answer. Never the arguments.
// Every decision on a call that changes the servers is recorded, and
// every refusal.
func (ts *Toolset) recordApproval(req *Request, d Decision, err error) {
	if err != nil {
		d = Decision{Reason: err.Error()}
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
	ts.host.RecordApproval(req.Server, params)
}
