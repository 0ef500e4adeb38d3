package actors

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Exposure: the names tools are listed and called by. Every tool has its
// namespaced name, mcp__<server>__<tool>, which always reaches it; with the
// server's own name for the tool it is its identity in the journal. A name
// model APIs would refuse (characters outside [a-zA-Z0-9_-], or longer
// than Options.MaxToolName) is exposed mapped (NameMap, naming.go); the
// mapped name and the own one both reach the tool. A server whose spec is
// Unprefixed exposes its tools under their own ("bare") names, mapped the
// same way, by these rules:
//
//   - a bare name that reads as mcp__<x>__<y>, or that the host keeps for
//     its own tools (Options.HostTool), is never exposed;
//   - among the enabled unprefixed servers, in registration order, the
//     first whose catalog (live or last known) holds a name owns it; the
//     tools of that name of the servers after it are hidden from listings,
//     and their statuses carry a warning naming both servers.
//
// Ownership follows registration order, not start-up order, so a restart
// or a slow server never moves a name from one server to another; only
// enabling, disabling, registering or removing a server does, and the host
// refuses those when the tools they would expose twice are known
// (CheckExposure). The rules are applied where names are read (Tools,
// ToolsOf, ResolveTool) from published snapshots, so listings and routing
// agree without a shared table; server actors only recompute their own
// warnings, on exposureChanged.

// exposedName is the name spec's server lists tool (its own name) under:
// the bare name for an unprefixed server, when that may be exposed bare,
// else the namespaced one, as names maps them.
func exposedName(spec *ServerSpec, names *NameMap, tool string) string {
	if spec.Unprefixed {
		if bare := names.Bare(tool); !namespaced(bare) {
			return bare
		}
	}
	return names.Namespaced(tool)
}

// namespaced reports whether name reads as mcp__<server>__<tool>.
func namespaced(name string) bool {
	_, _, ok := SplitToolName(name)
	return ok
}

// bareReserved reports why name may not be exposed bare, or "".
func (r *Runtime) bareReserved(name string) string {
	switch {
	case namespaced(name):
		return "it reads as a namespaced name"
	case r.hostTool != nil && r.hostTool(name):
		return "it is the name of one of the host's own tools"
	}
	return ""
}

// claims reports whether e's tools take part in bare naming: a listed
// (not per-user), enabled, unprefixed server.
func claims(e *serverEntry) bool {
	if !e.spec.Unprefixed || e.spec.Hidden {
		return false
	}
	st := e.status.Load()
	return st != nil && st.Enabled
}

// bareOwner returns the server that exposes name bare, and its tool, or
// nil.
func (r *Runtime) bareOwner(s *snapshot, name string) (*serverEntry, *Tool) {
	if r.bareReserved(name) != "" {
		return nil, nil
	}
	for _, e := range s.order {
		if !claims(e) {
			continue
		}
		if t, ok := e.catalog.Load().lookupBare(name); ok {
			return e, t
		}
	}
	return nil, nil
}

// earlierOwner returns the server registered before server that exposes
// name bare, or nil: only those hide server's tool of that bare name.
func (r *Runtime) earlierOwner(s *snapshot, server, name string) *serverEntry {
	for _, e := range s.order {
		if e.name == server {
			return nil
		}
		if claims(e) {
			if _, ok := e.catalog.Load().lookupBare(name); ok {
				return e
			}
		}
	}
	return nil
}

// bareOwners maps every name exposed bare to its server; nil when no
// server is unprefixed, as is usual.
func (r *Runtime) bareOwners(s *snapshot) map[string]string {
	var owners map[string]string
	for _, e := range s.order {
		if !claims(e) {
			continue
		}
		cat := e.catalog.Load()
		if cat == nil {
			continue
		}
		if owners == nil {
			owners = map[string]string{}
		}
		for i := range cat.tools {
			name := cat.naming.Bare(cat.tools[i].Tool)
			if _, taken := owners[name]; !taken && r.bareReserved(name) == "" {
				owners[name] = e.name
			}
		}
	}
	return owners
}

// listed reports whether e lists its tool t, given the bare owners. The
// name an unprefixed server lists a tool by is its bare name whenever
// that may be owned (exposedName).
func listed(e *serverEntry, t *Tool, owners map[string]string) bool {
	if !e.spec.Unprefixed {
		return true
	}
	return owners[t.Name] == e.name
}

// ResolveTool returns the server of an exposed tool name and the server's
// own name for the tool: mcp__<server>__<tool> of a registered server, with
// the name the tool is exposed by or its own (a tool part the server does
// not list, or not yet, is taken as its own name), or a name an unprefixed
// server exposes bare. ok is false for any other name. It never waits on a
// server; a bare name, and a mapped one, resolve once the server's tools
// are known (listed, or its last known catalog).
func (r *Runtime) ResolveTool(name string) (server, tool string, ok bool) {
	snap := r.snap.Load()
	if server, tool, ok := SplitToolName(name); ok {
		e := snap.byName[server]
		if e == nil || e.spec.Hidden {
			return "", "", false
		}
		if t, ok := e.catalog.Load().resolve(tool); ok {
			return server, t.Tool, true
		}
		return server, tool, true
	}
	if e, t := r.bareOwner(snap, name); e != nil {
		return e.name, t.Tool, true
	}
	return "", "", false
}

// Unprefixed lists the enabled servers that expose their names bare, in
// registration order: the order in which they claim names.
func (r *Runtime) Unprefixed() []string {
	var out []string
	for _, e := range r.snap.Load().order {
		if claims(e) {
			out = append(out, e.name)
		}
	}
	return out
}

// IsAlwaysOn reports whether server is registered with AlwaysOn.
func (r *Runtime) IsAlwaysOn(server string) bool {
	e := r.snap.Load().byName[server]
	return e != nil && e.spec.AlwaysOn
}

// IsUnprefixed reports whether server is registered and exposes its names
// bare (enabled or not).
func (r *Runtime) IsUnprefixed(server string) bool {
	e := r.snap.Load().byName[server]
	return e != nil && e.spec.Unprefixed && !e.spec.Hidden
}

// CheckExposure reports, joined and each wrapping ErrNameCollision, the
// names specs would expose that they may not, were they registered (or
// enabled): a tool name that two enabled unprefixed servers would both
// expose bare (two of specs, or one of specs and a registered server not
// among them), or one that may not be exposed bare at all (a host tool's,
// or one that reads as mcp__<x>__<y>). A spec's tools are the catalog of
// the registered server of its name, else its LastCatalog, narrowed by its
// IncludeTools and ExcludeTools; a server whose tools are not known yet is
// not checked here (once it lists them, a collision hides the later
// server's tool). It never waits on a server.
func (r *Runtime) CheckExposure(specs ...ServerSpec) error {
	snap := r.snap.Load()
	replaced := make(map[string]bool, len(specs))
	for i := range specs {
		replaced[specs[i].Name] = true
	}
	owners := map[string]string{}
	for _, e := range snap.order {
		if !claims(e) || replaced[e.name] {
			continue
		}
		if cat := e.catalog.Load(); cat != nil {
			for i := range cat.tools {
				if name := cat.naming.Bare(cat.tools[i].Tool); owners[name] == "" {
					owners[name] = e.name
				}
			}
		}
	}
	var errs []error
	for i := range specs {
		spec := &specs[i]
		if !spec.Unprefixed || spec.Hidden || !spec.Enabled {
			continue
		}
		tools := spec.LastCatalog
		if e := snap.byName[spec.Name]; e != nil {
			if cat := e.catalog.Load(); cat != nil {
				tools = cat.tools
			}
		}
		var own []string
		for _, t := range tools {
			if len(spec.IncludeTools) > 0 && !slices.Contains(spec.IncludeTools, t.Tool) || slices.Contains(spec.ExcludeTools, t.Tool) {
				continue
			}
			own = append(own, t.Tool)
		}
		names := MapNames(spec.Name, own, r.maxToolName)
		for _, tool := range own {
			name := names.Bare(tool)
			if why := r.bareReserved(name); why != "" {
				errs = append(errs, fmt.Errorf("%w: server %q: tool %q cannot be exposed by its own name%s: %s (set \"prefix\": true, or leave the tool out with \"excludeTools\")",
					ErrNameCollision, spec.Name, tool, exposedAs(tool, name), why))
				continue
			}
			switch other := owners[name]; other {
			case "":
				owners[name] = spec.Name
			case spec.Name:
			default:
				errs = append(errs, fmt.Errorf("%w: server %q: tool %q is also exposed by its own name%s by server %q (set \"prefix\": true on one of them, or leave the tool out with \"excludeTools\")",
					ErrNameCollision, spec.Name, tool, exposedAs(tool, name), other))
			}
		}
	}
	return errors.Join(errs...)
}

// CheckEnable is CheckExposure for enabling the registered server name;
// nil for a server the runtime does not know.
func (r *Runtime) CheckEnable(name string) error {
	e := r.snap.Load().byName[name]
	if e == nil {
		return nil
	}
	spec := e.spec
	spec.Enabled = true
	return r.CheckExposure(spec)
}

// notifyExposure tells the actor of every unprefixed server but except
// that the names others expose may have changed.
func (r *Runtime) notifyExposure(except *serverEntry) {
	for _, e := range r.snap.Load().order {
		if e != except && e.spec.Unprefixed && !e.spec.Hidden {
			r.send(e.pid, &exposureChanged{})
		}
	}
}

// exposureChanged asks an unprefixed server's actor to check again which
// of its tools another server's hide.
type exposureChanged struct{}

// checkExposure recomputes the server's exposure warnings and publishes
// them when they changed; it reports whether they did. A new warning is
// logged once.
func (a *serverActor) checkExposure() bool {
	ws := a.exposureWarnings()
	if slices.Equal(ws, a.exposure) {
		return false
	}
	for _, w := range ws {
		if !slices.Contains(a.exposure, w) {
			a.slog.Warn(w)
			a.logLifecycle("warning: %s", w)
		}
	}
	a.exposure = ws
	return true
}

// onExposureChanged handles another server's change: the server's own
// listing may have changed with its warnings.
func (a *serverActor) onExposureChanged() {
	if a.stopErr == nil && a.checkExposure() {
		a.publish()
		a.rt.emit(Event{Time: time.Now(), Server: a.spec.Name, Kind: EventTools})
	}
}

// exposedAs says which name own is exposed by when that is not own.
func exposedAs(own, name string) string {
	if own == name {
		return ""
	}
	return fmt.Sprintf(" (%s)", name)
}

// exposureWarnings says, for each of the server's tools not exposed by its
// own (bare) name, why, naming the server that owns the name.
func (a *serverActor) exposureWarnings() []string {
	if !a.spec.Unprefixed || a.spec.Hidden || !a.spec.Enabled {
		return nil
	}
	cat := a.entry.catalog.Load()
	if cat == nil {
		return nil
	}
	snap := a.rt.snap.Load()
	var ws []string
	for i := range cat.tools {
		own := cat.tools[i].Tool
		name := cat.naming.Bare(own)
		full := cat.naming.Namespaced(own)
		if why := a.rt.bareReserved(name); why != "" {
			ws = append(ws, fmt.Sprintf("tool %q is not exposed by its own name%s: %s; call it as %s", own, exposedAs(own, name), why, full))
			continue
		}
		if e := a.rt.earlierOwner(snap, a.spec.Name, name); e != nil {
			ws = append(ws, fmt.Sprintf("tool %q is hidden: server %q, registered earlier, exposes a tool of that name%s without prefix too; call this one as %s", own, e.name, exposedAs(own, name), full))
		}
	}
	return ws
}
