package flows

import (
	"context"
	"encoding/json"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/pipeline"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Calls ties each call's own handlers to its server's requests: the
// request pipeline's flows (pipeline.Flows). carry keeps every call's
// scope and client in its context even without handlers, for a request
// to a server on another member of a cluster (Of).
func (f *Flows) Calls(carry bool) pipeline.Flows { return calls{f, carry} }

type calls struct {
	f     *Flows
	carry bool
}

// call is a call's own handlers, carried in its context.
type call struct {
	asker  *Asker // nil: the call has none of its own
	scope  persistence.Scope
	client string
}

type callKey struct{}

func (c calls) Attach(ctx context.Context, pc *pipeline.Call) (context.Context, func()) {
	o := pc.Options
	var a *Asker
	if o.Elicitation != nil || o.Sampling != nil || o.Roots != nil {
		a = &Asker{Ctx: ctx, Call: pc, Server: pc.Server, Scope: pc.Scope, Client: o.Client, Legacy: o.LegacyClient}
		if o.Elicitation != nil {
			a.Elicit = ElicitFunc(o.Elicitation)
		}
		if o.Sampling != nil {
			a.Sample = SampleFunc(o.Sampling)
		}
		if o.Roots != nil {
			a.Roots = RootsFunc(o.Roots)
		}
		a.Awaiting = o.AwaitingClient
		c.f.askers.Add(a)
	}
	if a == nil && !c.carry {
		return ctx, func() {}
	}
	ctx = context.WithValue(ctx, callKey{}, &call{asker: a, scope: pc.Scope, client: o.Client})
	return ctx, func() {
		if a != nil {
			c.f.askers.Remove(a)
		}
	}
}

func (c calls) TaskStarted(ctx context.Context, id string) {
	if cl, _ := ctx.Value(callKey{}).(*call); cl != nil && cl.asker != nil {
		cl.asker.Task.Store(&id)
	}
}

func (c calls) Fulfil(ctx context.Context, server string, req protocol.InputRequest) (json.RawMessage, error) {
	own, _, _ := Of(ctx)
	return c.f.Fulfil(ctx, server, own, req)
}

// Of is the call ctx belongs to, as Calls' Attach noted it: its own asker
// (nil without handlers), its scope and its client.
func Of(ctx context.Context) (own *Asker, scope persistence.Scope, client string) {
	if cl, _ := ctx.Value(callKey{}).(*call); cl != nil {
		return cl.asker, cl.scope, cl.client
	}
	return nil, persistence.Scope{}, ""
}

// Forwarded runs on rt a request another member of the cluster forwarded
// here: the server's questions that belong to it go back to the caller
// (Askers.Pick attributes them as it would a local call's).
func (f *Flows) Forwarded(ctx context.Context, rt *actors.Runtime, r member.Run) (json.RawMessage, error) {
	if r.Ask != nil {
		a := &Asker{Ctx: ctx, Server: r.Server, Scope: r.Scope, Client: r.Client, Delegate: r.Ask, Legacy: r.Options != nil && r.Options.Legacy}
		if r.TaskID != "" {
			a.Task.Store(&r.TaskID)
		}
		f.askers.Add(a)
		defer f.askers.Remove(a)
	}
	if r.Method == "" {
		return rt.Call(ctx, r.Tool, r.Params, r.Meta, r.Options)
	}
	return rt.Request(ctx, r.Server, r.Method, r.Params, r.Options)
}
