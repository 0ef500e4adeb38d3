package sidecar

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpvisor/mcpvisor/gateway"
)

// The bearer token is the API's defence; Host and Origin are checked as
// well, so that a page in a browser on this machine cannot use the API
// even if it came by the token: a page on an attacker's name that rebinds
// it to 127.0.0.1 (DNS rebinding) sends that name as Host, and a page on
// another origin sends its own as Origin. The rules are the gateway's at
// /mcp, with one addition: the sidecar's own origin, which its inbox page
// at /ui/ has.

// guard refuses, with 403, a request whose Host a loopback listener does
// not answer to (every method), and a state-changing one (not GET, HEAD
// or OPTIONS) whose Origin is not allowed.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r) {
			writeError(w, ErrorView{status: http.StatusForbidden, Code: CodeForbidden,
				Message: "Host " + quote(r.Host) + " is not this sidecar's: a loopback listener answers to localhost, loopback addresses and the allowed hosts only"})
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if origin := r.Header.Get("Origin"); !s.originAllowed(r, origin) {
				writeError(w, ErrorView{status: http.StatusForbidden, Code: CodeForbidden,
					Message: "Origin " + quote(origin) + " may not change state: only requests without Origin, from this sidecar's own origin, and from loopback or allowed origins may"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed is the gateway's rule (gateway.HostAllowed): on a loopback
// listener, localhost, a loopback address or one of Options.AllowedHosts.
// Requests on other listeners pass (they need TLS under mcpvisor serve,
// whose certificate names the host).
func (s *Server) hostAllowed(r *http.Request) bool {
	return gateway.HostAllowed(r, s.opts.AllowedHosts)
}

// originAllowed reports whether a request with this Origin may change
// state: the gateway's rule (gateway.OriginAllowed: no Origin, one of
// Options.AllowedOrigins or, when that list is empty, a loopback origin),
// and the sidecar's own origin, that of the request's Host, when the Host
// is to be trusted (hostAllowed on a loopback listener, or TLS).
func (s *Server) originAllowed(r *http.Request, origin string) bool {
	if gateway.OriginAllowed(origin, s.opts.AllowedOrigins) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && sameOrigin(r, u)
}

// sameOrigin reports whether u is the origin the request was made to:
// its scheme, and its host and port as the Host header gives them. The
// Host is trusted for this only on TLS (the certificate names it) or on a
// loopback listener, where hostAllowed has checked it: otherwise a
// rebinding page's Origin would match its own Host.
func sameOrigin(r *http.Request, u *url.URL) bool {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if u.Scheme != scheme {
		return false
	}
	if r.TLS == nil {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if tcp, ok := local.(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
			return false
		}
	}
	return strings.EqualFold(withPort(u.Host, scheme), withPort(r.Host, scheme))
}

// withPort is host[:port] with the scheme's default port made explicit.
func withPort(hostport, scheme string) string {
	if _, _, err := net.SplitHostPort(hostport); err == nil {
		return hostport
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(hostport, "[]"), port)
}

// quote quotes a header value for a message, bounded.
func quote(v string) string {
	const maxQuoted = 200
	if len(v) > maxQuoted {
		return strconv.Quote(v[:maxQuoted]) + "…"
	}
	return strconv.Quote(v)
}
