package actors

import (
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// State is where a server is in its life.
type State string

const (
	StateStarting     State = "starting"     // process being spawned
	StateInitializing State = "initializing" // handshake and tool listing under way
	StateReady        State = "ready"        // calls are sent
	StateBackoff      State = "backoff"      // waiting to restart after a failure
	StateStopped      State = "stopped"      // stopped by the host (unregistered or closing)
	StateDisabled     State = "disabled"     // turned off by configuration or SetEnabled
	StateFailed       State = "failed"       // restart intensity exceeded; waits to be re-enabled
)

// ServerStatus is a point-in-time view of one server, published by its actor
// on every change and read without queueing behind it.
type ServerStatus struct {
	Name            string
	FriendlyName    string
	Description     string
	Transport       Transport
	Enabled         bool
	State           State
	Since           time.Time // when State was entered
	LastError       string
	Restarts        int
	NextRetry       time.Time // set in StateBackoff
	PID             int
	ProtocolVersion string
	ServerInfo      protocol.Implementation
	Instructions    string
	Capabilities    protocol.ServerCapabilities // what the server declared in initialize
	Tools           int
	Warnings        []string // catalog problems: over-long names, duplicates, truncated listing
	BannerLines     uint64   // non-JSON stdout lines skipped
}

// Tool is one tool in the host's catalog, already namespaced and trimmed.
type Tool struct {
	Name         string // mcp__<server>__<tool>
	Server       string
	Tool         string // the server's own name for it
	Title        string
	Description  string
	InputSchema  []byte // raw JSON, passed through untouched
	OutputSchema []byte
	Annotations  *protocol.ToolAnnotations
	Destructive  bool
	TaskSupport  string
	Icons        []protocol.Icon
	Meta         []byte
	// Available: the server is ready, so a call is sent at once. A tool of
	// a server still starting comes from its last known catalog (restored
	// from the journal after a restart); a call to it waits for the server.
	Available bool
}
