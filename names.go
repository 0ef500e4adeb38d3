package mcpvisor

import "github.com/mcpvisor/mcpvisor/internal/actors"

// ToolPrefix starts every namespaced name: mcp__<server>__<name>.
const ToolPrefix = actors.ToolPrefix

// ToolName returns the namespaced name mcp__<server>__<tool>. Prompts
// exposed through the gateway are named the same way.
func ToolName(server, tool string) string { return actors.ToolName(server, tool) }

// SplitToolName parses mcp__<server>__<tool>, splitting on the first "__"
// after the prefix: server names never contain "__", tool names may. ok is
// false when name is not namespaced or either part is empty.
func SplitToolName(name string) (server, tool string, ok bool) {
	return actors.SplitToolName(name)
}
