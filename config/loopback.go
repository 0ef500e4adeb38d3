package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// privateURLWarning warns of an http or sse server whose url's host is
// written as a private or link-local address while "allowPrivate" is not
// set: the host refuses to connect to such an address
// (internal/outbound), so the server would fail when it starts. Loopback
// (localhost) is not warned of: the host reaches a loopback server the
// user's own file names (the guard stays for servers the API or a model
// registers, and for redirects). The warning gives the fix in the file's own syntax. Host names
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
	if kind == "" || kind == "a loopback" {
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

// oauthURLWarnings warns of the oauth object's urls the host fetches
// itself (authServerMetadataUrl, idpTokenEndpoint) written as localhost or
// a loopback or private address while oauth.allowPrivate is not set: the
// server's allowPrivate covers its own origin only, so such a url is
// refused at sign-in unless it is on that origin. A link-local one is
// refused even with oauth.allowPrivate. The urls are shown without user
// info, query or fragment.
func (c Server) oauthURLWarnings(lookup func(string) (string, bool)) []string {
	if c.OAuth == nil {
		return nil
	}
	if t, ok := c.Transport(); !ok || t == protocol.TransportStdio {
		return nil
	}
	parse := func(raw string) *url.URL {
		expanded, _, err := expandRefs(raw, lookup, unsetMarker)
		if err != nil || strings.Contains(expanded, unsetMarker) {
			return nil
		}
		u, err := url.Parse(expanded)
		if err != nil || u.Host == "" {
			return nil
		}
		return u
	}
	own := ""
	if u := parse(c.URL); u != nil && c.AllowPrivate {
		own = urlOrigin(u)
	}
	var out []string
	for _, f := range []struct{ field, raw string }{
		{"authServerMetadataUrl", c.OAuth.AuthServerMetadataURL},
		{"idpTokenEndpoint", c.OAuth.IDPTokenEndpoint},
	} {
		u := parse(f.raw)
		if u == nil {
			continue
		}
		kind := addressKind(u.Hostname())
		shown := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
		switch {
		case kind == "":
		case kind == "a link-local":
			out = append(out, fmt.Sprintf("server %q: oauth.%s %s is a link-local address, which mcpvisor refuses for authorization requests even with oauth.allowPrivate",
				c.Name, f.field, shown.String()))
		case c.OAuth.AllowPrivate, own != "" && urlOrigin(u) == own:
		default:
			out = append(out, fmt.Sprintf("server %q: oauth.%s %s is %s address, which mcpvisor refuses for authorization requests by default (the server's allowPrivate covers its own origin only): set allowPrivate in the server's oauth object",
				c.Name, f.field, shown.String(), kind))
		}
	}
	return out
}

// urlOrigin is u's scheme, host and port, the port explicit.
func urlOrigin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(net.JoinHostPort(u.Hostname(), port))
}
