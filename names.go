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

// ResolveTool returns the server of a tool name as a client may call it,
// and the server's own name for the tool: mcp__<server>__<tool> of a
// registered server, or the name a server with "prefix": false exposes
// its tool under. ok is false for the host's own tools and any other name.
// A bare name resolves once its server's tools are known (listed, or its
// last known catalog). It never waits on a server; safe for concurrent
// use.
func (h *Host) ResolveTool(name string) (server, tool string, ok bool) {
	return h.rt.ResolveTool(name)
}

// PromptName is the name server's prompt is exposed under (as the gateway
// lists it): the prompt's own name for a server with "prefix": false,
// else mcp__<server>__<prompt>. An unprefixed server's prompt keeps the
// namespaced name when its own reads as mcp__<x>__<y>, or when a server
// registered before it listed a prompt of that name (Host.Prompts): the
// name belongs to that server then, and the collision is logged. It never
// waits on a server; safe for concurrent use.
func (h *Host) PromptName(server, prompt string) string {
	if !h.rt.IsUnprefixed(server) || isNamespaced(prompt) {
		return ToolName(server, prompt)
	}
	if owner := h.prompts.owner(h.rt.Unprefixed(), prompt); owner != "" && owner != server {
		return ToolName(server, prompt)
	}
	return prompt
}

// ResolvePrompt returns the server of an exposed prompt name and the
// server's own name for the prompt: mcp__<server>__<prompt> of a
// registered server, or a prompt's own name as PromptName gives it, once
// its server's prompts were listed (Host.Prompts). ok is false for any
// other name. It never waits on a server; safe for concurrent use.
func (h *Host) ResolvePrompt(name string) (server, prompt string, ok bool) {
	if server, prompt, ok := SplitToolName(name); ok {
		if _, known := h.rt.ServerStatus(server); !known {
			return "", "", false
		}
		return server, prompt, true
	}
	if owner := h.prompts.owner(h.rt.Unprefixed(), name); owner != "" {
		return owner, name, true
	}
	return "", "", false
}

func isNamespaced(name string) bool {
	_, _, ok := SplitToolName(name)
	return ok
}
