package mcpvisor

import (
	"context"

	"github.com/mcpvisor/mcpvisor/internal/flows"
)

// flowStage ties the call's own elicitation and sampling handlers
// (CallOptions.Elicitation, Sampling) to the server's requests while the
// call runs, and subscribes to its progress. If the call becomes a task,
// its progress token stays valid until the task ends: one subscription
// serves the call and the polling.
func (h *Host) flowStage(next CallFunc) CallFunc {
	return func(ctx context.Context, c *Call) (*Result, error) {
		o := c.Options
		if o.Elicitation != nil || o.Sampling != nil {
			c.asker = &flows.Asker{Ctx: ctx, Server: c.Server, Scope: c.Scope, Client: o.Client}
			if o.Elicitation != nil {
				c.asker.Elicit = flows.ElicitFunc(o.Elicitation)
			}
			if o.Sampling != nil {
				c.asker.Sample = flows.SampleFunc(o.Sampling)
			}
			h.flows.Askers().Add(c.asker)
			defer h.flows.Askers().Remove(c.asker)
		}
		ctx = h.withFlows(ctx, c.asker, c.Scope, o.Client)
		if o.OnProgress != nil {
			if sub, err := h.rt.WatchProgress(c.Server); err == nil {
				c.progress = sub
				defer sub.Close()
			}
		}
		return next(ctx, c)
	}
}
