package mcpvisor

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/hosttools"
	"github.com/mcpvisor/mcpvisor/internal/toolsearch"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/pipeline"
)

// The host's own tools, for models that manage their servers. They are not
// namespaced. activate_tools is in every session's list (unless
// Options.NoHostTools), and search_tools with it once the catalog is large
// (Options.SearchToolsOver); the others form ConfigGroup, listed and
// callable once a session activates "config". Their machinery is in
// internal/hosttools.
const (
	ToolActivate = "activate_tools" // {groups: [...]}: grant tool groups, or single tools, to the calling scope
	ToolSearch   = "search_tools"   // {query, limit}: rank the tools the calling scope may activate
	ToolRegister = "register_mcp"   // add or replace a server, live
	ToolDelete   = "delete_mcp"     // remove a server for good
	ToolToggle   = "toggle_item"    // {kind: "mcp", id, enabled}: enable or disable a server, live
	ToolList     = "list_items"     // {type: "mcp"}: every server and its state
)

// DefaultSearchToolsOver is the catalog size (tools of the enabled
// servers) past which search_tools is listed. Forty tool definitions are
// some 6,000–10,000 tokens: about where activating a whole server to find
// one tool starts to cost a model more than a search round trip, and
// where the table of servers stops telling it which server holds what.
const DefaultSearchToolsOver = hosttools.DefaultSearchToolsOver

// ServerItem is one server as list_items reports it.
type ServerItem = actors.ServerItem

// IsHostTool reports whether name is one of the host's own tools.
func IsHostTool(name string) bool { return hosttools.Is(name) }

// HostTools lists the host's own tools: activate_tools, search_tools, then
// the config group's. Empty with Options.NoHostTools.
func (h *Host) HostTools() []Tool {
	if h.opts.NoHostTools {
		return nil
	}
	return slices.Clone(h.hostTools.All())
}

// hostToolsFor lists the host tools a scope holding set sees. The slice is
// shared: read it, never write it.
func (h *Host) hostToolsFor(set actors.GrantSet) []Tool {
	if h.opts.NoHostTools {
		return nil
	}
	return h.hostTools.Listed(set.Has(ConfigGroup) || h.isAlwaysOn(ConfigGroup))
}

// searchListed reports whether sessions are shown search_tools: the
// catalog is large (Options.SearchToolsOver).
func (h *Host) searchListed() bool {
	return !h.opts.NoHostTools && h.hostTools.SearchListed()
}

// hostToolStage answers the host's own tools (unless Options.NoHostTools):
// their calls never reach a server.
func (h *Host) hostToolStage(next CallFunc) CallFunc {
	if h.opts.NoHostTools {
		return next
	}
	return func(ctx context.Context, c *Call) (*Result, error) {
		if !hosttools.Is(c.Tool) || !c.ToolCall() {
			return next(ctx, c)
		}
		raw, err := h.hostTools.Run(ctx, hosttools.Call{Scope: c.Scope, Tool: c.Tool, Arguments: c.Arguments,
			Approve: hosttools.Approver(c.Options.Approve), Timeout: c.Options.Timeout, Waiting: c.Waiting})
		if err != nil {
			return nil, err
		}
		return pipeline.DecodeResult(raw)
	}
}

// newHostTools serves the host's tools for h, once its runtime is up.
func (h *Host) newHostTools() *hosttools.Toolset {
	var inbox hosttools.Approver
	if h.opts.ApprovalInbox {
		inbox = h.approvals.Decide
	}
	var emb toolsearch.Embedder // nil, not a nil Embedder in a non-nil interface
	if h.opts.Embedder != nil {
		emb = h.opts.Embedder
	}
	return hosttools.New(hosttools.Options{Runtime: h.rt, Host: hostToolsHost{Host: h},
		SearchToolsOver: h.opts.SearchToolsOver, Approve: hosttools.Approver(h.opts.Approve), Inbox: inbox,
		Embedder: emb, EmbedderWeight: h.opts.EmbedderWeight, Logger: h.opts.Logger})
}

// hostToolsHost is the host as its tools use it (hosttools.Host): its
// Status, Register, Unregister and SetEnabled, and these.
type hostToolsHost struct{ *Host }

func (a hostToolsHost) InConfigFile(name string) (bool, error) {
	rec, _, err := a.reg.Row(name)
	return rec.Origin == persistence.OriginConfig, err
}

func (a hostToolsHost) Grant(ctx context.Context, scope Scope, names []string) ([]string, error) {
	return a.Session(scope.Session, scope.Stack).activate(ctx, names)
}

func (a hostToolsHost) Granted(scope Scope) ([]Tool, []string) {
	s := a.Session(scope.Session, scope.Stack)
	return s.Tools(), s.Groups()
}

func (a hostToolsHost) Active(scope Scope, server, name string) bool {
	set := a.grants.Get(scope)
	return set.Has(server) || a.isAlwaysOn(server) || set.Has(name)
}

func (a hostToolsHost) RecordApproval(server string, params json.RawMessage) {
	a.journal.Ingest(server, persistence.AppendEvent(persistence.EventRecord{
		Server: server, Method: EventMethodApproval, Params: persistence.RawJSON(params), Received: time.Now(),
	}))
}
