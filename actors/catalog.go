package actors

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// truncatedMark ends a description that was cut to fit MaxDescription.
const truncatedMark = "… [truncated]"

// catalog is one server's trimmed tool list, immutable once published.
type catalog struct {
	tools    []Tool
	byName   map[string]int // server's tool name → index in tools
	naming   *NameMap       // the names the tools are exposed by
	warnings []string
	// headers are the tools' x-mcp-header annotations, by the server's
	// tool name (modern servers over HTTP only).
	headers map[string][]protocol.ParamHeader
	// reviews are the listed definitions no person approved, held the
	// server's tool names withheld from sessions and why (pins.go).
	reviews []ToolReview
	held    map[string]string
	// restored: rebuilt from the journal before the server listed its
	// tools in this life. A tool it lacks may be listed (or withheld) once
	// the server is ready, so a call is not refused on its word.
	restored bool
}

func (c *catalog) lookup(tool string) (*Tool, bool) {
	if c == nil {
		return nil, false
	}
	i, ok := c.byName[tool]
	if !ok {
		return nil, false
	}
	return &c.tools[i], true
}

// resolve finds a tool by the part of a namespaced name after
// mcp__<server>__: the name the tool is exposed by, or the server's own.
// The two never name different tools (NameMap).
func (c *catalog) resolve(part string) (*Tool, bool) {
	if c == nil {
		return nil, false
	}
	if t, ok := c.lookup(part); ok {
		return t, true
	}
	return c.lookup(c.naming.OwnOfPart(part))
}

// lookupBare finds the tool whose bare name (on a server with no prefix)
// is bare; the server's own name, where it differs, is not one.
func (c *catalog) lookupBare(bare string) (*Tool, bool) {
	if c == nil {
		return nil, false
	}
	own := c.naming.OwnOfBare(bare)
	if c.naming.Bare(own) != bare {
		return nil, false
	}
	return c.lookup(own)
}

// paramHeaders returns a tool's x-mcp-header annotations; c may be nil.
func (c *catalog) paramHeaders(tool string) []protocol.ParamHeader {
	if c == nil {
		return nil
	}
	return c.headers[tool]
}

// buildCatalog filters, trims and names the tools a server listed:
// namespaced, or bare for an unprefixed server (exposedName), each name
// made one model APIs accept within budget bytes (NameMap).
//
// known holds the server's tool names selected last time, in order. When
// MaxTools forces a cut, tools already known are kept before new ones, so a
// server that grows a tool cannot push an established one out (seed 002,
// smaller notes); among equals, the server's order decides.
//
// With headers (a modern server over HTTP), each tool's x-mcp-header
// annotations are validated (SEP-2243): a tool with an invalid one is left
// out with a warning, as the spec requires, so one malformed definition
// cannot take the others down.
//
// With pins (a server whose tool policy is not off), each tool left after
// the filters is assessed against its pin; the ones withheld are left out
// and recorded in held.
func buildCatalog(spec *ServerSpec, listed []protocol.Tool, known []string, headers bool, budget int, pins *pinReview) *catalog {
	c := &catalog{byName: make(map[string]int, len(listed))}
	include := toSet(spec.IncludeTools)
	exclude := toSet(spec.ExcludeTools)

	seen := make(map[string]bool, len(listed))
	paramHeaders := map[string][]protocol.ParamHeader{}
	candidates := make([]*protocol.Tool, 0, len(listed))
	for i := range listed {
		t := &listed[i]
		if t.Name == "" {
			c.warnings = append(c.warnings, "a tool with no name was ignored")
			continue
		}
		if seen[t.Name] {
			c.warnings = append(c.warnings, fmt.Sprintf("tool %q listed twice: the first was kept", t.Name))
			continue
		}
		seen[t.Name] = true
		if len(include) > 0 && !include[t.Name] || exclude[t.Name] {
			continue
		}
		if pins != nil && !pins.admit(t) {
			continue
		}
		if headers {
			ph, err := protocol.ParamHeaders(t.InputSchema)
			if err != nil {
				c.warnings = append(c.warnings, fmt.Sprintf("tool %q left out: %v", t.Name, err))
				continue
			}
			paramHeaders[t.Name] = ph
		}
		candidates = append(candidates, t)
	}

	// A filter naming a tool the server does not list is a typo, or a tool
	// since renamed or removed: say so, and say when it leaves the server
	// nothing to expose.
	for _, f := range []struct {
		field string
		names []string
	}{{"includeTools", spec.IncludeTools}, {"excludeTools", spec.ExcludeTools}} {
		for _, n := range f.names {
			if !seen[n] {
				c.warnings = append(c.warnings, fmt.Sprintf("%s names %q, which the server does not list", f.field, n))
			}
		}
	}
	if len(include) > 0 && len(seen) > 0 && !slices.ContainsFunc(spec.IncludeTools, func(n string) bool { return seen[n] }) {
		c.warnings = append(c.warnings, fmt.Sprintf("includeTools matches none of the server's %d tools: it exposes none", len(seen)))
	}

	if spec.MaxTools > 0 && len(candidates) > spec.MaxTools {
		rank := make(map[string]int, len(known))
		for i, n := range known {
			rank[n] = i
		}
		// Stable: known tools first (in their earlier order), then new ones
		// in the server's order.
		slices.SortStableFunc(candidates, func(a, b *protocol.Tool) int {
			ra, aok := rank[a.Name]
			rb, bok := rank[b.Name]
			switch {
			case aok && bok:
				return ra - rb
			case aok:
				return -1
			case bok:
				return 1
			}
			return 0
		})
		dropped := len(candidates) - spec.MaxTools
		candidates = candidates[:spec.MaxTools]
		c.warnings = append(c.warnings, fmt.Sprintf("maxTools %d: %d tool(s) left out", spec.MaxTools, dropped))
	}

	if pins != nil {
		c.reviews, c.held = pins.reviews, pins.held
		pins.finish()
	}

	own := make([]string, len(candidates))
	for i, t := range candidates {
		own[i] = t.Name
	}
	c.naming = MapNames(spec.Name, own, budget)
	c.tools = make([]Tool, 0, len(candidates))
	for _, t := range candidates {
		name := exposedName(spec, c.naming, t.Name)
		if len(name) > budget {
			c.warnings = append(c.warnings, fmt.Sprintf("tool %q is exposed as %s, %d bytes, over the budget of %d: the server's name leaves too little room", t.Name, name, len(name), budget))
		}
		taskSupport := ""
		if t.Execution != nil {
			taskSupport = t.Execution.TaskSupport
		}
		in := rawJSON(t.InputSchema)
		if len(in) > 0 && in[0] != '{' {
			c.warnings = append(c.warnings, fmt.Sprintf("tool %q: inputSchema is not a JSON object", t.Name))
		}
		c.byName[t.Name] = len(c.tools)
		c.tools = append(c.tools, Tool{
			Name:         name,
			Server:       spec.Name,
			Tool:         t.Name,
			Title:        t.Title,
			Description:  capDescription(t.Description, spec.MaxDescription),
			InputSchema:  in,
			OutputSchema: rawJSON(t.OutputSchema),
			Annotations:  t.Annotations,
			Destructive:  t.Destructive(),
			TaskSupport:  taskSupport,
			Icons:        t.Icons,
			Meta:         rawJSON(t.Meta),
		})
		if ph := paramHeaders[t.Name]; ph != nil {
			if c.headers == nil {
				c.headers = map[string][]protocol.ParamHeader{}
			}
			c.headers[t.Name] = ph
		}
	}
	return c
}

// names returns the selected tools' server-side names, in catalog order.
func (c *catalog) names() []string {
	if c == nil {
		return nil
	}
	out := make([]string, len(c.tools))
	for i := range c.tools {
		out[i] = c.tools[i].Tool
	}
	return out
}

// capDescription cuts s to at most max bytes, on a rune boundary, marking the
// cut. max < 0 means no cap.
func capDescription(s string, max int) string {
	if max < 0 || len(s) <= max {
		return s
	}
	keep := max - len(truncatedMark)
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + truncatedMark
}

func toSet(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
