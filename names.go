package mcpvisor

import "github.com/mcpvisor/mcpvisor/actors"

// ToolPrefix starts every namespaced name: mcp__<server>__<name>.
const ToolPrefix = actors.ToolPrefix

// DefaultMaxToolName is the default budget of an exposed name
// (Options.MaxToolName): model APIs accept tool names matching
// ^[a-zA-Z0-9_-]{1,64}$.
const DefaultMaxToolName = actors.DefaultMaxToolName

// ToolName returns the namespaced name mcp__<server>__<tool>, with the
// server's own name for the tool as it is: the name a tool goes by in the
// journal (Call.Tool). The name it is exposed by (Tool.Name) differs when
// this one is not a name model APIs accept.
func ToolName(server, tool string) string { return actors.ToolName(server, tool) }

// SplitToolName parses mcp__<server>__<tool>, splitting on the first "__"
// after the prefix: server names never contain "__", tool names may. ok is
// false when name is not namespaced or either part is empty. tool is the
// name's part as written, which for an exposed name may be a mapped one:
// ResolveTool gives the server's own.
func SplitToolName(name string) (server, tool string, ok bool) {
	return actors.SplitToolName(name)
}

// SafeToolName reports whether name is made only of the characters model
// APIs accept in a tool name, ^[a-zA-Z0-9_-]+$ (whatever its length).
func SafeToolName(name string) bool { return actors.SafeToolName(name) }

// ResolveTool returns the server of a tool name as a client may call it,
// and the server's own name for the tool: mcp__<server>__<tool> of a
// registered server, where <tool> is the name the tool is exposed by
// (mapped, when the server's own name is not one model APIs accept) or
// the server's own; or the name a server with "prefix": false exposes its
// tool under. ok is false for the host's own tools and any other name. A
// bare or mapped name resolves once its server's tools are known (listed,
// or its last known catalog). It never waits on a server; safe for
// concurrent use.
func (h *Host) ResolveTool(name string) (server, tool string, ok bool) {
	return h.rt.ResolveTool(name)
}

// PromptName is the name server's prompt is exposed under (as the gateway
// lists it): the prompt's own name for a server with "prefix": false,
// else mcp__<server>__<prompt>, each mapped as tool names are when the
// prompt's own name is not one model APIs accept or is too long
// (Options.MaxToolName), over the server's last listed prompts
// (Host.Prompts). An unprefixed server's prompt keeps the namespaced name
// when its bare one reads as mcp__<x>__<y>, or when a server registered
// before it listed a prompt of that bare name: the name belongs to that
// server then, and the collision is logged. It never waits on a server;
// safe for concurrent use.
func (h *Host) PromptName(server, prompt string) string {
	return h.prompts.Name(server, prompt, h.rt.IsUnprefixed(server), h.rt.Unprefixed(), h.nameBudget())
}

// ResolvePrompt returns the server of an exposed prompt name and the
// server's own name for the prompt: mcp__<server>__<prompt> of a
// registered server (with the name PromptName gives, or the prompt's own),
// or a bare name as PromptName gives it, once its server's prompts were
// listed (Host.Prompts). ok is false for any other name. It never waits on
// a server; safe for concurrent use.
func (h *Host) ResolvePrompt(name string) (server, prompt string, ok bool) {
	return h.prompts.Resolve(name, func(server string) bool {
		_, known := h.rt.ServerStatus(server)
		return known
	}, h.rt.Unprefixed())
}
