package signin

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/outbound"
)

// The outbound clients every authorizer's requests go through, by what
// they may reach: shared, for they are rare, and one pool per remote
// server would cost each of thousands of servers a transport for nothing.
const (
	clientPublic       = iota // public addresses only: the default
	clientPrivate             // anything: the server's own origin, with its allowPrivate
	clientNotLinkLocal        // loopback and private, never link-local: oauth.allowPrivate
	clientKinds
)

// sharedClient is the shared outbound client of kind; as.mu held.
func (as *Authorizers) sharedClient(kind int) *http.Client {
	if as.clients[kind] == nil {
		as.clients[kind] = outbound.NewClient(outbound.Options{
			AllowPrivate:  kind != clientPublic,
			DenyLinkLocal: kind == clientNotLinkLocal,
		})
	}
	return as.clients[kind]
}

// authClient is the client of the authorization requests (discovery,
// registration, tokens, revocation) of a server at serverURL; as.mu held.
//
// The server's allowPrivate covers its own origin (scheme, host and port)
// and nothing else: the authorization server's endpoints are named by
// metadata the server (or whoever answers for it) chooses, and would
// otherwise turn a local server into a way to POST to any other local
// service. Those go through the guarded client, or, with oauth.allowPrivate,
// one that reaches loopback and private addresses but never link-local.
func (as *Authorizers) authClient(serverURL string, serverPrivate, oauthPrivate bool) *http.Client {
	public := as.sharedClient(clientPublic)
	other := public
	if oauthPrivate {
		other = as.sharedClient(clientNotLinkLocal)
	}
	rt := &originRouter{other: other.Transport, oauthPrivate: oauthPrivate}
	if serverPrivate {
		if u, err := url.Parse(serverURL); err == nil && u.Host != "" {
			rt.origin = originKey(u)
			rt.own = as.sharedClient(clientPrivate).Transport
		}
	}
	// The public client's redirect policy (a few hops, never from https to
	// http); every hop goes through the router again.
	return &http.Client{Transport: rt, CheckRedirect: public.CheckRedirect}
}

// originRouter sends the requests to one origin (the server's own, allowed
// private addresses) through own and every other request through other.
type originRouter struct {
	origin       string // "" : none is routed to own
	own          http.RoundTripper
	other        http.RoundTripper
	oauthPrivate bool
}

func (r *originRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.origin != "" && originKey(req.URL) == r.origin {
		return r.own.RoundTrip(req)
	}
	resp, err := r.other.RoundTrip(req)
	if err != nil && errors.Is(err, outbound.ErrPrivateAddress) {
		if r.oauthPrivate {
			return nil, fmt.Errorf("%w (a link-local address is refused even with oauth.allowPrivate)", err)
		}
		if r.origin != "" {
			return nil, fmt.Errorf("%w (the server's allowPrivate covers only its own origin %s; to let its authorization server use loopback or private addresses, set oauth.allowPrivate)", err, r.origin)
		}
		return nil, fmt.Errorf("%w (to let the server's authorization server use loopback or private addresses, set oauth.allowPrivate)", err)
	}
	return resp, err
}

// CloseIdleConnections closes the idle connections of both transports.
func (r *originRouter) CloseIdleConnections() {
	outbound.CloseIdle(r.other)
	if r.own != nil {
		outbound.CloseIdle(r.own)
	}
}

// originKey is u's origin, scheme://host:port, lower-cased, the port
// explicit, an IP literal in its canonical form.
func originKey(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	host := strings.ToLower(u.Hostname())
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.String() // one spelling of an IP literal
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
