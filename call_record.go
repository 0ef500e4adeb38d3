package mcpvisor

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/hosttools"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// recordStage journals every request that reaches the pipeline, whatever
// answered it, unless Journal.NoCallHistory is set. It never blocks: the
// record joins the journal's bounded queue.
func (h *Host) recordStage(next CallFunc) CallFunc {
	if h.opts.Journal.NoCallHistory {
		return next
	}
	return func(ctx context.Context, c *Call) (*Result, error) {
		res, err := next(ctx, c)
		h.recordCall(c, res, err)
		return res, err
	}
}

func (h *Host) recordCall(c *Call, res *Result, err error) {
	rec := persistence.HistoryRecord{
		Time: c.Start, Kind: persistence.HistoryCall, Server: c.Server, Scope: c.Scope, Tool: c.Tool, CalledAs: c.CalledAs,
		Duration: time.Since(c.Start), Outcome: callOutcome(res, err), ResultSize: len(c.raw),
	}
	args := c.Arguments
	if !c.toolCall() {
		rec.Method, rec.Tool, args = c.Method, c.Name, c.Params
	}
	if err != nil {
		rec.Error = err.Error()
	}
	if h.opts.Journal.KeepCallPayloads {
		if h.isHostTool(c.Tool) {
			args = hosttools.Redact(c.Tool, args)
		}
		if json.Valid(args) {
			rec.Arguments = persistence.RawJSON(args)
		}
		rec.Result = persistence.RawJSON(c.raw)
	}
	h.journal.Ingest(c.Server, persistence.AppendHistory(rec))
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
