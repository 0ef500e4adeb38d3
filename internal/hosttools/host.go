package hosttools

import (
	"context"
	"encoding/json"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// Host is what the host tools need of the host that serves them, beyond
// what its runtime shows. Every method is safe for concurrent use.
type Host interface {
	// Status lists every server as the host reports it (list_items), in
	// registration order. It never waits on a server.
	Status() []actors.ServerStatus

	// Register adds a server, or replaces the one of that name, and
	// starts it; it returns once the change is durable, not once the
	// server is up.
	Register(ctx context.Context, sc config.Server) error
	// Unregister removes a server for good and stops it.
	Unregister(ctx context.Context, name string) error
	// SetEnabled enables or disables a server, durably.
	SetEnabled(ctx context.Context, name string, enabled bool) error
	// InConfigFile reports whether the server is defined in the host's
	// config file (so deleting it lasts until the next start).
	InConfigFile(name string) (bool, error)

	// Grant grants groups, or single tools by their full names, to
	// scope, and returns the grants made (groups, and the namespaced
	// names of tools) once they are durable. An unknown name fails the
	// whole call.
	Grant(ctx context.Context, scope persistence.Scope, names []string) ([]string, error)
	// Granted is what scope sees now: the tools it may call, as
	// Session.Tools lists them, and its groups, sorted.
	Granted(scope persistence.Scope) (tools []actors.Tool, groups []string)
	// Active reports whether scope may call the tool named (namespaced)
	// of server without activating anything: its server is granted or
	// always on, or the tool itself is granted.
	Active(scope persistence.Scope, server, name string) bool

	// RecordApproval journals a decision on a host-tool call, as an
	// approval event for server ("" for none) with these params. It
	// never blocks on the disk.
	RecordApproval(server string, params json.RawMessage)
}
