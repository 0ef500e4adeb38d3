package mcpvisor

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// GatewayTask is a task a gateway serves for one of the host's tools (the
// 2026-07-28 tasks extension), as the journal keeps it: written when the
// task is created and when it ends, so that it is answered after a
// restart until Expires.
type GatewayTask struct {
	ID      string
	Tool    string
	Created time.Time
	Updated time.Time
	Expires time.Time
	// Status is working, completed, failed or cancelled.
	Status string
	// Result is the CallToolResult of a completed task; Error the JSON-RPC
	// error object of a failed one.
	Result json.RawMessage
	Error  json.RawMessage
}

// SaveGatewayTask writes t to the journal durably, replacing the record of
// its ID. It blocks until the write is on disk, or ctx ends.
func (h *Host) SaveGatewayTask(ctx context.Context, t GatewayTask) error {
	return h.journal.Write(ctx, persistence.PutGatewayTask(persistence.GatewayTaskRecord{
		ID: t.ID, Tool: t.Tool, Created: t.Created, Updated: t.Updated, Expires: t.Expires,
		Status: t.Status, Result: t.Result, Error: t.Error,
	}))
}

// LoadGatewayTask reads the gateway task id from the journal; found is
// false when there is none (never saved, or pruned after it expired).
func (h *Host) LoadGatewayTask(id string) (t GatewayTask, found bool, err error) {
	rec, found, err := h.journal.Store().GatewayTask(id)
	if err != nil || !found {
		return t, found, err
	}
	return GatewayTask{ID: rec.ID, Tool: rec.Tool, Created: rec.Created, Updated: rec.Updated, Expires: rec.Expires,
		Status: rec.Status, Result: rec.Result, Error: rec.Error}, true, nil
}
