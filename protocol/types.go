package protocol

import "encoding/json"

// The MCP 2025-11-25 types the host exchanges outside tools. JSON names are
// the schema's; optional members are omitempty. Members the host passes
// through without looking inside stay json.RawMessage.

// Implementation describes a client or server: clientInfo, serverInfo.
type Implementation struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
}

// Icon is an icon a server offers for itself, a tool or a resource. Src is an
// https: or data: URI; a client that renders icons must vet it first.
type Icon struct {
	Src      string   `json:"src"`
	MimeType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"` // "light" or "dark"
}

// ClientCapabilities is what the client declares in initialize. Declare only
// what is implemented: a server may then send those requests.
type ClientCapabilities struct {
	Roots        *RootsCapability           `json:"roots,omitempty"`
	Sampling     json.RawMessage            `json:"sampling,omitempty"`
	Elicitation  json.RawMessage            `json:"elicitation,omitempty"`
	Tasks        json.RawMessage            `json:"tasks,omitempty"`
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	// Extensions (2026-07-28) maps extension ids to their settings.
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// RootsCapability declares that the client answers roots/list.
type RootsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ServerCapabilities is what a server declares in its initialize result.
// Each feature is used only if declared: tools/list needs Tools.
type ServerCapabilities struct {
	Tools        *ListChangedCapability     `json:"tools,omitempty"`
	Resources    *ResourcesCapability       `json:"resources,omitempty"`
	Prompts      *ListChangedCapability     `json:"prompts,omitempty"`
	Logging      json.RawMessage            `json:"logging,omitempty"`
	Completions  json.RawMessage            `json:"completions,omitempty"`
	Tasks        json.RawMessage            `json:"tasks,omitempty"`
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	// Extensions (2026-07-28) maps extension ids to their settings.
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// ListChangedCapability is the tools and prompts capability.
type ListChangedCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourcesCapability is the resources capability.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// InitializeParams are the params of initialize.
type InitializeParams struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ClientCapabilities `json:"capabilities"`
	ClientInfo      Implementation     `json:"clientInfo"`
}

// InitializeResult is a server's answer to initialize. Check its
// ProtocolVersion with CheckVersion.
type InitializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	// Instructions is text the server offers for the model's system prompt.
	Instructions string          `json:"instructions,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
}

// CancelledParams are the params of notifications/cancelled. RequestID is
// required except for task cancellation, which uses tasks/cancel instead.
type CancelledParams struct {
	RequestID json.RawMessage `json:"requestId,omitempty"`
	Reason    string          `json:"reason,omitempty"`
}

// LoggingMessageParams are the params of notifications/message. Level is an
// RFC 5424 level name: debug, info, notice, warning, error, critical, alert,
// emergency.
type LoggingMessageParams struct {
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// LoggingSetLevelParams are the params of logging/setLevel, allowed only if
// the server declared logging. Level is one of the levels above.
type LoggingSetLevelParams struct {
	Level string `json:"level"`
}

// ProgressParams are the params of notifications/progress. ProgressToken is
// the string or number the request set in _meta.progressToken.
type ProgressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         *float64        `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}
