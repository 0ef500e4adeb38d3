package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
)

// The modern era (MCP 2026-07-28), served when Options.Modern is set: no
// handshake and no session. server/discover names the versions the server
// speaks; every other request declares its version, the client's
// capabilities and identity in params._meta and is served on its own.
// initialize still opens the legacy era, so the server is dual-era.

// ModernVersion is the modern revision this framework speaks.
const ModernVersion = "2026-07-28"

// ModernVersions are the modern revisions served with Options.Modern.
var ModernVersions = []string{ModernVersion}

// Keys of _meta that 2026-07-28 reserves.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// CodeUnsupportedProtocolVersion answers a request whose _meta names a
// version the server does not speak; its data lists the ones it does.
const CodeUnsupportedProtocolVersion = -32022

// Result types of 2026-07-28; a result without one is complete.
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
)

// DiscoverResult is the result of server/discover.
type DiscoverResult struct {
	ResultType        string         `json:"resultType"`
	SupportedVersions []string       `json:"supportedVersions"`
	Capabilities      map[string]any `json:"capabilities"`
	Instructions      string         `json:"instructions,omitempty"`
	Meta              map[string]any `json:"_meta"`
}

// modernRequest is what a modern request declared in its _meta; the
// dispatcher puts it in the handler's context.
type modernRequest struct {
	version string
	caps    json.RawMessage // the client's capabilities; nil when it sent none
}

type modernKey struct{}

func modernFrom(ctx context.Context) *modernRequest {
	m, _ := ctx.Value(modernKey{}).(*modernRequest)
	return m
}

// classify reads the version a request declares in its _meta: nil for a
// request without one (legacy), an error for a version not served.
func (s *Server) classify(req *Request) (*modernRequest, error) {
	var p struct {
		Meta struct {
			Version *string         `json:"io.modelcontextprotocol/protocolVersion"`
			Caps    json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	}
	params := bytes.TrimSpace(req.Params)
	if len(params) == 0 || params[0] != '{' || json.Unmarshal(params, &p) != nil || p.Meta.Version == nil {
		return nil, nil
	}
	if !slices.Contains(ModernVersions, *p.Meta.Version) {
		return nil, &Error{
			Code:    CodeUnsupportedProtocolVersion,
			Message: "Unsupported protocol version",
			Data: struct {
				Supported []string `json:"supported"`
				Requested string   `json:"requested"`
			}{s.supportedVersions(), *p.Meta.Version},
		}
	}
	caps := p.Meta.Caps
	if len(caps) == 0 || caps[0] != '{' {
		caps = nil
	}
	return &modernRequest{version: *p.Meta.Version, caps: caps}, nil
}

// supportedVersions are the modern revisions, then the legacy ones.
func (s *Server) supportedVersions() []string {
	return append(slices.Clone(ModernVersions), SupportedVersions...)
}

// dispatchModern serves the methods only the modern era has, and gives a
// modern request's handler the version and capabilities it declared.
// handled is false for a request the legacy dispatcher serves as it is.
func (s *Server) dispatchModern(ctx context.Context, req *Request) (_ context.Context, result any, handled bool, err error) {
	mr, err := s.classify(req)
	if err != nil {
		return ctx, nil, true, err
	}
	if req.Method == "server/discover" {
		return ctx, s.discover(), true, nil
	}
	if mr == nil {
		return ctx, nil, false, nil
	}
	ctx = context.WithValue(ctx, modernKey{}, mr)
	switch req.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		if s.opts.TasksExtension {
			res, err := s.extTaskRequest(ctx, req)
			return ctx, res, true, err
		}
	}
	if req.Method == "subscriptions/listen" {
		res, err := s.listen(ctx, req)
		return ctx, res, true, err
	}
	return ctx, nil, false, nil
}

func (s *Server) serverInfo() Implementation {
	return Implementation{Name: s.opts.Name, Title: s.opts.Title, Version: s.opts.Version}
}

// discover answers server/discover. The legacy tasks utility is not
// offered to modern clients (2026-07-28 made tasks an extension, declared
// with Options.TasksExtension).
func (s *Server) discover() *DiscoverResult {
	caps := map[string]any{
		"tools":   map[string]any{"listChanged": true},
		"logging": map[string]any{},
	}
	if s.opts.TasksExtension {
		caps["extensions"] = map[string]any{TasksExtension: map[string]any{}}
	}
	return &DiscoverResult{
		ResultType:        ResultComplete,
		SupportedVersions: s.supportedVersions(),
		Capabilities:      caps,
		Instructions:      s.opts.Instructions,
		Meta:              map[string]any{MetaServerInfo: s.serverInfo()},
	}
}

// listen answers subscriptions/listen: it acknowledges the subscription to
// tool list changes and holds the request open until the client cancels
// it or the input ends. On stdio the server's notifications (a
// notifications/tools/list_changed sent with Notify) reach the client
// whether or not a subscription is open.
func (s *Server) listen(ctx context.Context, req *Request) (any, error) {
	var p struct {
		Notifications struct {
			ToolsListChanged bool `json:"toolsListChanged"`
		} `json:"notifications"`
	}
	if err := unmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	ack := map[string]any{"notifications": map[string]any{"toolsListChanged": p.Notifications.ToolsListChanged}}
	if err := s.Notify("notifications/subscriptions/acknowledged", ack); err != nil {
		return nil, err
	}
	<-ctx.Done()
	return nil, ctx.Err()
}
