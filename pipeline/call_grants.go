package pipeline

import (
	"context"
	"fmt"

	"github.com/mcpvisor/mcpvisor/internal/hosttools"
)

// grantStage refuses a session's call to a tool whose group is neither
// granted to its scope nor always on, and that is not granted itself (a
// grant whose group is the call's namespaced name, c.Tool), with
// ErrNotGranted naming the group to activate. Host.Call (no session) is
// not limited. The host's config tools belong to ConfigGroup, granted as
// a group only; activate_tools and search_tools to no group.
func (p *Pipeline) grantStage(next Func) Func {
	return func(ctx context.Context, c *Call) (*Result, error) {
		if c.Scope.Session == "" || !c.ToolCall() || p.cfg.Granted == nil {
			return next(ctx, c)
		}
		group, ok := c.Server, c.Server != ""
		if hosttools.InConfigGroup(c.Tool) {
			group, ok = hosttools.ConfigGroup, true
		}
		if ok && !p.cfg.Granted(c.Scope, group) {
			if group == hosttools.ConfigGroup || !p.cfg.Granted(c.Scope, c.Tool) {
				return nil, fmt.Errorf("%w: %s: activate the group %q (or this tool) first", ErrNotGranted, c.Tool, group)
			}
		}
		return next(ctx, c)
	}
}
