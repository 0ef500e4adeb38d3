package actors

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
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
	StateNeedsAuth    State = "needs_auth"   // the server wants a sign-in; started again once signed in
)

// ServerStatus is a point-in-time view of one server, published by its actor
// on every change and read without queueing behind it.
type ServerStatus struct {
	Name         string    `json:"name"`
	FriendlyName string    `json:"friendlyName,omitempty"`
	Description  string    `json:"description,omitempty"`
	Transport    Transport `json:"transport"`
	Enabled      bool      `json:"enabled"`
	State        State     `json:"state"`
	// Node is the cluster member the server runs on, when not this host
	// (cluster mode): its status here is as that member published it.
	Node      string    `json:"node,omitempty"`
	Since     time.Time `json:"since,omitzero"` // when State was entered
	LastError string    `json:"lastError,omitempty"`
	Restarts  int       `json:"restarts"`
	NextRetry time.Time `json:"nextRetry,omitzero"` // set in StateBackoff
	PID       int       `json:"pid,omitempty"`
	// LegacyPID is the process of the server's legacy incarnation, while
	// one serves its legacy clients (twin.go).
	LegacyPID       int                         `json:"legacyPid,omitempty"`
	Containment     *ContainmentStatus          `json:"containment,omitempty"` // stdio: how its processes are held, and its limits
	ProtocolVersion string                      `json:"protocolVersion,omitempty"`
	ServerInfo      protocol.Implementation     `json:"serverInfo,omitzero"`
	Instructions    string                      `json:"instructions,omitempty"`
	Capabilities    protocol.ServerCapabilities `json:"capabilities,omitzero"` // what the server declared in initialize
	Tools           int                         `json:"tools"`
	// ToolPolicy is the tool-pinning policy in force (off, warn, hold);
	// Reviews the listed definitions no person approved, Held how many of
	// them are withheld from sessions.
	ToolPolicy string       `json:"toolPolicy,omitempty"`
	Reviews    []ToolReview `json:"reviews,omitempty"`
	Held       int          `json:"held,omitempty"`
	// CatalogExpires is when the tool catalog's ttlMs ends and the host
	// lists the tools again (2026-07-28 servers that set one).
	CatalogExpires time.Time `json:"catalogExpires,omitzero"`
	Warnings       []string  `json:"warnings,omitempty"`    // catalog problems: over-long names, duplicates, truncated listing
	BannerLines    uint64    `json:"bannerLines,omitempty"` // non-JSON stdout lines skipped
	// Auth is the server's authorization, when it has an Authorizer:
	// who issued its token, which scopes, when it expires; never a token.
	Auth *oauth.Status `json:"auth,omitempty"`
}

// Tool is one tool in the host's catalog, already namespaced and trimmed.
// Its JSON is the one shape every surface shows (the sidecar's API, the
// CLI's --json, an embedder's json.Marshal): MCP's camelCase, schemas as
// JSON. A schema or _meta in the catalog is always valid JSON (one that is
// not is dropped when the catalog is built or restored), so json.Marshal
// of a list of tools does not fail on one bad entry.
//
// Name is the name models see and call: mcp__<server>__<tool>, or the
// bare name of a server with "prefix": false, with a tool name model APIs
// refuse (a character outside [a-zA-Z0-9_-], or a whole name over the
// host's budget, Options.MaxToolName) mapped to a stable one (NameMap).
// Tool keeps the server's own name, which the server is called by.
type Tool struct {
	Name         string                    `json:"name"` // as exposed: mcp__<server>__<tool>, or bare; mapped where needed
	Server       string                    `json:"server"`
	Tool         string                    `json:"tool"` // the server's own name for it, as it listed it
	Title        string                    `json:"title,omitempty"`
	Description  string                    `json:"description,omitempty"`
	InputSchema  json.RawMessage           `json:"inputSchema,omitempty"` // as the server sent it
	OutputSchema json.RawMessage           `json:"outputSchema,omitempty"`
	Annotations  *protocol.ToolAnnotations `json:"annotations,omitempty"`
	Destructive  bool                      `json:"destructive"`
	TaskSupport  string                    `json:"taskSupport,omitempty"`
	Icons        []protocol.Icon           `json:"icons,omitempty"`
	Meta         json.RawMessage           `json:"_meta,omitempty"`
	// Available: the server is ready, so a call is sent at once. A tool of
	// a server still starting comes from its last known catalog (restored
	// from the journal after a restart); a call to it waits for the server.
	Available bool `json:"available"`
}

// MCP is the tool as an entry of an MCP tools/list result, under the name
// it is exposed by. A tool without an inputSchema gets {"type":"object"},
// since the spec requires one; one exposed under a mapped name and
// without a title gets the server's own name as its title, for people to
// see. Its _meta's MCP Apps references (ui.resourceUri, "ui/resourceUri")
// name the ui:// URI the host exposes (ExposeUIMeta), as the resource
// listings do; Meta itself stays the server's.
func (t Tool) MCP() protocol.Tool {
	in := t.InputSchema
	if len(in) == 0 {
		in = json.RawMessage(`{"type":"object"}`)
	}
	title := t.Title
	if title == "" && t.Name != t.Tool && t.Name != ToolName(t.Server, t.Tool) {
		title = t.Tool
	}
	return protocol.Tool{
		Name: t.Name, Title: title, Description: t.Description,
		InputSchema: in, OutputSchema: t.OutputSchema, Annotations: t.Annotations,
		Icons: t.Icons, Meta: ExposeUIMeta(t.Server, t.Meta),
	}
}

// rawJSON keeps b when it is JSON other than null, and drops it otherwise:
// what a catalog holds must marshal. A stored field is dropped whole
// rather than failing the listing it is part of.
func rawJSON(b []byte) json.RawMessage {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) || !json.Valid(b) {
		return nil
	}
	return b
}

// ServerItem is one server as the host's list_items tool reports it. No
// field carries a secret.
type ServerItem struct {
	Name         string `json:"name"`
	FriendlyName string `json:"friendly_name,omitempty"`
	Description  string `json:"description,omitempty"`
	Transport    string `json:"transport"`
	Enabled      bool   `json:"enabled"`
	State        State  `json:"state"`
	Tools        int    `json:"tools"`
	LastError    string `json:"last_error,omitempty"`
}
