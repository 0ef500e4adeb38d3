package mcpvisor

import (
	"context"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/registry"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// registry is the server registry kept in the host's journal
// (internal/registry: reconciled with the config file at start, changed by
// Register, Unregister and SetEnabled).
func (h *Host) registry() *registry.Registry {
	return registry.New(h.journal, h.secrets, h.rt, registryHost{h}, h.opts.Logger)
}

// registryHost is what the registry asks of the host: its secret store
// and the resolution of an entry into the runtime's spec.
type registryHost struct{ h *Host }

func (a registryHost) Resolve(ctx context.Context, sc ServerConfig) (actors.ServerSpec, error) {
	return a.h.resolve(ctx, sc)
}

func (a registryHost) Unstarted(rec persistence.ServerRecord) { a.h.authorizeUnstarted(rec) }
