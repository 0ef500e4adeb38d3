package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// privateURLWarning warns of an http or sse server whose url's host is
// written as localhost or as a loopback, private or link-local address
// while "allowPrivate" is not set: the host refuses to connect to such
// an address (internal/outbound), so the server would fail when it
// starts. The warning gives the fix in the file's own syntax. Host names
// are not resolved here; the check at dial time covers them. The url is
// shown without user info, query or fragment, which may hold secrets.
func (c Server) privateURLWarning(lookup func(string) (string, bool), d toolDialect) string {
	if c.AllowPrivate || c.URL == "" {
		return ""
	}
	if t, ok := c.Transport(); !ok || t == protocol.TransportStdio {
		return ""
	}
	expanded, _, err := expandRefs(c.URL, lookup, unsetMarker)
	if err != nil || strings.Contains(expanded, unsetMarker) {
		return ""
	}
	u, err := url.Parse(expanded)
	if err != nil || u.Host == "" {
		return ""
	}
	kind := addressKind(u.Hostname())
	if kind == "" {
		return ""
	}
	shown := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return fmt.Sprintf("server %q: url %s is %s address, which mcpvisor refuses by default: %s",
		c.Name, shown.String(), kind, d.allowPrivateFix(c.Name))
}

// addressKind names what host is when the host refuses it without
// allowPrivate ("a loopback", "a private", "a link-local", "an
// unspecified"), or "" for a public address or a name other than
// localhost.
func addressKind(host string) string {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "a loopback"
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return ""
	}
	a = a.Unmap().WithZone("")
	switch {
	case a.IsLoopback():
		return "a loopback"
	case a.IsPrivate():
		return "a private"
	case a.IsLinkLocalUnicast():
		return "a link-local"
	case a.IsUnspecified():
		return "an unspecified"
	}
	return ""
}
