package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// ErrUnknownGroup: a grant named neither a group (a server, or the
// host's config group) nor a tool whose server's tools are listed.
var ErrUnknownGroup = errors.New("unknown tool group")

// GrantSet is one scope's grants: the groups (server names, or the host's
// config group) and the tools granted one by one, under their namespaced
// names (mcp__<server>__<tool>), each with the time it was granted. A set
// Grants returns is immutable: it is shared by every reader of the scope
// until the next change replaces it.
type GrantSet map[string]time.Time

// Has reports whether name (a group, or a tool's namespaced name) is
// granted.
func (g GrantSet) Has(name string) bool {
	_, ok := g[name]
	return ok
}

// Names lists the grants, groups and tools alike, sorted.
func (g GrantSet) Names() []string {
	out := make([]string, 0, len(g))
	for name := range g {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// ToolServers returns the servers with a tool granted one by one; nil
// when there is none, so the common case (groups only) allocates nothing.
func (g GrantSet) ToolServers() map[string]bool {
	var out map[string]bool
	for key := range g {
		if server, _, ok := SplitToolName(key); ok {
			if out == nil {
				out = map[string]bool{}
			}
			out[server] = true
		}
	}
	return out
}

// Tools lists the tools granted one by one, sorted.
func (g GrantSet) Tools() []string {
	var out []string
	for key := range g {
		if _, _, ok := SplitToolName(key); ok {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// Grants holds every scope's grants for the call path, which reads them on
// every session call: Get loads one pointer and takes no lock. Changes go
// through Grant and End, which journal them and apply them once durable,
// in the journal's commit order, so the table and the store see concurrent
// grants and ends in the same order; each change copies the scope's set
// and publishes the copy. The zero value is an empty table, ready to use.
type Grants struct {
	mu     sync.Mutex // writers
	scopes sync.Map   // persistence.Scope → *atomic.Pointer[GrantSet]
}

// Get returns the scope's grants, nil when it holds none. The set must not
// be written.
func (t *Grants) Get(s persistence.Scope) GrantSet {
	if p, ok := t.scopes.Load(s); ok {
		return *p.(*atomic.Pointer[GrantSet]).Load()
	}
	return nil
}

// Grant grants names (groups, or tools' namespaced names) to scope s as of
// at, durably through j, and applies them to the table once committed.
// Names already granted keep the time they were first granted. It returns
// once the grants are durable, or with ctx's error (the grants may still
// be applied then, if their commit succeeds).
func (t *Grants) Grant(ctx context.Context, j *Journal, s persistence.Scope, names []string, at time.Time) error {
	ops := make([]persistence.Op, 0, len(names))
	for _, name := range names {
		ops = append(ops, persistence.PutGrant(persistence.GrantRecord{Scope: s, Group: name, Granted: at}))
	}
	return write(ctx, j, ops, func() { t.add(s, names, at) })
}

// End ends scope s, durably through j, then in the table: a stack frame's
// grants are deleted; ending a session (Stack "") deletes its grants and
// those of every frame in it. Ending a scope with no grants is not an
// error.
func (t *Grants) End(ctx context.Context, j *Journal, s persistence.Scope) error {
	return write(ctx, j, []persistence.Op{persistence.DeleteGrants(s)}, func() { t.end(s) })
}

// Load fills the table from the journal's grants, at start, before any
// reader: the records are not written again.
func (t *Grants) Load(recs []persistence.GrantRecord) {
	for _, r := range recs {
		t.add(r.Scope, []string{r.Group}, r.Granted)
	}
}

// write commits ops through j and, once they are durable, runs apply. The
// journal runs its callbacks in commit order, which is what keeps the
// table in the store's order.
func write(ctx context.Context, j *Journal, ops []persistence.Op, apply func()) error {
	if len(ops) == 0 {
		return nil
	}
	done := make(chan error, 1)
	j.WriteAsync(ops, func(err error) {
		if err == nil {
			apply()
		}
		done <- err
	})
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("grants: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// add publishes a copy of s's set with names added; a name already there
// keeps its time.
func (t *Grants) add(s persistence.Scope, names []string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.Get(s)
	next := make(GrantSet, len(old)+len(names))
	for g, when := range old {
		next[g] = when
	}
	for _, g := range names {
		if _, ok := next[g]; !ok {
			next[g] = at
		}
	}
	p, _ := t.scopes.LoadOrStore(s, new(atomic.Pointer[GrantSet]))
	p.(*atomic.Pointer[GrantSet]).Store(&next)
}

// end drops s's set, and for a session those of all its frames.
func (t *Grants) end(s persistence.Scope) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.Stack != "" {
		t.scopes.Delete(s)
		return
	}
	t.scopes.Range(func(k, _ any) bool {
		if k.(persistence.Scope).Session == s.Session {
			t.scopes.Delete(k)
		}
		return true
	})
}

// GrantableTool returns the namespaced name (with the server's own name
// for it) of the tool exposed as name by a server whose tools are listed,
// if there is one: the key a one-tool grant is held under, so that a
// grant made by a mapped or bare name matches the call's ToolName.
func (r *Runtime) GrantableTool(name string) (string, bool) {
	server, own, ok := r.ResolveTool(name)
	if !ok {
		return "", false
	}
	v, ok := r.ListedCatalogs()[server]
	if !ok {
		return "", false
	}
	if _, ok := v.Lookup(own); !ok {
		return "", false
	}
	return ToolName(server, own), true
}

// GrantKeys returns the keys the grants of names are held under, each
// once, in order: a group (a registered server, or the config group) as
// itself, a tool by a name it is exposed under as its namespaced name
// (GrantableTool; the host's own tools are granted by group only). A name
// that is neither fails the whole call with ErrUnknownGroup.
func (r *Runtime) GrantKeys(names []string) ([]string, error) {
	sts := r.Status()
	known := make([]string, 0, len(sts)+1)
	for _, st := range sts {
		known = append(known, st.Name)
	}
	known = append(known, config.ReservedName)
	var unknown, keys []string
	seen := map[string]bool{}
	for _, name := range names {
		key := name
		if !slices.Contains(known, name) {
			tool, ok := r.GrantableTool(name)
			if !ok {
				unknown = append(unknown, name)
				continue
			}
			key = tool
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		keys = append(keys, key)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%w: %s (known: %s; or a tool's full name, mcp__<server>__<tool>)", ErrUnknownGroup, quoteList(unknown), quoteList(known))
	}
	return keys, nil
}

// quoteList is names quoted, comma-separated.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// GrantedTools lists prefix (the host's own tools), then the tools a scope
// holding set may call: those of its granted servers and of the servers
// alwaysOn reports, and its tools granted one by one, in registration
// order (ToolsOf).
func (r *Runtime) GrantedTools(prefix []Tool, set GrantSet, alwaysOn func(server string) bool) []Tool {
	whole := func(server string) bool { return set.Has(server) || alwaysOn(server) }
	partly := set.ToolServers()
	tools := r.ToolsOf(prefix, func(server string) bool { return whole(server) || partly[server] })
	if partly == nil {
		return tools
	}
	// ToolsOf's slice is this call's own: filtering it in place is safe.
	return slices.DeleteFunc(tools, func(t Tool) bool {
		return partly[t.Server] && !whole(t.Server) && !set.Has(ToolName(t.Server, t.Tool))
	})
}

// GrantedServers lists the servers a scope holding set may call tools of
// (granted or alwaysOn, or one of whose tools is granted), in
// registration order, whatever their state.
func (r *Runtime) GrantedServers(set GrantSet, alwaysOn func(server string) bool) []string {
	partly := set.ToolServers()
	var out []string
	for _, st := range r.Status() {
		if set.Has(st.Name) || alwaysOn(st.Name) || partly[st.Name] {
			out = append(out, st.Name)
		}
	}
	return out
}
