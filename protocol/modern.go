package protocol

import (
	"bytes"
	"encoding/json"
	"slices"
)

// The 2026-07-28 revision ("modern"): no initialize handshake and no
// sessions. Every request carries its protocol version, the client's
// capabilities and identity in _meta; a server answers server/discover with
// the versions it speaks; a result may ask for input (MRTR) instead of the
// server sending requests of its own.

// ModernVersion is the modern revision this package speaks.
const ModernVersion = "2026-07-28"

// ModernVersions are the modern revisions we speak, newest first.
var ModernVersions = []string{ModernVersion}

// IsModern reports whether v is a revision of the modern era (no handshake).
func IsModern(v string) bool { return v >= ModernVersion }

// Keys of _meta that 2026-07-28 reserves.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	// W3C trace context (SEP-414).
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
	MetaBaggage     = "baggage"
)

// Error codes of 2026-07-28 (the -32020…-32099 range is the spec's).
const (
	// CodeHeaderMismatch: HTTP headers missing or not matching the body.
	CodeHeaderMismatch = -32020
	// CodeMissingClientCapability: the request needs a capability the
	// client did not declare in _meta.
	CodeMissingClientCapability = -32021
	// CodeUnsupportedProtocolVersion: the server does not speak the
	// request's version; data lists the ones it does.
	CodeUnsupportedProtocolVersion = -32022
)

// IsModernError reports whether e is an error only a modern server sends:
// it tells a modern server from a legacy one during era detection. Codes
// a legacy server uses too (-32601, -32602) are not.
func IsModernError(e *Error) bool {
	if e == nil {
		return false
	}
	switch e.Code {
	case CodeHeaderMismatch, CodeMissingClientCapability, CodeUnsupportedProtocolVersion:
		return true
	}
	return false
}

// UnsupportedVersionData is the data of a CodeUnsupportedProtocolVersion
// error.
type UnsupportedVersionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested,omitempty"`
}

// ChooseVersion picks the revision to speak from the ones a server lists:
// the newest modern revision both sides speak, else the newest legacy one
// (modern false: speak it through initialize), else "".
func ChooseVersion(supported []string) (version string, modern bool) {
	for _, v := range ModernVersions {
		if slices.Contains(supported, v) {
			return v, true
		}
	}
	for _, v := range SupportedVersions {
		if slices.Contains(supported, v) {
			return v, false
		}
	}
	return "", false
}

// DiscoverResult is a server's answer to server/discover.
type DiscoverResult struct {
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
	// ServerInfo at the top level is what some servers send; the spec puts
	// it in _meta (Info reads both).
	ServerInfo *Implementation `json:"serverInfo,omitempty"`
	Cache
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// Info returns the server's identity: _meta's serverInfo, else a top-level
// serverInfo.
func (r *DiscoverResult) Info() Implementation {
	if v := valueAt(r.Meta, MetaServerInfo); v != nil {
		var info Implementation
		if json.Unmarshal(v, &info) == nil {
			return info
		}
	}
	if r.ServerInfo != nil {
		return *r.ServerInfo
	}
	return Implementation{}
}

// Cache is the freshness hint of a cacheable result (SEP-2549): tools,
// prompts, resources and templates lists, resources/read, server/discover.
type Cache struct {
	// TTLMs is how long, in milliseconds, the result may be reused; nil
	// when the server gave none (a legacy server).
	TTLMs *int64 `json:"ttlMs,omitempty"`
	// CacheScope is "public" or "private".
	CacheScope string `json:"cacheScope,omitempty"`
}

// Result types of 2026-07-28. A result without resultType is complete.
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
)

// InputRequest is one request a server needs the client to fulfil before it
// can complete (elicitation/create, sampling/createMessage, roots/list).
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// InputRequiredResult is a result with resultType "input_required": the
// client fulfils InputRequests and retries the original request, with a
// new id, the responses under the same keys and RequestState unmodified.
type InputRequiredResult struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	// RequestState is kept as the server wrote it (a JSON string), so it is
	// echoed byte for byte.
	RequestState json.RawMessage `json:"requestState,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
}

var inputRequiredValue = []byte(`"input_required"`)

// IsInputRequired reports whether a result asks for input. It costs a byte
// search for results that do not.
func IsInputRequired(result json.RawMessage) bool {
	if !bytes.Contains(result, inputRequiredValue) {
		return false
	}
	return stringAt(result, "resultType") == ResultInputRequired
}

// ModernMeta returns the _meta object every modern request carries: the
// protocol version, the client's capabilities and identity, and, when set,
// the log level the server may log at for this request.
func ModernMeta(version string, caps ClientCapabilities, info Implementation, logLevel string) json.RawMessage {
	m := struct {
		Version  string             `json:"io.modelcontextprotocol/protocolVersion"`
		Caps     ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
		Info     Implementation     `json:"io.modelcontextprotocol/clientInfo"`
		LogLevel string             `json:"io.modelcontextprotocol/logLevel,omitempty"`
	}{version, caps, info, logLevel}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // static types: cannot fail
	}
	return b
}

// JoinMeta returns the members of the objects a and b as one object, b's
// first, leaving out a member of a that b has too. Either may be empty. It
// is how a request's own _meta (a progress token) meets the modern keys.
func JoinMeta(a, b json.RawMessage) (json.RawMessage, error) {
	if isBlank(a) || isNull(trimSpace(a)) {
		return b, nil
	}
	if isBlank(b) || isNull(trimSpace(b)) {
		return a, nil
	}
	keys := map[string]bool{}
	out := make([]byte, 0, len(a)+len(b))
	out = append(out, '{')
	if !eachMember(b, func(m member, text []byte) {
		keys[string(m.key)] = true
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendRaw(out, text)
	}) {
		return nil, ErrInvalidMeta
	}
	if !eachMember(a, func(m member, text []byte) {
		if keys[string(m.key)] {
			return
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendRaw(out, text)
	}) {
		return nil, ErrInvalidMeta
	}
	return append(out, '}'), nil
}

// SubscriptionFilter is the notifications member of subscriptions/listen
// and of its acknowledgement.
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// Empty reports whether the filter asks for nothing.
func (f *SubscriptionFilter) Empty() bool {
	return !f.ToolsListChanged && !f.PromptsListChanged && !f.ResourcesListChanged && len(f.ResourceSubscriptions) == 0
}

// SubscriptionsListenParams are the params of subscriptions/listen (the
// _meta is added by the sender).
type SubscriptionsListenParams struct {
	Notifications SubscriptionFilter `json:"notifications"`
}
