package mcpvisor

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/flows"
	"github.com/mcpvisor/mcpvisor/internal/member"
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
		// Registering what is registered already changes nothing, the
		// enabled flag included: it is set on its own.
		if err := h.Register(ctx, *sc.Config); err != nil {
			return err
		}
	}
	return h.SetEnabled(ctx, sc.Name, sc.Enabled)
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
