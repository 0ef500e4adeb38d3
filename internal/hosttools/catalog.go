package hosttools

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/actors"
)

// CatalogInput is what one scope's "MCP servers" block shows.
type CatalogInput struct {
	// Servers are the host's servers, in registration order; the
	// disabled ones are left out.
	Servers []actors.ServerStatus
	// Active reports whether the scope may call every tool of server:
	// it is granted, or always on.
	Active func(server string) bool
	// Unprefixed reports whether server's tools go by their own names
	// ("prefix": false).
	Unprefixed func(server string) bool
	// Tools are the tools granted one by one, by namespaced name, sorted.
	Tools []string
	// Search: search_tools is listed, so the block says to search first.
	Search bool
}

// Catalog renders the "MCP servers" block of a scope's system prompt: the
// enabled servers it may activate, with their descriptions, the ones
// active, whose tools it can call, and the tools granted one by one.
func Catalog(in CatalogInput) string {
	var b strings.Builder
	var active []string
	b.WriteString("## MCP servers\n")
	if in.Search {
		b.WriteString("There are many tools: find one with `search_tools({\"query\": \"what it should do\"})`, " +
			"then load just it with `activate_tools([\"mcp__<server>__<tool>\"])`.\n")
	}
	b.WriteString("**Available** — call `activate_tools([\"name\"])` to load tools:\n")
	b.WriteString("| Server | Description |\n|---|---|\n")
	available := 0
	for _, st := range in.Servers {
		if !st.Enabled {
			continue
		}
		if in.Active(st.Name) {
			active = append(active, st.Name)
			continue
		}
		desc := st.Description
		if desc == "" {
			desc = st.FriendlyName
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", st.Name, tableCell(desc))
		available++
	}
	if available == 0 {
		b.WriteString("| (none) | |\n")
	}
	b.WriteString("**Active** — tools callable as `mcp__<name>__<tool>`:\n")
	if len(active) == 0 && len(in.Tools) == 0 {
		b.WriteString("- (none)\n")
	}
	for _, name := range active {
		if in.Unprefixed(name) {
			fmt.Fprintf(&b, "- `%s` (tools callable by their own names)\n", name)
			continue
		}
		fmt.Fprintf(&b, "- `%s`\n", name)
	}
	for _, key := range in.Tools {
		if server, _, _ := actors.SplitToolName(key); !slices.Contains(active, server) {
			fmt.Fprintf(&b, "- `%s` (this tool only)\n", key)
		}
	}
	return b.String()
}

// tableCell is s as one cell of a markdown table: on one line, its pipes
// escaped.
func tableCell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
