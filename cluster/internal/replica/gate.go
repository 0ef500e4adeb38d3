package replica

import (
	"bytes"
	"context"
	"time"

	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/member"
)

// The approval gate across a cluster. A registration another member made
// is held to the gate a register_mcp call meets here: when its maker was
// not an operator and no person allowed it in the approval inbox where it
// was made (member.Provenance.Gated), and this member has a gate (an
// approver, the approval inbox), it is registered here disabled and put
// to that gate (Host.ApproveServer), and runs here only once a person (or
// the approver) allows it. A refusal leaves it disabled here; a later change
// to its configuration is asked again; the changes that only enable or
// disable it are applied once it is allowed. Enabling or registering it
// on this member (its operator, or a register_mcp call its gate allowed)
// decides it here.

// gateState is where a registration stands at this member's gate.
type gateState struct {
	config  []byte // the sealed configuration decided, or being decided
	allowed bool
	cancel  context.CancelFunc // the question while it is asked
}

// hold reports whether the registration e (sc) must stay disabled here,
// and raises it as an approval when it was not yet.
func (r *Replica) hold(name string, e registryEntry, sc config.Server) bool {
	if e.Origin.Gated() || !r.host.ApprovalGate() {
		r.release(name)
		return false
	}
	before := r.host.Allowed(name, sc)
	r.mu.Lock()
	g, ok := r.gates[name]
	if ok && bytes.Equal(g.config, e.Config) {
		r.mu.Unlock()
		return !g.allowed // decided, or being asked
	}
	if !ok && before {
		// Allowed before this member last started: its journal says so.
		r.gates[name] = &gateState{config: e.Config, allowed: true}
		r.mu.Unlock()
		return false
	}
	if ok && g.cancel != nil {
		g.cancel()
	}
	ctx, cancel := context.WithCancel(r.bg)
	g = &gateState{config: e.Config, cancel: cancel}
	r.gates[name] = g
	r.mu.Unlock()
	held := member.Held{Server: name, From: e.By, Config: sc, Provenance: e.Origin}
	if !r.spawn(func() { defer cancel(); r.ask(ctx, g, held) }) {
		cancel()
	}
	return true
}

// ask asks this member's gate about held, and once allowed has the merge
// goroutine apply the registration's last change here (enableAllowed):
// applied there, in order with the changes merged, it cannot be undone
// by one being applied.
func (r *Replica) ask(ctx context.Context, g *gateState, held member.Held) {
	allowed, err := r.host.ApproveServer(ctx, held)
	r.mu.Lock()
	current := r.gates[held.Server] == g
	if current {
		g.allowed, g.cancel = allowed, nil
	}
	r.mu.Unlock()
	switch {
	case !current || ctx.Err() != nil:
		return
	case !allowed:
		r.log.Warn("cluster: another member's registration was not approved here; it stays disabled", "server", held.Server, "by", held.From, "error", err)
		return
	}
	r.log.Info("cluster: another member's registration approved here", "server", held.Server, "by", held.From)
	select {
	case r.allowed <- held.Server:
	case <-r.bg.Done():
	}
}

// enableAllowed enables server here, from the merge goroutine, if its
// registration is allowed here now and its last change enables it.
func (r *Replica) enableAllowed(server string) {
	r.mu.Lock()
	g, e := r.gates[server], r.registry[server]
	ok := g != nil && g.allowed && bytes.Equal(g.config, e.Config) && !e.Deleted && e.Enabled
	r.mu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.bg, 30*time.Second)
	defer cancel()
	if err := r.host.ApplyServer(ctx, member.ServerChange{Name: server, Enabled: true}); err != nil {
		r.log.Warn("cluster: enabling an approved registration", "server", server, "error", err)
	}
}

// release forgets name's place at the gate: its registration needs none.
func (r *Replica) release(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g, ok := r.gates[name]; ok {
		if g.cancel != nil {
			g.cancel()
		}
		delete(r.gates, name)
	}
}

// decidedHere notes a change e made on this member: deleted, it is gone
// from the gate; enabled (by its operator, or a register_mcp call its
// gate allowed), it is allowed here. Disabling it decides nothing.
// Callers hold r.mu.
func (r *Replica) decidedHere(name string, e registryEntry) {
	if !e.Deleted && !e.Enabled {
		return
	}
	if g, ok := r.gates[name]; ok && g.cancel != nil {
		g.cancel()
	}
	delete(r.gates, name)
	if e.Enabled {
		r.gates[name] = &gateState{config: e.Config, allowed: true}
	}
}
