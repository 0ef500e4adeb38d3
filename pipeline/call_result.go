package pipeline

import (
	"context"
	"fmt"
)

// resultStage turns the server's raw CallToolResult into a Result: decoded
// on the caller's goroutine, structuredContent checked against the tool's
// outputSchema, media items written to files. A -32042 error becomes a
// *URLElicitationRequiredError.
func (p *Pipeline) resultStage(next Func) Func {
	return func(ctx context.Context, c *Call) (*Result, error) {
		res, err := next(ctx, c)
		if !c.ToolCall() {
			if err != nil || res != nil {
				return res, err
			}
			return &Result{Type: ResultJSON, Raw: c.raw}, nil
		}
		if err != nil {
			return nil, urlElicitationRequired(c.Server, err)
		}
		if res != nil {
			return res, nil // a detached task's handle
		}
		if c.def == nil {
			// The call waited for its server to list its tools.
			c.def, _ = p.cfg.Runtime.LookupTool(c.Tool)
		}
		res, err = DecodeResult(c.raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Tool, err)
		}
		if c.def != nil {
			if err := p.schemas.checkOutput(c.def, res); err != nil {
				return nil, err
			}
		}
		if err := res.render(p.media); err != nil {
			// The result says which items were not saved; the reason is ours.
			p.cfg.Logger.Warn("media not saved", "tool", c.Tool, "err", err)
		}
		return res, nil
	}
}
