package mcpvisor

import (
	"context"
	"encoding/json"
	"errors"
	"time"
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

// registryEntry is the last change to one server at run time.
type registryEntry struct {
	Config  json.RawMessage `json:"config,omitempty"` // the ServerConfig, when registered at run time
	Enabled bool            `json:"enabled"`
	Deleted bool            `json:"deleted,omitempty"`
	Version int64           `json:"version"` // hybrid clock: Unix nanoseconds, above any seen
	By      string          `json:"by"`      // the member that made it
}

// newer reports whether e wins over old.
func (e registryEntry) newer(old registryEntry) bool {
	return e.Version > old.Version || e.Version == old.Version && e.By > old.By
}

// fromCluster marks a context whose change came from another member: it
// is applied, not published as this member's.
type fromCluster struct{}

func appliedFromCluster(ctx context.Context) bool { return ctx.Value(fromCluster{}) != nil }

// recordRegistry notes a change made on this member.
func (hc *hostCluster) recordRegistry(name string, e registryEntry) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	e.Version = max(time.Now().UnixNano(), hc.clock+1)
	hc.clock = e.Version
	e.By = hc.n().Self()
	if e.Config == nil && !e.Deleted {
		e.Config = hc.registry[name].Config // enabling keeps a run-time registration's config
	}
	hc.registry[name] = e
	hc.republish()
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
	if h.cluster != nil && !appliedFromCluster(ctx) {
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
	type change struct {
		name string
		e    registryEntry
	}
	var todo []change
	hc.mu.Lock()
	for name, e := range entries {
		if old, ok := hc.registry[name]; !ok || e.newer(old) {
			hc.registry[name] = e
			hc.clock = max(hc.clock, e.Version)
			todo = append(todo, change{name, e})
		}
	}
	hc.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(hc.h.bg, fromCluster{}, true), 30*time.Second)
	defer cancel()
	for _, c := range todo {
		if err := hc.apply(ctx, c.name, c.e); err != nil {
			hc.h.opts.Logger.Warn("cluster: applying another member's registry change", "server", c.name, "by", c.e.By, "error", err)
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

// registrySnapshot is what this member publishes of the registry.
func (hc *hostCluster) registrySnapshot() map[string]registryEntry {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if len(hc.registry) == 0 {
		return nil
	}
	out := make(map[string]registryEntry, len(hc.registry))
	for k, v := range hc.registry {
		out[k] = v
	}
	return out
}

// republish wakes the publish loop.
func (hc *hostCluster) republish() {
	select {
	case hc.wake <- struct{}{}:
	default:
	}
}
