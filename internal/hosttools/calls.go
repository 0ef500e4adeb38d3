package hosttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// The host tools' arguments, approval summaries and work, one section per
// tool. Their definitions are in definitions.go; approval and the run in
// run.go; search_tools in search.go.

// --- activate_tools ---------------------------------------------------

func activateDescription(ts *Toolset) string {
	var groups []string
	for _, st := range ts.rt.Status() {
		if st.Enabled {
			groups = append(groups, st.Name)
		}
	}
	desc := "Load the tools of MCP servers (tool groups) into this session; from the next step they are listed and callable as mcp__<group>__<tool>. " +
		"A full tool name (mcp__<server>__<tool>, as search_tools lists it) loads just that tool."
	if len(groups) > 0 {
		desc += " Groups: " + strings.Join(groups, ", ") + "."
	}
	return desc
}

func prepareActivate(ts *Toolset, args json.RawMessage) (prepared, error) {
	var a struct {
		Groups []string `json:"groups"`
	}
	if err := decodeArgs(args, &a, `"groups"`); err != nil {
		return prepared{}, err
	}
	if len(a.Groups) == 0 {
		return prepared{}, errors.New(`field "groups": list at least one group (a server name, or "config") or tool (mcp__<server>__<tool>)`)
	}
	return prepared{
		summary: "Activate " + strings.Join(a.Groups, ", "),
		run: func(ctx context.Context, scope persistence.Scope) (json.RawMessage, error) {
			// Not cut short by the caller: a grant whose wait was abandoned
			// would land anyway, unannounced.
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grantWriteTimeout)
			defer cancel()
			keys, err := ts.host.Grant(wctx, scope, a.Groups)
			if err != nil {
				return nil, err
			}
			return ts.activateOutcome(ctx, scope, keys), nil
		},
	}, nil
}

// activateWait bounds how long activate_tools waits for the servers it
// activated to come up: a server still starting (a cold gateway, an npx
// download) answers within it or is reported as not ready yet.
const activateWait = 30 * time.Second

// activateOutcome answers an activation once every activated server is
// ready or has failed its start (bounded by activateWait), naming the
// tools that became callable and the servers that did not come up. keys
// are the grants made: groups, and namespaced tool names.
func (ts *Toolset) activateOutcome(ctx context.Context, scope persistence.Scope, keys []string) json.RawMessage {
	wctx, cancel := context.WithTimeout(ctx, activateWait)
	defer cancel()
	activated := map[string]bool{}
	waited := map[string]bool{}
	var notReady []map[string]any
	var lines []string
	for _, key := range keys {
		activated[key] = true
		g := key
		if server, _, ok := actors.SplitToolName(key); ok {
			g = server
		}
		if waited[g] {
			continue
		}
		waited[g] = true
		if _, ok := ts.rt.ServerStatus(g); !ok {
			continue // the config group: the host's own tools, always there
		}
		if st := ts.awaitSettled(wctx, g); st.State != actors.StateReady {
			why := st.LastError
			if why == "" {
				why = "it is still starting"
			}
			notReady = append(notReady, map[string]any{"name": g, "state": st.State, "error": why})
			lines = append(lines, fmt.Sprintf("Server %q is not ready (%s): %s.", g, st.State, why))
		}
	}
	tools, groups := ts.host.Granted(scope)
	var names []string
	for _, t := range tools {
		ht := lookup(t.Name)
		if ht == nil && (activated[t.Server] || activated[actors.ToolName(t.Server, t.Tool)]) || activated[ConfigGroup] && ht != nil && ht.config {
			names = append(names, t.Name)
		}
	}
	active := strings.Join(groups, ", ")
	text := fmt.Sprintf("Active groups: %s. Now callable: %s.", active, strings.Join(names, ", "))
	if len(names) == 0 {
		text = fmt.Sprintf("Active groups: %s. No tools of those groups are callable yet.", active)
	}
	if len(lines) > 0 {
		text += " " + strings.Join(lines, " ") + " Their tools are listed once they are ready."
	}
	if scope.Stack != "" {
		text += " They last until stack frame " + scope.Stack + " ends."
	}
	v := map[string]any{"groups": groups, "tools": names}
	if len(notReady) > 0 {
		v["notReady"] = notReady
	}
	return structured(text, v, false)
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

func prepareRegister(ts *Toolset, args json.RawMessage) (prepared, error) {
	var a registerArgs
	if err := decodeArgs(args, &a, registerFields); err != nil {
		return prepared{}, err
	}
	if err := a.check(); err != nil {
		return prepared{}, err
	}
	sc := config.Server{Name: a.Name, Type: a.Transport, Command: a.Command, Args: a.Args, Env: a.Env,
		URL: a.URL, APIKey: a.APIKey, Headers: a.Headers, Description: a.Description,
		FriendlyName: a.FriendlyName, Enabled: true}
	if err := sc.Validate(); err != nil {
		return prepared{}, errors.New(registerFieldNames.Replace(strings.TrimPrefix(err.Error(), "config: ")))
	}
	hc := prepared{server: a.Name, summary: a.summary()}
	if st, ok := ts.rt.ServerStatus(a.Name); ok {
		// The person approving must know an existing server is replaced.
		hc.summary = fmt.Sprintf("%s, replacing the %s server of that name (%s)", hc.summary, st.Transport, st.State)
	}
	if a.Transport == "stdio" {
		hc.command = append([]string{a.Command}, a.Args...)
	}
	hc.run = func(ctx context.Context, _ persistence.Scope) (json.RawMessage, error) {
		if err := ts.host.Register(ctx, sc); err != nil {
			return nil, err
		}
		st := ts.awaitSettled(ctx, a.Name)
		return ts.serverOutcome(st, "registered"), nil
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
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		refs = append(refs, fieldValue{"env." + k, a.Env[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(a.Headers)) {
		refs = append(refs, fieldValue{"headers." + k, a.Headers[k]})
	}
	for _, f := range refs {
		if strings.Contains(f.value, "${") {
			return fmt.Errorf("field %q: ${...} references to the host's environment are not taken from a tool call; give the value itself", f.field)
		}
	}
	return nil
}

// fieldValue is a field's value, labelled as errors name the field.
type fieldValue struct{ field, value string }

// summary describes the registration for a person: everything but secret
// values.
func (a *registerArgs) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Register %s server %q: ", a.Transport, a.Name)
	if a.Transport == "stdio" {
		b.WriteString("run " + shellQuote(append([]string{a.Command}, a.Args...)))
		if len(a.Env) > 0 {
			fmt.Fprintf(&b, " with env %s", strings.Join(slices.Sorted(maps.Keys(a.Env)), ", "))
		}
	} else {
		b.WriteString("connect to " + a.URL)
		if a.APIKey != "" {
			b.WriteString(" with an API key")
		}
		if len(a.Headers) > 0 {
			fmt.Fprintf(&b, " with headers %s", strings.Join(slices.Sorted(maps.Keys(a.Headers)), ", "))
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

func prepareDelete(ts *Toolset, args json.RawMessage) (prepared, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := decodeArgs(args, &a, `"name"`); err != nil {
		return prepared{}, err
	}
	if err := ts.knownServer(a.Name); err != nil {
		return prepared{}, err
	}
	// A server of the config file comes back at the next start: the file,
	// not the registry, is where it is defined.
	fromFile, err := ts.host.InConfigFile(a.Name)
	if err != nil {
		return prepared{}, err
	}
	summary := fmt.Sprintf("Delete server %q for good: its configuration is discarded and its process stopped", a.Name)
	if fromFile {
		summary = fmt.Sprintf("Delete server %q: its process is stopped; it is defined in the config file, so it returns at the next start", a.Name)
	}
	return prepared{
		server:  a.Name,
		summary: summary,
		run: func(ctx context.Context, _ persistence.Scope) (json.RawMessage, error) {
			if err := ts.host.Unregister(ctx, a.Name); err != nil {
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

func prepareToggle(ts *Toolset, args json.RawMessage) (prepared, error) {
	var a struct {
		Kind    string `json:"kind"`
		ID      string `json:"id"`
		Enabled *bool  `json:"enabled"`
	}
	if err := decodeArgs(args, &a, `"kind", "id", "enabled"`); err != nil {
		return prepared{}, err
	}
	switch {
	case a.Kind != "mcp":
		return prepared{}, fmt.Errorf(`field "kind": %q is not a kind of item this host has; the kinds are: "mcp"`, a.Kind)
	case a.Enabled == nil:
		return prepared{}, errors.New(`field "enabled": required (true or false)`)
	}
	if err := ts.knownServer(a.ID); err != nil {
		return prepared{}, err
	}
	enabled := *a.Enabled
	verb := "Disable"
	if enabled {
		verb = "Enable"
	}
	return prepared{
		server:  a.ID,
		summary: fmt.Sprintf("%s server %q", verb, a.ID),
		run: func(ctx context.Context, _ persistence.Scope) (json.RawMessage, error) {
			if err := ts.host.SetEnabled(ctx, a.ID, enabled); err != nil {
				return nil, err
			}
			if !enabled {
				text := fmt.Sprintf("Server %q disabled: its process is stopped and its tools are gone until it is enabled again.", a.ID)
				return structured(text, map[string]any{"name": a.ID, "enabled": false, "state": actors.StateDisabled}, false), nil
			}
			return ts.serverOutcome(ts.awaitSettled(ctx, a.ID), "enabled"), nil
		},
	}, nil
}

// --- list_items -------------------------------------------------------

func prepareList(ts *Toolset, args json.RawMessage) (prepared, error) {
	var a struct {
		Type string `json:"type"`
	}
	if err := decodeArgs(args, &a, `"type"`); err != nil {
		return prepared{}, err
	}
	if a.Type != "" && a.Type != "mcp" {
		return prepared{}, fmt.Errorf(`field "type": %q is not a type of item this host has; the types are: "mcp"`, a.Type)
	}
	return prepared{
		summary: "List the MCP servers",
		run: func(context.Context, persistence.Scope) (json.RawMessage, error) {
			items := []actors.ServerItem{}
			var lines []string
			for _, st := range ts.host.Status() {
				it := actors.ServerItem{Name: st.Name, FriendlyName: st.FriendlyName, Description: st.Description,
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
