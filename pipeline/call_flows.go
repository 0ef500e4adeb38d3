package pipeline

import "context"

// flowStage ties the call's own elicitation and sampling handlers
// (CallOptions.Elicitation, Sampling) to the server's requests while the
// call runs (Config.Flows), and subscribes to its progress. If the call
// becomes a task, its progress token stays valid until the task ends: one
// subscription serves the call and the polling.
func (p *Pipeline) flowStage(next Func) Func {
	return func(ctx context.Context, c *Call) (*Result, error) {
		if c.Server != "" {
			p.inflight.add(c)
			defer p.inflight.remove(c)
		}
		if p.cfg.Flows != nil {
			var detach func()
			ctx, detach = p.cfg.Flows.Attach(ctx, c)
			defer detach()
		}
		if c.Options.OnProgress != nil {
			if sub, err := p.cfg.Runtime.WatchProgress(c.Server); err == nil {
				c.progress = sub
				defer sub.Close()
			}
		}
		return next(ctx, c)
	}
}
