package mcpvisor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

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

// nextStamp stamps a change made here, under hc.mu.
func (hc *hostCluster) nextStamp() stamp {
	hc.clock = max(time.Now().UnixNano(), hc.clock+1)
	s := stamp{Version: hc.clock}
	if n := hc.n(); n != nil {
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
func mergeNewer[E interface{ stamped() stamp }](hc *hostCluster, local, entries map[string]E) []keyed[E] {
	var todo []keyed[E]
	hc.mu.Lock()
	for k, e := range entries {
		if old, ok := local[k]; !ok || e.stamped().newer(old.stamped()) {
			local[k] = e
			hc.clock = max(hc.clock, e.stamped().Version)
			todo = append(todo, keyed[E]{k, e})
		}
	}
	hc.mu.Unlock()
	slices.SortFunc(todo, func(a, b keyed[E]) int { return cmp.Compare(a.e.stamped().Version, b.e.stamped().Version) })
	return todo
}

// registryEntry is the last change to one server at run time.
type registryEntry struct {
	Config  json.RawMessage `json:"config,omitempty"` // the ServerConfig, when registered at run time
	Enabled bool            `json:"enabled"`
	Deleted bool            `json:"deleted,omitempty"`
	stamp
}

// fromCluster marks a context whose change came from another member: it
// is applied, not published as this member's.
type fromCluster struct{}

func appliedFromCluster(ctx context.Context) bool { return ctx.Value(fromCluster{}) != nil }

// recordRegistry notes a change made on this member.
func (hc *hostCluster) recordRegistry(name string, e registryEntry) {
	hc.mu.Lock()
	e.stamp = hc.nextStamp()
	if e.Config == nil && !e.Deleted {
		e.Config = hc.registry[name].Config // enabling keeps a run-time registration's config
	}
	hc.registry[name] = e
	hc.mu.Unlock()
	hc.republish()
	hc.push(sharedView{Registry: map[string]registryEntry{name: e}})
}

// registered records a Register on this member.
func (h *Host) clusterRegistered(ctx context.Context, sc ServerConfig) {
	if h.cluster == nil || appliedFromCluster(ctx) {
		return
	}
	b, err := json.Marshal(sc)
	if err != nil {
		return
	}
	h.cluster.recordRegistry(sc.Name, registryEntry{Config: b, Enabled: sc.Enabled})
}

func (h *Host) clusterUnregistered(ctx context.Context, name string) {
	if h.cluster == nil {
		return
	}
	h.cluster.forgetPins(name)
	if !appliedFromCluster(ctx) {
		h.cluster.recordRegistry(name, registryEntry{Deleted: true})
	}
}

func (h *Host) clusterEnabled(ctx context.Context, name string, enabled bool) {
	if h.cluster != nil && !appliedFromCluster(ctx) {
		h.cluster.recordRegistry(name, registryEntry{Enabled: enabled})
	}
}

// mergeRegistry applies the entries of a member's view that are newer than
// this member's, in a stable order.
func (hc *hostCluster) mergeRegistry(entries map[string]registryEntry) {
	todo := mergeNewer(hc, hc.registry, entries)
	if len(todo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(hc.h.bg, fromCluster{}, true), 30*time.Second)
	defer cancel()
	for _, c := range todo {
		if err := hc.apply(ctx, c.key, c.e); err != nil {
			hc.h.opts.Logger.Warn("cluster: applying another member's registry change", "server", c.key, "by", c.e.By, "error", err)
		}
		// The member that runs it may have published its new state
		// before this change arrived (the two are gossiped apart).
		if owner := hc.placement(c.key, hc.h.rt.NodeLabel(c.key)); owner != "" && owner != unplaced {
			hc.showView(c.key, owner)
		}
	}
	hc.republish()
}

// apply makes one change here as the member that made it did.
func (hc *hostCluster) apply(ctx context.Context, name string, e registryEntry) error {
	h := hc.h
	switch {
	case e.Deleted:
		if err := h.Unregister(ctx, name); err != nil && !errors.Is(err, ErrUnknownServer) {
			return err
		}
		return nil
	case e.Config != nil:
		var sc ServerConfig
		if err := json.Unmarshal(e.Config, &sc); err != nil {
			return err
		}
		sc.Name, sc.Enabled = name, e.Enabled
		// Registering what is registered already changes nothing, the
		// enabled flag included: it is set on its own.
		if err := h.Register(ctx, sc); err != nil {
			return err
		}
	}
	return h.SetEnabled(ctx, name, e.Enabled)
}

// sharedSnapshot is the shared state to publish, if it changed since it
// was last published.
func (hc *hostCluster) sharedSnapshot() (sharedView, bool) {
	if !hc.shared.Swap(false) {
		return sharedView{}, false
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return sharedView{Registry: maps.Clone(hc.registry), Grants: maps.Clone(hc.grants), Pins: maps.Clone(hc.pins)}, true
}

// mergeLoop merges the shared state the others publish (by gossip) or
// push (by tell), one at a time: two changes to one entry are applied in
// the order they won.
func (hc *hostCluster) mergeLoop() {
	for {
		select {
		case sv := <-hc.merges:
			hc.mergeRegistry(sv.Registry)
			hc.mergeGrants(sv.Grants)
			hc.mergePins(sv.Pins)
		case <-hc.h.bg.Done():
			return
		}
	}
}

// push tells every other member of a change made here at once, ahead of
// the gossip that carries it to any member that misses it (a member that
// joins later, one this message did not reach): a change is on the others
// within a hop rather than a few gossip rounds, and is lost with this
// member only if it dies before either.
func (hc *hostCluster) push(sv sharedView) {
	b, err := json.Marshal(tell{Shared: &sv})
	if err != nil {
		return
	}
	n := hc.n()
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
func (hc *hostCluster) republish() {
	hc.shared.Store(true)
	hc.wakePublish()
}

// wakePublish wakes the publish loop.
func (hc *hostCluster) wakePublish() {
	select {
	case hc.wake <- struct{}{}:
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

func scopeKey(s Scope) string { return s.Session + "\x00" + s.Stack }

// clusterGranted records a scope's grants after a change made here.
func (h *Host) clusterGranted(ctx context.Context, scope Scope, ended bool) {
	if h.cluster == nil || appliedFromCluster(ctx) {
		return
	}
	e := grantEntry{Session: scope.Session, Stack: scope.Stack, Ended: ended}
	if !ended {
		e.Groups = h.Session(scope.Session, scope.Stack).Groups()
	}
	hc := h.cluster
	hc.mu.Lock()
	e.stamp = hc.nextStamp()
	hc.grants[scopeKey(scope)] = e
	hc.mu.Unlock()
	hc.republish()
	hc.push(sharedView{Grants: map[string]grantEntry{scopeKey(scope): e}})
}

// mergeGrants applies the scopes' changes that are newer than this
// member's.
func (hc *hostCluster) mergeGrants(entries map[string]grantEntry) {
	todo := mergeNewer(hc, hc.grants, entries)
	if len(todo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(hc.h.bg, fromCluster{}, true), 30*time.Second)
	defer cancel()
	for _, c := range todo {
		e := c.e
		s := hc.h.Session(e.Session, e.Stack)
		var err error
		switch {
		case e.Ended:
			err = s.End(ctx)
		case len(e.Groups) > 0:
			var missing []string
			for _, g := range e.Groups {
				if !slices.Contains(s.Groups(), g) {
					missing = append(missing, g)
				}
			}
			if len(missing) > 0 {
				err = s.Activate(ctx, missing...)
			}
		}
		if err != nil {
			hc.h.opts.Logger.Warn("cluster: applying another member's grants", "session", e.Session, "by", e.By, "error", err)
		}
	}
	hc.republish()
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
func (hc *hostCluster) recordPin(rec persistence.PinRecord) {
	hc.mu.Lock()
	e := pinEntry{Pin: rec, stamp: hc.nextStamp()}
	hc.pins[pinKey(rec.Server, rec.Tool)] = e
	hc.mu.Unlock()
	hc.republish()
	hc.push(sharedView{Pins: map[string]pinEntry{pinKey(rec.Server, rec.Tool): e}})
}

// mergePins takes the pins newer than this member's.
func (hc *hostCluster) mergePins(entries map[string]pinEntry) {
	todo := mergeNewer(hc, hc.pins, entries)
	if len(todo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(hc.h.bg, 30*time.Second)
	defer cancel()
	for _, c := range todo {
		e := c.e
		if err := hc.h.rt.MergePin(ctx, e.Pin); err != nil {
			hc.h.opts.Logger.Warn("cluster: merging another member's tool pin", "server", e.Pin.Server, "tool", e.Pin.Tool, "by", e.By, "error", err)
		}
	}
	hc.republish()
}

// forgetPins drops an unregistered server's pins, as Unregister drops
// them from the journal, so that none is published again.
func (hc *hostCluster) forgetPins(server string) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for k, e := range hc.pins {
		if e.Pin.Server == server {
			delete(hc.pins, k)
		}
	}
}
