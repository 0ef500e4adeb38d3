package mcpvisor

import (
	"context"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// GatewayTask is a task a gateway serves for one of the host's tools (the
// 2026-07-28 tasks extension), as the journal keeps it: written when the
// task is created and when it ends, so that it is answered after a
// restart until Expires.
type GatewayTask = persistence.GatewayTaskRecord

// SaveGatewayTask writes t to the journal durably, replacing the record of
// its ID. It blocks until the write is on disk, or ctx ends.
func (h *Host) SaveGatewayTask(ctx context.Context, t GatewayTask) error {
	return h.journal.Write(ctx, persistence.PutGatewayTask(t))
}

// LoadGatewayTask reads the gateway task id from the journal; found is
// false when there is none (never saved, or pruned after it expired).
func (h *Host) LoadGatewayTask(id string) (t GatewayTask, found bool, err error) {
	return h.journal.Store().GatewayTask(id)
}
