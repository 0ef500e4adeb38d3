package mcpvisor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/hosttools"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// ConfigGroup is the reserved tool group of the host's own management tools
// (registering and toggling servers), for platforms that let a model manage
// its servers. No server may be named so.
const ConfigGroup = config.ReservedName

// Scope is who holds grants: a session (a root agent, Stack "") or one stack
// frame within a session (a sub-agent).
type Scope = persistence.Scope

// Session is the view of the host one agent has: the tool groups granted to
// its scope decide which tools it sees and may call. It is a small value,
// cheap to make for every request; its methods are safe for concurrent use.
//
// A root agent's grants (Stack "") last for the session, across host
// restarts, until End. A sub-agent's frame starts with no grants, whatever
// its session holds; its grants survive restarts and are deleted when the
// frame ends.
type Session struct {
	h     *Host
	scope Scope
}

// Session returns the view of session's root agent (stack "") or of one of
// its stack frames.
func (h *Host) Session(session, stack string) Session {
	return Session{h: h, scope: Scope{Session: session, Stack: stack}}
}

// Scope is the session and stack frame this view belongs to.
func (s Session) Scope() Scope { return s.scope }

func (s Session) check() error {
	if s.scope.Session == "" {
		return fmt.Errorf("%w: the session id is empty", ErrInvalidScope)
	}
	if strings.ContainsRune(s.scope.Session, 0) || strings.ContainsRune(s.scope.Stack, 0) {
		return fmt.Errorf("%w: a session or stack id holds a NUL byte", ErrInvalidScope)
	}
	return nil
}

// Activate grants tool groups (server names, or ConfigGroup) to this scope:
// their tools appear in Tools from the next call on. A name may also be
// one tool's, as Tools would list it (mcp__<server>__<tool>, or the bare
// name of a server with "prefix": false): that grants the one tool, held
// as a grant whose group is its namespaced name (ToolName with the
// server's own name for it), durable and ended as group grants are. It
// returns once the grants are durable. Groups already granted are left as
// they are; an unknown group or tool fails the whole call with
// ErrUnknownGroup.
func (s Session) Activate(ctx context.Context, groups ...string) error {
	_, err := s.activate(ctx, groups)
	return err
}

// activate is Activate, returning the grants' keys: the groups, and the
// namespaced names of the tools.
func (s Session) activate(ctx context.Context, names []string) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	keys, err := s.h.rt.GrantKeys(names)
	if err != nil {
		return nil, err
	}
	if err := s.h.grants.Grant(ctx, s.h.journal, s.scope, keys, time.Now()); err != nil {
		return nil, err
	}
	if r := s.h.replicating(ctx); r != nil {
		r.GrantsChanged(member.Grants{Scope: s.scope, Groups: s.Groups()})
	}
	return keys, nil
}

// End ends the scope: a stack frame's grants are deleted; ending a session
// (Stack "") deletes its grants and those of every frame in it. It returns
// once that is durable. Ending a scope with no grants is not an error.
func (s Session) End(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := s.h.grants.End(ctx, s.h.journal, s.scope); err != nil {
		return err
	}
	if r := s.h.replicating(ctx); r != nil {
		r.GrantsChanged(member.Grants{Scope: s.scope, Ended: true})
	}
	return nil
}

// Groups lists the groups granted to this scope, sorted, with its tool
// grants under their tools' namespaced names; the host's always-on groups
// are not included.
func (s Session) Groups() []string {
	return s.h.grants.Get(s.scope).Names()
}

// Tools lists the tools this scope may call: the host's own (activate_tools,
// and the config group's once granted; none with Options.NoHostTools), then
// those of the groups granted to it and of the host's always-on groups,
// and the tools granted one by one, in registration order, named as
// Host.Tools names them. It reads published snapshots and never waits on
// a server.
func (s Session) Tools() []Tool {
	set := s.h.grants.Get(s.scope)
	return s.h.rt.GrantedTools(s.h.hostToolsFor(set), set, s.h.isAlwaysOn)
}

// Servers lists the servers whose tools this scope may call (granted or
// always on, or one of whose tools is granted), in registration order,
// whatever their state.
func (s Session) Servers() []string {
	return s.h.rt.GrantedServers(s.h.grants.Get(s.scope), s.h.isAlwaysOn)
}

// Call calls a tool on behalf of this scope, as Host.Call does, by a name
// it is exposed under (mcp__<server>__<tool>, or its own name for a server
// with "prefix": false). A tool whose group is not granted (nor always on)
// fails with ErrNotGranted, which says which group to activate.
func (s Session) Call(ctx context.Context, tool string, args json.RawMessage) (*Result, error) {
	return s.call(ctx, tool, args, nil)
}

// CallWith is Call with options: progress, timeouts, detached tasks.
func (s Session) CallWith(ctx context.Context, tool string, args json.RawMessage, opts CallOptions) (*Result, error) {
	return s.call(ctx, tool, args, &opts)
}

func (s Session) call(ctx context.Context, tool string, args json.RawMessage, opts *CallOptions) (*Result, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.h.call(ctx, s.scope, tool, args, opts)
}

// Catalog renders the "MCP servers" block for this scope's system prompt:
// the enabled servers it may activate, with their descriptions, and the
// ones active (granted or always on), whose tools it can call, and the
// tools granted one by one. When the catalog is large (search_tools is
// listed: Options.SearchToolsOver) it says to search first.
func (s Session) Catalog() string {
	set := s.h.grants.Get(s.scope)
	return hosttools.Catalog(hosttools.CatalogInput{
		Servers:    s.h.rt.Status(),
		Active:     func(server string) bool { return set.Has(server) || s.h.isAlwaysOn(server) },
		Unprefixed: s.h.rt.IsUnprefixed,
		Tools:      set.Tools(),
		Search:     s.h.searchListed(),
	})
}
