package actors

import (
	"encoding/json"
	"strings"
)

// Resource URIs as the host exposes them. Servers choose their resource
// URIs alone, and MCP Apps servers all choose alike (the ext-apps examples
// each list ui://<app>/mcp-app.html), so two servers may list one URI for
// two different things. The rule here makes every URI the host exposes
// name its server, without any table: the exposed URI is a function of the
// server's name and its own URI, and the server and own URI are read back
// from the exposed one.
//
//   - ui:// URIs (MCP Apps interfaces, private to their server by nature)
//     are always namespaced, keeping the scheme MCP Apps hosts look for:
//     ui://<rest> of server S is ui://S/<rest>. So a tool's
//     _meta.ui.resourceUri and the resource listing agree with no listing
//     in between.
//   - Any other URI is the server's own unless a merged listing (the
//     gateway's) has it from two servers: then each server's copy is
//     qualified, mcpvisor://S/<the own URI, verbatim>. A URI such as
//     file:///etc/hosts keeps its meaning wherever it is unique, and a
//     tool result's resource_link still resolves.

const (
	uiScheme        = "ui://"
	qualifiedScheme = "mcpvisor://"
)

// IsUIResource reports whether uri is an MCP Apps interface: a ui:// URI
// (the scheme compared without case).
func IsUIResource(uri string) bool {
	return len(uri) >= len(uiScheme) && strings.EqualFold(uri[:len(uiScheme)], uiScheme)
}

// ExposedResourceURI is the URI under which server's resource uri is
// exposed when no other server lists it: ui://<rest> becomes
// ui://<server>/<rest>, any other URI is unchanged. A host tool's (server
// "") URIs are unchanged.
func ExposedResourceURI(server, uri string) string {
	if server == "" || !IsUIResource(uri) {
		return uri
	}
	return uri[:len(uiScheme)] + server + "/" + uri[len(uiScheme):]
}

// QualifiedResourceURI is the URI under which server's resource uri is
// exposed when another server lists the same URI: a ui:// URI as
// ExposedResourceURI gives it, any other mcpvisor://<server>/<uri>.
func QualifiedResourceURI(server, uri string) string {
	if server == "" || IsUIResource(uri) {
		return ExposedResourceURI(server, uri)
	}
	return qualifiedScheme + server + "/" + uri
}

// SplitResourceURI reverses ExposedResourceURI and QualifiedResourceURI:
// for ui://S/<rest> it returns S and ui://<rest>, for mcpvisor://S/<uri>
// S and uri. ok is false for any other URI, and for one whose S cannot be
// a server name (letters, digits, '_' and '-', no "__"); whether S is a
// registered server is the caller's question.
func SplitResourceURI(exposed string) (server, uri string, ok bool) {
	var rest string
	ui := IsUIResource(exposed)
	switch {
	case ui:
		rest = exposed[len(uiScheme):]
	case len(exposed) >= len(qualifiedScheme) && strings.EqualFold(exposed[:len(qualifiedScheme)], qualifiedScheme):
		rest = exposed[len(qualifiedScheme):]
	default:
		return "", "", false
	}
	server, uri, found := strings.Cut(rest, "/")
	if !found || !serverNameLike(server) || (!ui && uri == "") {
		return "", "", false
	}
	if ui {
		uri = exposed[:len(uiScheme)] + uri
	}
	return server, uri, true
}

// serverNameLike reports whether s has the shape of a server name
// (config.ValidateServerName's rule; actors does not import config).
func serverNameLike(s string) bool {
	if s == "" || strings.Contains(s, "__") {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ExposeUIMeta rewrites the MCP Apps references of a tool's _meta
// (ui.resourceUri, the older "ui/resourceUri", and the OpenAI Apps SDK's
// "openai/outputTemplate", also a ui:// resource read with resources/read)
// to the URIs the host exposes for server's resources, so that a client loads the interface the
// resource listing names. Anything else in meta, and meta that holds no
// such reference or is not a JSON object, is returned as it is.
func ExposeUIMeta(server string, meta json.RawMessage) json.RawMessage {
	if server == "" || len(meta) == 0 || !strings.Contains(string(meta), "ui://") && !strings.Contains(string(meta), "UI://") {
		return meta
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil || m == nil {
		return meta
	}
	changed := false
	rewrite := func(raw json.RawMessage) (json.RawMessage, bool) {
		var uri string
		if json.Unmarshal(raw, &uri) != nil {
			return raw, false
		}
		exposed := ExposedResourceURI(server, uri)
		if exposed == uri {
			return raw, false
		}
		b, err := json.Marshal(exposed)
		return b, err == nil
	}
	for _, key := range []string{"ui/resourceUri", "openai/outputTemplate"} {
		if raw, ok := m[key]; ok {
			if b, ok := rewrite(raw); ok {
				m[key], changed = b, true
			}
		}
	}
	if rawUI, ok := m["ui"]; ok {
		var ui map[string]json.RawMessage
		if json.Unmarshal(rawUI, &ui) == nil && ui != nil {
			if raw, ok := ui["resourceUri"]; ok {
				if b, ok := rewrite(raw); ok {
					ui["resourceUri"] = b
					if nb, err := json.Marshal(ui); err == nil {
						m["ui"], changed = nb, true
					}
				}
			}
		}
	}
	if !changed {
		return meta
	}
	b, err := json.Marshal(m)
	if err != nil {
		return meta
	}
	return b
}
