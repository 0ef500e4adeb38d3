package mcpvisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mcpvisor/mcpvisor/internal/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// The host's own tools, for models that manage their servers. They are not
// namespaced. activate_tools is in every session's list (unless
// Options.NoHostTools); the others form ConfigGroup, listed and callable
// once a session activates "config".
const (
	ToolActivate = "activate_tools" // {groups: [...]}: grant tool groups to the calling scope
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
				`"description":"Tool groups: server names, or \"config\" for the tools that manage servers."}},"required":["groups"],"additionalProperties":false}`,
			desc:    activateDescription,
			prepare: prepareActivate,
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

// HostTools lists the host's own tools: activate_tools, then the config
// group's. Empty with Options.NoHostTools.
func (h *Host) HostTools() []Tool {
	return slices.Clone(h.hostToolsFor(groupSet{ConfigGroup: time.Time{}}))
}

// hostToolsFor lists the host tools a scope sees: activate_tools, and the
// config group's once granted (or always on). The slice is shared: read
// it, never write it.
func (h *Host) hostToolsFor(set groupSet) []Tool {
	if h.opts.NoHostTools {
		return nil
	}
	all := h.hostToolDefs()
	if set.has(ConfigGroup) || h.alwaysOn[ConfigGroup] {
		return all
	}
	return all[:1] // activate_tools comes first
}

// hostToolCache holds the host tools' definitions until the servers'
// status next changes (activate_tools' description names the enabled
// servers), so Session.Tools, read at every model round, builds none.
type hostToolCache struct {
	valid <-chan struct{} // closed once the definitions are stale
	tools []Tool
}

func (h *Host) hostToolDefs() []Tool {
	if c := h.hostDefs.Load(); c != nil {
		select {
		case <-c.valid:
		default:
			return c.tools
		}
	}
	c := &hostToolCache{valid: h.rt.StatusChanged()} // taken before Status is read
	for _, t := range hostTools {
		c.tools = append(c.tools, t.tool(h))
	}
	h.hostDefs.Store(c)
	return c.tools
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

// --- activate_tools ---------------------------------------------------

func activateDescription(h *Host) string {
	var groups []string
	for _, st := range h.rt.Status() {
		if st.Enabled {
			groups = append(groups, st.Name)
		}
	}
	desc := "Load the tools of MCP servers (tool groups) into this session; from the next step they are listed and callable as mcp__<group>__<tool>."
	if len(groups) > 0 {
		desc += " Groups: " + strings.Join(groups, ", ") + "."
	}
	return desc
}

func prepareActivate(h *Host, args json.RawMessage) (hostCall, error) {
	var a struct {
		Groups []string `json:"groups"`
	}
	if err := decodeArgs(args, &a, `"groups"`); err != nil {
		return hostCall{}, err
	}
	if len(a.Groups) == 0 {
		return hostCall{}, errors.New(`field "groups": list at least one group (a server name, or "config")`)
	}
	return hostCall{
		summary: "Activate " + strings.Join(a.Groups, ", "),
		run: func(ctx context.Context, h *Host, scope Scope) (*Result, error) {
			s := h.Session(scope.Session, scope.Stack)
			// Not cut short by the caller: a grant whose wait was abandoned
			// would land anyway, unannounced.
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grantWriteTimeout)
			defer cancel()
			if err := s.Activate(wctx, a.Groups...); err != nil {
				return nil, err
			}
			var names []string
			for _, t := range s.Tools() {
				names = append(names, t.Name)
			}
			text := fmt.Sprintf("Active groups: %s. Tools available from the next step: %s.", strings.Join(s.Groups(), ", "), strings.Join(names, ", "))
			if len(names) == 0 {
				text = fmt.Sprintf("Active groups: %s. No tools are listed yet (a server still starting lists its tools once ready).", strings.Join(s.Groups(), ", "))
			}
			if scope.Stack != "" {
				text += " They last until stack frame " + scope.Stack + " ends."
			}
			return structured(text, map[string]any{"groups": s.Groups(), "tools": names}, false), nil
		},
	}, nil
}

// grantWriteTimeout bounds an activation's durable write once started.
const grantWriteTimeout = 10 * time.Second

// --- register_mcp -----------------------------------------------------

type registerArgs struct {
	Name         string            `json:"name"`
	Transport    string            `json:"transport"`
	Command      string            `json:"command"`
	Args         []string          `json:"args"`
	Env          map[string]string `json:"env"`
	URL          string            `json:"url"`
	APIKey       string            `json:"api_key"`
	Headers      map[string]string `json:"headers"`
	Description  string            `json:"description"`
	FriendlyName string            `json:"friendly_name"`
}

const registerFields = "name, transport, command, args, env, url, api_key, headers, description, friendly_name"

// registerFieldNames maps the config file's field names, which validation
// errors use, to register_mcp's.
var registerFieldNames = strings.NewReplacer(`field "type"`, `field "transport"`,
	`field "apiKey"`, `field "api_key"`, `field "friendlyName"`, `field "friendly_name"`)

func prepareRegister(h *Host, args json.RawMessage) (hostCall, error) {
	var a registerArgs
	if err := decodeArgs(args, &a, registerFields); err != nil {
		return hostCall{}, err
	}
	if err := a.check(); err != nil {
		return hostCall{}, err
	}
	sc := ServerConfig{Name: a.Name, Type: a.Transport, Command: a.Command, Args: a.Args, Env: a.Env,
		URL: a.URL, APIKey: a.APIKey, Headers: a.Headers, Description: a.Description,
		FriendlyName: a.FriendlyName, Enabled: true}
	if err := sc.Validate(); err != nil {
		return hostCall{}, errors.New(registerFieldNames.Replace(strings.TrimPrefix(err.Error(), "config: ")))
	}
	hc := hostCall{server: a.Name, summary: a.summary()}
	if st, ok := h.rt.ServerStatus(a.Name); ok {
		// The person approving must know an existing server is replaced.
		hc.summary = fmt.Sprintf("%s, replacing the %s server of that name (%s)", hc.summary, st.Transport, st.State)
	}
	if a.Transport == "stdio" {
		hc.command = append([]string{a.Command}, a.Args...)
	}
	hc.run = func(ctx context.Context, h *Host, _ Scope) (*Result, error) {
		if err := h.Register(ctx, sc); err != nil {
			return nil, err
		}
		st := h.awaitSettled(ctx, a.Name)
		return serverOutcome(h, st, "registered"), nil
	}
	return hc, nil
}

// check refuses what the config file would take but a model may not give:
// fields of the other transport, and ${VAR} references, which would read
// the host's environment into a server the model chose.
func (a *registerArgs) check() error {
	if a.Name == "" {
		return errors.New(`field "name": required`)
	}
	switch a.Transport {
	case "stdio":
		for field, set := range map[string]bool{"url": a.URL != "", "api_key": a.APIKey != "", "headers": len(a.Headers) > 0} {
			if set {
				return fmt.Errorf("field %q: only for http and sse servers", field)
			}
		}
	case "http", "sse":
		for field, set := range map[string]bool{"command": a.Command != "", "args": len(a.Args) > 0, "env": len(a.Env) > 0} {
			if set {
				return fmt.Errorf("field %q: only for stdio servers", field)
			}
		}
	case "":
		return errors.New(`field "transport": required: "stdio", "http" or "sse"`)
	default:
		return fmt.Errorf(`field "transport": %q is not "stdio", "http" or "sse"`, a.Transport)
	}
	refs := []fieldValue{{"name", a.Name}, {"command", a.Command}, {"url", a.URL}, {"api_key", a.APIKey}}
	for i, v := range a.Args {
		refs = append(refs, fieldValue{fmt.Sprintf("args[%d]", i), v})
	}
	for _, k := range sortedMapKeys(a.Env) {
		refs = append(refs, fieldValue{"env." + k, a.Env[k]})
	}
	for _, k := range sortedMapKeys(a.Headers) {
		refs = append(refs, fieldValue{"headers." + k, a.Headers[k]})
	}
	for _, f := range refs {
		if strings.Contains(f.value, "${") {
			return fmt.Errorf("field %q: ${...} references to the host's environment are not taken from a tool call; give the value itself", f.field)
		}
	}
	return nil
}

// summary describes the registration for a person: everything but secret
// values.
func (a *registerArgs) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Register %s server %q: ", a.Transport, a.Name)
	if a.Transport == "stdio" {
		b.WriteString("run " + shellQuote(append([]string{a.Command}, a.Args...)))
		if len(a.Env) > 0 {
			fmt.Fprintf(&b, " with env %s", strings.Join(sortedMapKeys(a.Env), ", "))
		}
	} else {
		b.WriteString("connect to " + a.URL)
		if a.APIKey != "" {
			b.WriteString(" with an API key")
		}
		if len(a.Headers) > 0 {
			fmt.Fprintf(&b, " with headers %s", strings.Join(sortedMapKeys(a.Headers), ", "))
		}
	}
	return b.String()
}

// shellQuote renders argv as a POSIX shell would need it typed, so the
// person approving reads every argument's exact bounds. An argument with a
// character that does not show (a control, a bidi override, a zero-width
// or unusual space) is written as a Go string literal instead, escapes
// spelled out, so nothing in it hides from that person.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		switch {
		case strings.ContainsFunc(a, hidden):
			q[i] = strconv.QuoteToGraphic(a)
		case a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-") == "":
			q[i] = a
		default:
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// hidden reports a rune a person would not see as typed.
func hidden(r rune) bool {
	return r != ' ' && (!unicode.IsGraphic(r) || unicode.IsSpace(r) || unicode.Is(unicode.Cf, r))
}

// --- delete_mcp -------------------------------------------------------

func prepareDelete(h *Host, args json.RawMessage) (hostCall, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := decodeArgs(args, &a, `"name"`); err != nil {
		return hostCall{}, err
	}
	if err := h.knownServer(a.Name); err != nil {
		return hostCall{}, err
	}
	// A server of the config file comes back at the next start: the file,
	// not the registry, is where it is defined.
	rec, _, err := h.registryRow(a.Name)
	if err != nil {
		return hostCall{}, err
	}
	fromFile := rec.Origin == persistence.OriginConfig
	summary := fmt.Sprintf("Delete server %q for good: its configuration is discarded and its process stopped", a.Name)
	if fromFile {
		summary = fmt.Sprintf("Delete server %q: its process is stopped; it is defined in the config file, so it returns at the next start", a.Name)
	}
	return hostCall{
		server:  a.Name,
		summary: summary,
		run: func(ctx context.Context, h *Host, _ Scope) (*Result, error) {
			if err := h.Unregister(ctx, a.Name); err != nil {
				return nil, err
			}
			text := fmt.Sprintf("Server %q deleted: its process is stopped and its configuration gone.", a.Name)
			if fromFile {
				text = fmt.Sprintf("Server %q deleted: its process is stopped. It is defined in the host's config file, so it comes back when the host starts again; to keep it off across restarts, use toggle_item instead.", a.Name)
			}
			return structured(text, map[string]any{"name": a.Name, "deleted": true, "in_config_file": fromFile}, false), nil
		},
	}, nil
}

// --- toggle_item ------------------------------------------------------

func prepareToggle(h *Host, args json.RawMessage) (hostCall, error) {
	var a struct {
		Kind    string `json:"kind"`
		ID      string `json:"id"`
		Enabled *bool  `json:"enabled"`
	}
	if err := decodeArgs(args, &a, `"kind", "id", "enabled"`); err != nil {
		return hostCall{}, err
	}
	switch {
	case a.Kind != "mcp":
		return hostCall{}, fmt.Errorf(`field "kind": %q is not a kind of item this host has; the kinds are: "mcp"`, a.Kind)
	case a.Enabled == nil:
		return hostCall{}, errors.New(`field "enabled": required (true or false)`)
	}
	if err := h.knownServer(a.ID); err != nil {
		return hostCall{}, err
	}
	enabled := *a.Enabled
	verb := "Disable"
	if enabled {
		verb = "Enable"
	}
	return hostCall{
		server:  a.ID,
		summary: fmt.Sprintf("%s server %q", verb, a.ID),
		run: func(ctx context.Context, h *Host, _ Scope) (*Result, error) {
			if err := h.SetEnabled(ctx, a.ID, enabled); err != nil {
				return nil, err
			}
			if !enabled {
				text := fmt.Sprintf("Server %q disabled: its process is stopped and its tools are gone until it is enabled again.", a.ID)
				return structured(text, map[string]any{"name": a.ID, "enabled": false, "state": StateDisabled}, false), nil
			}
			return serverOutcome(h, h.awaitSettled(ctx, a.ID), "enabled"), nil
		},
	}, nil
}

// --- list_items -------------------------------------------------------

// ServerItem is one server as list_items reports it. No field carries a
// secret.
type ServerItem struct {
	Name         string `json:"name"`
	FriendlyName string `json:"friendly_name,omitempty"`
	Description  string `json:"description,omitempty"`
	Transport    string `json:"transport"`
	Enabled      bool   `json:"enabled"`
	State        State  `json:"state"`
	Tools        int    `json:"tools"`
	LastError    string `json:"last_error,omitempty"`
}

func prepareList(h *Host, args json.RawMessage) (hostCall, error) {
	var a struct {
		Type string `json:"type"`
	}
	if err := decodeArgs(args, &a, `"type"`); err != nil {
		return hostCall{}, err
	}
	if a.Type != "" && a.Type != "mcp" {
		return hostCall{}, fmt.Errorf(`field "type": %q is not a type of item this host has; the types are: "mcp"`, a.Type)
	}
	return hostCall{
		summary: "List the MCP servers",
		run: func(context.Context, *Host, Scope) (*Result, error) {
			items := []ServerItem{}
			var lines []string
			for _, st := range h.Status() {
				it := ServerItem{Name: st.Name, FriendlyName: st.FriendlyName, Description: st.Description,
					Transport: string(st.Transport), Enabled: st.Enabled, State: st.State, Tools: st.Tools, LastError: st.LastError}
				items = append(items, it)
				line := fmt.Sprintf("- %s (%s, %s): %s, %d tools", it.Name, it.Transport, enabledWord(it.Enabled), it.State, it.Tools)
				if it.LastError != "" {
					line += "; last error: " + it.LastError
				}
				lines = append(lines, line)
			}
			text := "No MCP servers."
			if len(lines) > 0 {
				text = "MCP servers:\n" + strings.Join(lines, "\n")
			}
			return structured(text, map[string]any{"items": items}, false), nil
		},
	}, nil
}

func enabledWord(on bool) string {
	if on {
		return "enabled"
	}
	return "disabled"
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
		case StateReady, StateBackoff, StateFailed, StateStopped, StateDisabled:
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
