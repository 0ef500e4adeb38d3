package mcpvisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/flows"
	"github.com/mcpvisor/mcpvisor/internal/hosttools"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/internal/registry"
	"github.com/mcpvisor/mcpvisor/internal/secrets"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// clusterHost is what the host's replica reaches it through
// (member.Host): the host's own paths, for what another member asks or
// changes here.
type clusterHost struct{ h *Host }

var _ member.Host = clusterHost{}

// Run runs a request another member forwarded: the server's questions
// that belong to it are the caller's (flows.Askers.Pick attributes them as it
// would a local call's).
func (c clusterHost) Run(ctx context.Context, r member.Run) (json.RawMessage, error) {
	return c.h.flows.Forwarded(ctx, c.h.rt, r)
}

// Flows are the flows of the call ctx belongs to (flows.Of): a server's
// questions are answered through its own handlers, else the host's.
func (c clusterHost) Flows(ctx context.Context) member.Flows {
	h := c.h
	var f member.Flows
	var own *flows.Asker
	own, f.Scope, f.Client = flows.Of(ctx)
	f.Ask = func(ctx context.Context, method, server string, params json.RawMessage) (json.RawMessage, error) {
		return h.flows.Ask(ctx, method, server, params, own)
	}
	return f
}

// ApplyServer makes another member's registry change here.
func (c clusterHost) ApplyServer(ctx context.Context, sc member.ServerChange) error {
	h := c.h
	ctx = context.WithValue(ctx, fromCluster{}, true)
	switch {
	case sc.Deleted:
		if err := h.Unregister(ctx, sc.Name); err != nil && !errors.Is(err, ErrUnknownServer) {
			return err
		}
		return nil
	case sc.Config != nil:
		// The entry refers to its secrets, whose values came apart from
		// the gossip: they are stored first, so that it resolves.
		if len(sc.Secrets) > 0 {
			if err := h.secrets.UpdateServer(sc.Name, sc.Secrets, *sc.Config); err != nil {
				return err
			}
		}
		// Registering what is registered already changes nothing, the
		// enabled flag included: it is set on its own.
		if err := h.Register(ctx, *sc.Config); err != nil {
			return err
		}
	}
	return h.SetEnabled(ctx, sc.Name, sc.Enabled)
}

// ServerSecrets are the values of server's references to the secret
// store, those of names this member holds.
func (c clusterHost) ServerSecrets(server string, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range names {
		if !strings.HasPrefix(name, secrets.Prefix) {
			continue // a ${VAR} of the environment is each member's own
		}
		if v, ok := c.h.secrets.Lookup(server, name); ok {
			out[name] = v
		}
	}
	return out, nil
}

// Allowed reports whether server's registry row here is enabled with
// the configuration sc.
func (c clusterHost) Allowed(server string, sc config.Server) bool {
	row, ok, err := c.h.reg.Row(server)
	if err != nil || !ok || !row.Enabled {
		return false
	}
	mine, err := registry.Config(row)
	if err != nil {
		return false
	}
	// Both are sealed: the row as stored, sc as gossiped.
	sc.Name, sc.Enabled, mine.Enabled = server, false, false
	a, errA := json.Marshal(sc)
	b, errB := json.Marshal(mine)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// ApprovalGate reports whether a register_mcp call here waits for a
// decision: the host's approver, or its approval inbox.
func (c clusterHost) ApprovalGate() bool {
	return c.h.opts.Approve != nil || c.h.opts.ApprovalInbox
}

// ApproveServer asks the host's gate, as for a register_mcp call, whether
// a registration another member made may run here; the decision is
// journaled as a host-tool call's.
func (c clusterHost) ApproveServer(ctx context.Context, held member.Held) (bool, error) {
	h := c.h
	approve := hosttools.Approver(h.opts.Approve)
	if approve == nil && h.opts.ApprovalInbox {
		approve = h.approvals.Decide
	}
	if approve == nil {
		return true, nil
	}
	sc := held.Config
	transport, _ := sc.Transport()
	req := &hosttools.Request{Tool: ToolRegister, Server: held.Server, Changes: true, Created: time.Now(),
		Summary: fmt.Sprintf("Run the %s server %q that cluster member %s registered (by %s, which no approval gate decided there)",
			transport, held.Server, held.From, ToolRegister)}
	if transport == protocol.TransportStdio {
		req.Command = append([]string{sc.Command}, sc.Args...)
		req.Summary += ": " + strings.Join(req.Command, " ")
	} else if sc.URL != "" {
		req.Summary += " at " + sc.URL
	}
	d, err := approve(ctx, req)
	if ctx.Err() != nil {
		return false, ctx.Err() // superseded, or the member leaves: nobody decided
	}
	if err != nil {
		d = hosttools.Decision{Reason: err.Error()}
	}
	params, _ := json.Marshal(struct {
		Tool    string `json:"tool"`
		Server  string `json:"server"`
		Member  string `json:"member"`
		Summary string `json:"summary"`
		Allowed bool   `json:"allowed"`
		Reason  string `json:"reason,omitempty"`
	}{ToolRegister, held.Server, held.From, req.Summary, d.Allow, d.Reason})
	hostToolsHost{Host: h}.RecordApproval(held.Server, params)
	return d.Allow, err
}

// ApplyGrants makes another member's change to a scope's grants here.
func (c clusterHost) ApplyGrants(ctx context.Context, g member.Grants) error {
	ctx = context.WithValue(ctx, fromCluster{}, true)
	s := c.h.Session(g.Scope.Session, g.Scope.Stack)
	if g.Ended {
		return s.End(ctx)
	}
	var missing []string
	for _, grp := range g.Groups {
		if !slices.Contains(s.Groups(), grp) {
			missing = append(missing, grp)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return s.Activate(ctx, missing...)
}

func (c clusterHost) Subscribe(fn func(actors.Event)) { c.h.Subscribe(fn) }

func (c clusterHost) History(f HistoryFilter) ([]HistoryRecord, error) {
	return c.h.journal.History(f)
}

func (c clusterHost) Events(f EventFilter) ([]JournalEvent, error) { return c.h.journal.Events(f) }

func (c clusterHost) WhoHadAccess(tool string, at time.Time) ([]Scope, error) {
	return c.h.journal.WhoHadAccess(tool, at)
}

func (c clusterHost) Ack(ctx context.Context, ids ...uint64) error {
	return c.h.journal.Ack(ctx, ids...)
}

// provenance is who makes a registration with ctx: a register_mcp call
// (with its approval, if the host's gate gave one), else the operator.
func provenance(ctx context.Context) member.Provenance {
	scope, ok := hosttools.ByTool(ctx)
	if !ok {
		return member.Provenance{By: member.ByOperator}
	}
	p := member.Provenance{By: member.ByTool, Session: scope.Session}
	if a, ok := hosttools.ApprovalOf(ctx); ok {
		p.ApprovedBy, p.ApprovedAt = member.ApprovedByApprover, a.At
		if a.By == hosttools.ByInbox {
			p.ApprovedBy = member.ApprovedInInbox
		}
	}
	return p
}
