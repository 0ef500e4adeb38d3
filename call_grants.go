package mcpvisor

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
func (h *Host) grantStage(next CallFunc) CallFunc {
	return func(ctx context.Context, c *Call) (*Result, error) {
		if c.Scope.Session == "" || !c.toolCall() {
			return next(ctx, c)
		}
		group, ok := c.Server, c.Server != ""
		if hosttools.InConfigGroup(c.Tool) {
			group, ok = ConfigGroup, true
		}
		if ok && !h.isAlwaysOn(group) {
			set := h.grants.Get(c.Scope)
			if !set.Has(group) && (group == ConfigGroup || !set.Has(c.Tool)) {
				return nil, fmt.Errorf("%w: %s: activate the group %q (or this tool) first", ErrNotGranted, c.Tool, group)
			}
		}
		return next(ctx, c)
	}
}
