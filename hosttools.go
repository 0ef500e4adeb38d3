package mcpvisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// The host's own tools, for models that manage their servers. They are not
// namespaced. activate_tools is in every session's list (unless
// Options.NoHostTools), and search_tools with it once the catalog is large
// (Options.SearchToolsOver); the others form ConfigGroup, listed and
// callable once a session activates "config".
const (
	ToolActivate = "activate_tools" // {groups: [...]}: grant tool groups, or single tools, to the calling scope
	ToolSearch   = "search_tools"   // {query, limit}: rank the tools the calling scope may activate
	ToolRegister = "register_mcp"   // add or replace a server, live
	ToolDelete   = "delete_mcp"     // remove a server for good
	ToolToggle   = "toggle_item"    // {kind: "mcp", id, enabled}: enable or disable a server, live
	ToolList     = "list_items"     // {type: "mcp"}: every server and its state
)

// hostTool is one of the host's tools: its definition and what runs it.
type hostTool struct {
	name        string
	title       string
	config      bool // in ConfigGroup
	readOnly    bool
	destructive bool
	idempotent  bool
	openWorld   bool
	schema      string
	desc        func(h *Host) string
	// prepare decodes and checks the arguments and describes the call for
	// approval; run does the work once it is allowed.
	prepare func(h *Host, args json.RawMessage) (hostCall, error)
}

// hostCall is one prepared host-tool call.
type hostCall struct {
	server  string
	summary string
	command []string
	run     func(ctx context.Context, h *Host, scope Scope) (*Result, error)
}

// mutates reports whether the tool changes the registry: those calls wait
// in the approval inbox.
func (t *hostTool) mutates() bool { return t.config && !t.readOnly }

// hostTools is set in init: its entries refer, through Session.Tools, back
// to it.
var hostTools []*hostTool

func init() { hostTools = hostToolDefs() }

func hostToolDefs() []*hostTool {
	return []*hostTool{
		{
			name: ToolActivate, title: "Activate tools", idempotent: true,
			schema: `{"type":"object","properties":{"groups":{"type":"array","items":{"type":"string"},"minItems":1,` +
				`"description":"Tool groups: server names (all of a server's tools), \"config\" for the tools that manage servers, ` +
				`or single tools by their full names (mcp__<server>__<tool>, as search_tools lists them)."}},"required":["groups"],"additionalProperties":false}`,
			desc:    activateDescription,
			prepare: prepareActivate,
		},
		{
			name: ToolSearch, title: "Search tools", readOnly: true, idempotent: true,
			schema: `{"type":"object","properties":{` +
				`"query":{"type":"string","description":"What the tool should do, in a few words."},` +
				`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"How many tools to return (default 10, at most 50)."}},` +
				`"required":["query"],"additionalProperties":false}`,
			desc:    searchDescription,
			prepare: prepareSearch,
		},
		{
			name: ToolRegister, title: "Register an MCP server", config: true, openWorld: true,
			schema: `{"type":"object","properties":{` +
				`"name":{"type":"string","description":"Unique name; its tools are called mcp__<name>__<tool>."},` +
				`"transport":{"type":"string","enum":["stdio","http","sse"]},` +
				`"command":{"type":"string","description":"stdio: the executable to run."},` +
				`"args":{"type":"array","items":{"type":"string"},"description":"stdio: its arguments."},` +
				`"env":{"type":"object","additionalProperties":{"type":"string"},"description":"stdio: extra environment variables."},` +
				`"url":{"type":"string","description":"http/sse: the server's URL."},` +
				`"api_key":{"type":"string","description":"http/sse: sent as Authorization: Bearer <key>."},` +
				`"headers":{"type":"object","additionalProperties":{"type":"string"},"description":"http/sse: extra request headers."},` +
				`"description":{"type":"string","description":"What the server provides, shown in list_items and the catalog."},` +
				`"friendly_name":{"type":"string","description":"A display name."}},` +
				`"required":["name","transport"],"additionalProperties":false}`,
			desc: func(*Host) string {
				return "Add an MCP server, or replace the one of that name, and connect to it at once: stdio (command, args, env) or http/sse (url, api_key, headers). " +
					"The answer says whether it came up and lists its tools; activate its name with activate_tools to call them."
			},
			prepare: prepareRegister,
		},
		{
			name: ToolDelete, title: "Delete an MCP server", config: true, destructive: true, idempotent: true,
			schema: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`,
			desc: func(*Host) string {
				return "Remove an MCP server for good: its configuration is discarded and its process stopped at once. Irreversible; to turn a server off and keep it, use toggle_item."
			},
			prepare: prepareDelete,
		},
		{
			name: ToolToggle, title: "Enable or disable an item", config: true, idempotent: true,
			schema: `{"type":"object","properties":{"kind":{"type":"string","enum":["mcp"]},"id":{"type":"string","description":"The server's name."},` +
				`"enabled":{"type":"boolean"}},"required":["kind","id","enabled"],"additionalProperties":false}`,
			desc: func(*Host) string {
				return "Enable or disable an MCP server (kind \"mcp\", id = its name). Takes effect at once and is remembered across restarts."
			},
			prepare: prepareToggle,
		},
		{
			name: ToolList, title: "List items", config: true, readOnly: true, idempotent: true,
			schema: `{"type":"object","properties":{"type":{"type":"string","enum":["mcp"]}},"additionalProperties":false}`,
			desc: func(*Host) string {
				return "List the MCP servers (type \"mcp\"): name, friendly name, description, transport, enabled, state, number of tools and last error."
			},
			prepare: prepareList,
		},
	}
}

func lookupHostTool(name string) *hostTool {
	for _, t := range hostTools {
		if t.name == name {
			return t
		}
	}
	return nil
}

// IsHostTool reports whether name is one of the host's own tools.
func IsHostTool(name string) bool { return lookupHostTool(name) != nil }

func (t *hostTool) tool(h *Host) Tool {
	group := ""
	if t.config {
		group = ConfigGroup
	}
	return Tool{
		Name: t.name, Server: group, Tool: t.name, Title: t.title, Description: t.desc(h),
		InputSchema: []byte(t.schema), Destructive: t.destructive, Available: true,
		Annotations: &protocol.ToolAnnotations{
			Title: t.title, ReadOnlyHint: &t.readOnly, DestructiveHint: &t.destructive,
			IdempotentHint: &t.idempotent, OpenWorldHint: &t.openWorld,
		},
	}
}

// HostTools lists the host's own tools: activate_tools, search_tools, then
// the config group's. Empty with Options.NoHostTools.
func (h *Host) HostTools() []Tool {
	if h.opts.NoHostTools {
		return nil
	}
	return slices.Clone(h.hostToolDefs().tools)
}

// hostToolsFor lists the host tools a scope sees: activate_tools,
// search_tools when the catalog is large (searchListed), and the config
// group's once granted (or always on). The slice is shared: read it,
// never write it.
func (h *Host) hostToolsFor(set groupSet) []Tool {
	if h.opts.NoHostTools {
		return nil
	}
	c := h.hostToolDefs()
	config := set.has(ConfigGroup) || h.isAlwaysOn(ConfigGroup)
	switch {
	case config && c.search:
		return c.tools
	case config:
		return c.noSearch
	case c.search:
		return c.tools[:2] // activate_tools, search_tools
	}
	return c.tools[:1]
}

// hostToolCache holds the host tools' definitions until the servers'
// status next changes (activate_tools' description names the enabled
// servers, and a server's status counts its tools), so Session.Tools,
// read at every model round, builds none.
type hostToolCache struct {
	valid    <-chan struct{} // closed once the definitions are stale
	tools    []Tool          // all, in hostTools' order
	noSearch []Tool          // all but search_tools
	search   bool            // searchListed: the catalog is large
}

func (h *Host) hostToolDefs() *hostToolCache {
	if c := h.hostDefs.Load(); c != nil {
		select {
		case <-c.valid:
		default:
			return c
		}
	}
	c := &hostToolCache{valid: h.rt.StatusChanged()} // taken before Status is read
	for _, t := range hostTools {
		def := t.tool(h)
		c.tools = append(c.tools, def)
		if t.name != ToolSearch {
			c.noSearch = append(c.noSearch, def)
		}
	}
	c.search = h.catalogIsLarge()
	h.hostDefs.Store(c)
	return c
}

// searchListed reports whether sessions are shown search_tools: the
// catalog is large (Options.SearchToolsOver).
func (h *Host) searchListed() bool {
	return !h.opts.NoHostTools && h.hostToolDefs().search
}

// decodeArgs decodes a tool's arguments strictly: an unknown field is
// named, with the fields the tool takes.
func decodeArgs(args json.RawMessage, v any, fields string) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return fmt.Errorf("field %q: want %s", typeErr.Field, typeErr.Type)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("%s (the fields are %s)", strings.TrimPrefix(err.Error(), "json: "), fields)
		}
		return fmt.Errorf("arguments: %v", err)
	}
	return nil
}

// --- shared -----------------------------------------------------------

// knownServer is nil for a registered server, else an error listing them.
func (h *Host) knownServer(name string) error {
	if name == "" {
		return errors.New("a server name is required")
	}
	var names []string
	for _, st := range h.rt.Status() {
		if st.Name == name {
			return nil
		}
		names = append(names, st.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("no server is named %q: there are no servers", name)
	}
	return fmt.Errorf("no server is named %q (servers: %s)", name, strings.Join(names, ", "))
}

// awaitSettled waits until server is ready or has failed to come up (its
// first failure, not the end of its retries), or ctx ends, and returns its
// status then.
func (h *Host) awaitSettled(ctx context.Context, server string) ServerStatus {
	for {
		changed := h.rt.StatusChanged()
		st, ok := h.rt.ServerStatus(server)
		if !ok {
			return ServerStatus{Name: server, State: StateStopped, LastError: "the server is gone"}
		}
		switch st.State {
		case StateReady, StateBackoff, StateFailed, StateStopped, StateDisabled, StateNeedsAuth:
			return st
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return st
		}
	}
}

// serverOutcome reports a server just registered or enabled: ready with
// its tools, or why not (a tool error, so the model notices).
func serverOutcome(h *Host, st ServerStatus, done string) *Result {
	var tools []string
	for _, t := range h.rt.ToolsOf(nil, func(s string) bool { return s == st.Name }) {
		tools = append(tools, t.Name)
	}
	v := map[string]any{"name": st.Name, "state": st.State, "tools": tools}
	if st.State == StateReady {
		text := fmt.Sprintf("Server %q %s and ready with %d tools: %s. Activate the group %q to call them.",
			st.Name, done, len(tools), strings.Join(tools, ", "), st.Name)
		return structured(text, v, false)
	}
	why := st.LastError
	if why == "" {
		why = "it did not become ready in time"
	}
	v["error"] = why
	text := fmt.Sprintf("Server %q %s but not ready (%s): %s.", st.Name, done, st.State, why)
	if st.State == StateBackoff || st.State == StateStarting || st.State == StateInitializing {
		text += " It keeps retrying; toggle_item disables it, delete_mcp removes it."
	}
	return structured(text, v, true)
}

// structured is a host tool's result: text for the model, and the same as
// structuredContent.
func structured(text string, v any, isError bool) *Result {
	sc, err := json.Marshal(v)
	if err != nil {
		return toolError("encoding the result: %v", err)
	}
	raw, _ := json.Marshal(protocol.CallToolResult{
		Content:           []protocol.ContentBlock{{Type: protocol.ContentText, Text: text}},
		StructuredContent: sc, IsError: isError,
	})
	return &Result{Type: ResultJSON, Text: text, JSON: sc, IsError: isError,
		Content: []ContentBlock{{Type: protocol.ContentText, Text: text}}, Raw: raw}
}

func toolError(format string, args ...any) *Result {
	text := fmt.Sprintf(format, args...)
	raw, _ := json.Marshal(protocol.CallToolResult{
		Content: []protocol.ContentBlock{{Type: protocol.ContentText, Text: text}}, IsError: true})
	return &Result{Type: ResultString, Text: text, IsError: true,
		Content: []ContentBlock{{Type: protocol.ContentText, Text: text}}, Raw: raw}
}

// redactHostArgs is a host tool's arguments as the journal may keep them:
// register_mcp's api_key and the values of its env and headers replaced.
func redactHostArgs(tool string, args json.RawMessage) json.RawMessage {
	if tool != ToolRegister {
		return args
	}
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	if _, ok := m["api_key"]; ok {
		m["api_key"] = redacted
	}
	for _, field := range []string{"env", "headers"} {
		if obj, ok := m[field].(map[string]any); ok {
			for k := range obj {
				obj[k] = redacted
			}
		}
	}
	b, _ := json.Marshal(m)
	return b
}

const redacted = "(redacted)"
