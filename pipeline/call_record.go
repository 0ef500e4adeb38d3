package pipeline

import (
	"context"
	"encoding/json"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/hosttools"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// recordStage journals every request that reaches the pipeline, whatever
// answered it, unless Journal.NoCallHistory is set. It never blocks: the
// record joins the journal's bounded queue.
func (p *Pipeline) recordStage(next Func) Func {
	if p.cfg.Journal == nil {
		return next
	}
	return func(ctx context.Context, c *Call) (*Result, error) {
		res, err := next(ctx, c)
		p.recordCall(c, res, err)
		return res, err
	}
}

func (p *Pipeline) recordCall(c *Call, res *Result, err error) {
	rec := persistence.HistoryRecord{
		Time: c.Start, Kind: persistence.HistoryCall, Server: c.Server, Scope: c.Scope, Tool: c.Tool, CalledAs: c.CalledAs,
		Duration: c.Latency(), Waited: c.Waited(), CallID: c.ID, Outcome: callOutcome(res, err), ResultSize: len(c.raw),
	}
	args := c.Arguments
	if !c.ToolCall() {
		rec.Method, rec.Tool, args = c.Method, c.Name, c.Params
	}
	if err != nil {
		rec.Error = err.Error()
	}
	if p.cfg.KeepPayloads {
		if p.cfg.HostTools != nil && hosttools.Is(c.Tool) {
			args = hosttools.Redact(c.Tool, args)
		}
		if json.Valid(args) {
			rec.Arguments = persistence.RawJSON(args)
		}
		rec.Result = persistence.RawJSON(c.raw)
	}
	p.cfg.Journal.IngestHistory(c.Server, &rec)
}

// callOutcome classifies a call for the history.
func callOutcome(res *Result, err error) string {
	switch {
	case err == nil && res != nil && res.IsError:
		return "tool_error"
	case err == nil:
		return "ok"
	}
	return actors.Outcome(err)
}
