package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
)

// argumentStage refuses arguments that are not JSON with an error, and,
// for a server with validateArguments, answers arguments that do not match
// the tool's inputSchema with a tool error the model can correct.
func (p *Pipeline) argumentStage(next Func) Func {
	return func(ctx context.Context, c *Call) (*Result, error) {
		if !c.ToolCall() {
			if len(c.Params) > 0 && !json.Valid(c.Params) {
				return nil, fmt.Errorf("%s: params are not valid JSON", c.Method)
			}
			return next(ctx, c)
		}
		if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
			return nil, fmt.Errorf("%s: arguments are not valid JSON", c.Tool)
		}
		c.def, _ = p.cfg.Runtime.LookupTool(c.Tool)
		if c.def != nil && p.cfg.Validates != nil {
			if p.cfg.Validates(c.def.Server) {
				if res := p.schemas.checkArguments(c.def, c.Arguments); res != nil {
					return res, nil
				}
			}
		}
		return next(ctx, c)
	}
}
