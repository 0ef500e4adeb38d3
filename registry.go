package mcpvisor

import (
	"github.com/mcpvisor/mcpvisor/persistence"
)

// registryHost is what the registry asks of the host (registry.Host).
type registryHost struct{ h *Host }

func (a registryHost) Unstarted(rec persistence.ServerRecord) { a.h.authorizeUnstarted(rec) }
