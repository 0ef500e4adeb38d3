package mcpvisor

import (
	"context"
	"fmt"
)

// grantStage refuses a session's call to a tool whose group is neither
// granted to its scope nor always on, with ErrNotGranted naming the group
// to activate. Host.Call (no session) is not limited. The host's config
// tools belong to ConfigGroup; activate_tools to no group.
func (h *Host) grantStage(next CallFunc) CallFunc {
	return func(ctx context.Context, c *Call) (*Result, error) {
		if c.Scope.Session == "" {
			return next(ctx, c)
		}
		group, ok := c.Server, c.Server != ""
		if t := lookupHostTool(c.Tool); t != nil && t.config {
			group, ok = ConfigGroup, true
		}
		if ok && !h.isAlwaysOn(group) && !h.grants.get(c.Scope).has(group) {
			return nil, fmt.Errorf("%w: %s: activate the group %q first", ErrNotGranted, c.Tool, group)
		}
		return next(ctx, c)
	}
}
