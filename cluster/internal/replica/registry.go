package replica

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/internal/secrets"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// The registry across a cluster: a server registered, unregistered,
// enabled or disabled at run time on one member (Register, Unregister,
// SetEnabled: the API, the host tools, the CLI through a sidecar) is the
// same on every member. Each member keeps, per server name, the last such
// change it knows (registryEntry, last writer wins by a hybrid clock, the
// member's address breaking ties), publishes them with its servers by
// gossip, and applies a newer one it receives from any member as if it
// were made there: journaled, so each member's journal is its durable copy.
// A member that joins later learns them from the gossip of any member that
// has them, so a change outlives the member that made it. The servers of
// the configuration file are the same file on every member, and are not
// in it unless changed at run time.
//
// What crosses by gossip holds no secret: a registration is published
// sealed, its secret values (as the journal seals them: apiKey, header
// and env values, a URL's user information and query, the OAuth
// secrets) replaced by references, and a member that takes a change
// asks a member for it directly, over the member transport, rather than
// trusting the gossip: the member that made it, else any that took it,
// answers with the change and the values of its references, or refuses
// a change it does not hold (vouch.go). A registration that no approval
// gate allowed where it was made waits for this member's (gate.go).

// stamp orders the changes to one entry of the shared state.
type stamp struct {
	Version int64  `json:"version"` // hybrid clock: Unix nanoseconds, above any seen
	By      string `json:"by"`      // the member that made it
}

// newer reports whether s wins over old.
func (s stamp) newer(old stamp) bool {
	return s.Version > old.Version || s.Version == old.Version && s.By > old.By
}

func (s stamp) stamped() stamp { return s }

// nextStamp stamps a change made here, under r.mu.
func (r *Replica) nextStamp() stamp {
	r.clock = max(time.Now().UnixNano(), r.clock+1)
	s := stamp{Version: r.clock}
	if n := r.n(); n != nil {
		s.By = n.Self()
	}
	return s
}

// keyed is one entry of a part of the shared state, under its key.
type keyed[E interface{ stamped() stamp }] struct {
	key string
	e   E
}

// mergeNewer copies into local the entries that win over its own, and
// returns them, oldest change first.
func mergeNewer[E interface{ stamped() stamp }](r *Replica, local, entries map[string]E) []keyed[E] {
	var todo []keyed[E]
	r.mu.Lock()
	for k, e := range entries {
		if old, ok := local[k]; !ok || e.stamped().newer(old.stamped()) {
			local[k] = e
			r.clock = max(r.clock, e.stamped().Version)
			todo = append(todo, keyed[E]{k, e})
		}
	}
	r.mu.Unlock()
	slices.SortFunc(todo, func(a, b keyed[E]) int { return cmp.Compare(a.e.stamped().Version, b.e.stamped().Version) })
	return todo
}

// registryEntry is the last change to one server at run time.
type registryEntry struct {
	// Config is the ServerConfig, when registered at run time, sealed:
	// its secret values are references to the secret store (secrets.Seal),
	// whose values a member fetches from one that holds them (vouch.go).
	Config  json.RawMessage `json:"config,omitempty"`
	Enabled bool            `json:"enabled"`
	Deleted bool            `json:"deleted,omitempty"`
	// Origin is who made the registration (Config), kept by the changes
	// that only enable or disable it.
	Origin member.Provenance `json:"origin,omitzero"`
	stamp
}

// recordRegistry notes a change made on this member.
func (r *Replica) recordRegistry(name string, e registryEntry) {
	r.mu.Lock()
	e.stamp = r.nextStamp()
	if e.Config == nil && !e.Deleted {
		// Enabling keeps a run-time registration's config, and who made it.
		e.Config, e.Origin = r.registry[name].Config, r.registry[name].Origin
	}
	r.registry[name] = e
	r.decidedHere(name, e)
	r.mu.Unlock()
	r.republish()
	r.push(sharedView{Registry: map[string]registryEntry{name: e}})
}

// ServerChanged records a change to a server made on this member
// (Register, Unregister, SetEnabled), which it replicates. A
// registration's secret values stay here: the entry refers to them.
func (r *Replica) ServerChanged(c member.ServerChange) {
	switch {
	case c.Deleted:
		r.forgetPins(c.Name)
		r.recordRegistry(c.Name, registryEntry{Deleted: true})
	case c.Config != nil:
		sealed, _ := secrets.Seal(*c.Config)
		b, err := json.Marshal(sealed)
		if err != nil {
			return
		}
		r.recordRegistry(c.Name, registryEntry{Config: b, Enabled: c.Enabled, Origin: c.Provenance})
	default:
		r.recordRegistry(c.Name, registryEntry{Enabled: c.Enabled})
	}
}

// mergeRegistry applies the entries of a member's view that are newer than
// this member's, in a stable order: each as a member that holds it vouches
// for it (vouch.go), never as the view says, and not at all when none
// does.
func (r *Replica) mergeRegistry(entries map[string]registryEntry) {
	todo := r.newerRegistry(entries)
	if len(todo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(r.bg, 30*time.Second)
	defer cancel()
	merged := false
	for _, c := range todo {
		v, err := r.vouch(ctx, c.key, c.e)
		if err != nil {
			r.log.Warn("cluster: refusing a registry change no member vouches for", "server", c.key, "by", c.e.By, "error", err)
			r.retryVouch(c.key, c.e, err)
			continue
		}
		e := v.Entry
		r.mu.Lock()
		delete(r.retries, vouchQuery{Server: c.key, stamp: c.e.stamp})
		if old, ok := r.registry[c.key]; ok && !e.newer(old.stamp) {
			r.mu.Unlock()
			continue // a newer change was made or merged meanwhile
		}
		r.registry[c.key] = e
		r.clock = max(r.clock, e.Version)
		r.mu.Unlock()
		merged = true
		if err := r.apply(ctx, c.key, e, v.Secrets); err != nil {
			r.log.Warn("cluster: applying another member's registry change", "server", c.key, "by", e.By, "error", err)
		}
		// The member that runs it may have published its new state
		// before this change arrived (the two are gossiped apart).
		if owner := r.Placement(c.key, r.rt.NodeLabel(c.key)); owner != "" && owner != unplaced {
			r.showView(c.key, owner)
		}
	}
	if merged {
		r.republish()
	}
}

// newerRegistry are the entries that win over this member's, oldest
// change first; they are not taken yet.
func (r *Replica) newerRegistry(entries map[string]registryEntry) []keyed[registryEntry] {
	var todo []keyed[registryEntry]
	r.mu.Lock()
	for k, e := range entries {
		if old, ok := r.registry[k]; !ok || e.newer(old.stamp) {
			todo = append(todo, keyed[registryEntry]{k, e})
		}
	}
	r.mu.Unlock()
	slices.SortFunc(todo, func(a, b keyed[registryEntry]) int { return cmp.Compare(a.e.Version, b.e.Version) })
	return todo
}

// apply makes one change here as the member that made it did, with the
// values of the registration's secrets; a registration this member's
// approval gate must decide first is made disabled, and held (gate.go).
func (r *Replica) apply(ctx context.Context, name string, e registryEntry, values map[string]string) error {
	c := member.ServerChange{Name: name, Enabled: e.Enabled, Deleted: e.Deleted, Provenance: e.Origin}
	if !e.Deleted && e.Config != nil {
		var sc config.Server
		if err := json.Unmarshal(e.Config, &sc); err != nil {
			return err
		}
		sc.Name, sc.Enabled = name, e.Enabled
		c.Config, c.Secrets = &sc, values
		if r.hold(name, e, sc) {
			c.Enabled, sc.Enabled = false, false
		}
	} else {
		r.release(name)
	}
	if err := r.host.ApplyServer(ctx, c); err != nil {
		return err
	}
	if e.Deleted {
		r.forgetPins(name) // as the journal forgot them
	}
	return nil
}

// sharedSnapshot is the shared state to publish, if it changed since it
// was last published.
func (r *Replica) sharedSnapshot() (sharedView, bool) {
	if !r.shared.Swap(false) {
		return sharedView{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return sharedView{Registry: maps.Clone(r.registry), Grants: maps.Clone(r.grants), Pins: maps.Clone(r.pins)}, true
}

// mergeLoop merges the shared state the others publish (by gossip) or
// push (by tell), one at a time: two changes to one entry are applied in
// the order they won. It also enables the registrations allowed at this
// member's gate (gate.go), between them.
func (r *Replica) mergeLoop() {
	for {
		select {
		case sv := <-r.merges:
			r.mergeRegistry(sv.Registry)
			r.mergeGrants(sv.Grants)
			r.mergePins(sv.Pins)
		case server := <-r.allowed:
			r.enableAllowed(server)
		case <-r.bg.Done():
			return
		}
	}
}

// push tells every other member of a change made here at once, ahead of
// the gossip that carries it to any member that misses it (a member that
// joins later, one this message did not reach): a change is on the others
// within a hop rather than a few gossip rounds, and is lost with this
// member only if it dies before either.
func (r *Replica) push(sv sharedView) {
	b, err := json.Marshal(tell{Shared: &sv})
	if err != nil {
		return
	}
	n := r.n()
	if n == nil {
		return
	}
	for _, m := range n.Members() {
		if m != n.Self() {
			n.Tell(m, b)
		}
	}
}

// republish has the publish loop publish the shared state.
func (r *Replica) republish() {
	r.shared.Store(true)
	r.wakePublish()
}

// wakePublish wakes the publish loop.
func (r *Replica) wakePublish() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Grants across a cluster: a session's grants (Session.Activate, End) are
// the same on every member, so a client whose requests a load balancer
// spreads over the members finds its tools on each. Each member keeps,
// per scope, the last change it knows (the scope's whole set of groups, or
// its end), by the same clock as the registry, and applies a newer one as
// if the session had acted there: journaled.

// grantEntry is a scope's grants after its last change.
type grantEntry struct {
	Session string   `json:"session"`
	Stack   string   `json:"stack,omitempty"`
	Groups  []string `json:"groups,omitempty"`
	Ended   bool     `json:"ended,omitempty"`
	stamp
}

func scopeKey(s persistence.Scope) string { return s.Session + "\x00" + s.Stack }

// GrantsChanged records a scope's grants after a change made here, which
// it replicates.
func (r *Replica) GrantsChanged(g member.Grants) {
	e := grantEntry{Session: g.Scope.Session, Stack: g.Scope.Stack, Groups: g.Groups, Ended: g.Ended}
	if g.Ended {
		e.Groups = nil
	}
	key := scopeKey(g.Scope)
	r.mu.Lock()
	e.stamp = r.nextStamp()
	r.grants[key] = e
	r.mu.Unlock()
	r.republish()
	r.push(sharedView{Grants: map[string]grantEntry{key: e}})
}

// mergeGrants applies the scopes' changes that are newer than this
// member's.
func (r *Replica) mergeGrants(entries map[string]grantEntry) {
	todo := mergeNewer(r, r.grants, entries)
	if len(todo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(r.bg, 30*time.Second)
	defer cancel()
	for _, c := range todo {
		e := c.e
		g := member.Grants{Scope: persistence.Scope{Session: e.Session, Stack: e.Stack}, Groups: e.Groups, Ended: e.Ended}
		if err := r.host.ApplyGrants(ctx, g); err != nil {
			r.log.Warn("cluster: applying another member's grants", "session", e.Session, "by", e.By, "error", err)
		}
	}
	r.republish()
}

// Pins across a cluster: a tool definition approved or rejected on the
// member that runs its server (decisions are made there), or first listed
// there, is pinned on every member, so a server that moves to another
// member keeps its approvals. Each member keeps, per tool, the last pin
// it knows, by the same clock, and merges a newer one into its own pins
// and journal (actors.Runtime.MergePin). Only the member that runs a
// server changes its pins, so two members do not race on one.

// pinEntry is a tool's pin after its last change.
type pinEntry struct {
	Pin persistence.PinRecord `json:"pin"`
	stamp
}

func pinKey(server, tool string) string { return server + "\x00" + tool }

// recordPin notes a pin changed on this member (actors.Runtime.OnPinChange).
func (r *Replica) recordPin(rec persistence.PinRecord) {
	r.mu.Lock()
	e := pinEntry{Pin: rec, stamp: r.nextStamp()}
	r.pins[pinKey(rec.Server, rec.Tool)] = e
	r.mu.Unlock()
	r.republish()
	r.push(sharedView{Pins: map[string]pinEntry{pinKey(rec.Server, rec.Tool): e}})
}

// mergePins takes the pins newer than this member's.
func (r *Replica) mergePins(entries map[string]pinEntry) {
	todo := mergeNewer(r, r.pins, entries)
	if len(todo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(r.bg, 30*time.Second)
	defer cancel()
	for _, c := range todo {
		e := c.e
		if err := r.rt.MergePin(ctx, e.Pin); err != nil {
			r.log.Warn("cluster: merging another member's tool pin", "server", e.Pin.Server, "tool", e.Pin.Tool, "by", e.By, "error", err)
		}
	}
	r.republish()
}

// forgetPins drops an unregistered server's pins, as Unregister drops
// them from the journal, so that none is published again.
func (r *Replica) forgetPins(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.pins {
		if e.Pin.Server == server {
			delete(r.pins, k)
		}
	}
}
