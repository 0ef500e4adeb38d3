package outbound

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Defaults for the zero fields of Options, and the transport's fixed limits.
const (
	defaultDialTimeout           = 10 * time.Second
	defaultTLSHandshakeTimeout   = 10 * time.Second
	defaultResponseHeaderTimeout = 60 * time.Second
	defaultMaxRedirects          = 3

	// idleConnTimeout closes pooled connections nobody reused.
	idleConnTimeout = 90 * time.Second
	// maxIdleConnsPerHost keeps enough connections for concurrent calls to
	// one server without redialing each time (net/http's default is 2).
	maxIdleConnsPerHost = 16
	// maxResponseHeaderBytes bounds a response's headers (net/http's
	// default is 10 MB).
	maxResponseHeaderBytes = 1 << 20
	// minAttemptTimeout is the least time one address of several gets
	// before the dialer moves on to the next, as in net.Dialer.
	minAttemptTimeout = 2 * time.Second
)

// Resolver looks up a host's addresses. *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure NewClient. The zero value is a client for a public
// server with the default timeouts.
type Options struct {
	// AllowPrivate permits loopback, private, link-local and the other
	// addresses CheckAddr refuses, for a server on this machine or network.
	// Such a client then follows no redirect at all.
	AllowPrivate bool
	// DenyLinkLocal refuses link-local addresses (169.254.0.0/16, fe80::/10)
	// and the cloud metadata services' addresses even with AllowPrivate:
	// for requests whose URLs a remote party chooses (an authorization
	// server's endpoints), where loopback and private may be opted into
	// but an instance's metadata service never is (CheckLinkLocal).
	DenyLinkLocal bool
	// LoopbackHost is a host, as the server's URL names it, that may
	// resolve to a loopback address (127.0.0.0/8, ::1) without
	// AllowPrivate: the host of a server the user's own config file
	// names (a server on this machine the person set up). Every other
	// host, a redirect's included, is checked as ever, and private and
	// link-local addresses stay refused.
	LoopbackHost string
	// Resolver resolves host names. nil: net.DefaultResolver.
	Resolver Resolver
	// Dial makes the TCP connection to an address the dialer has already
	// checked, an IP literal and a port. nil: a net.Dialer. Tests inject a
	// Dial that records the address instead of connecting.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialTimeout bounds resolving the host and connecting to it. 0: 10 s.
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake. 0: 10 s.
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a response's headers once
	// the request is written. 0: 60 s.
	ResponseHeaderTimeout time.Duration
	// MaxRedirects is how many redirects a request follows when
	// AllowPrivate is false. 0: 3; negative: none.
	MaxRedirects int
}

func (o Options) withDefaults() Options {
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = defaultDialTimeout
	}
	if o.TLSHandshakeTimeout <= 0 {
		o.TLSHandshakeTimeout = defaultTLSHandshakeTimeout
	}
	if o.ResponseHeaderTimeout <= 0 {
		o.ResponseHeaderTimeout = defaultResponseHeaderTimeout
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = defaultMaxRedirects
	}
	return o
}

// NewClient returns a client for one remote MCP server; do not share it
// between servers. Its Transport is a fresh *http.Transport with its own
// connection pool, no proxy (the environment's HTTP_PROXY is ignored: a
// proxy would connect to addresses this client never checked) and HTTP/2
// over TLS.
//
// The transport's dialer resolves the host itself, refuses the connection if
// any of its addresses fails CheckAddr (unless AllowPrivate), and connects
// to the checked address literally; an IP-literal host is checked the same
// way. Such refusals wrap ErrPrivateAddress. TLS still verifies the
// certificate against the URL's host name.
//
// Redirects: a client with AllowPrivate refuses every redirect; others
// follow at most MaxRedirects and never from https to http. Each hop's host
// goes through the dialer's check. Refusals wrap ErrRedirectRefused and
// name the target's host, not its path or query. The Go client, for its
// part, drops Authorization and other sensitive headers when a redirect
// leaves the original host's domain.
//
// The client has no overall Timeout, which would cut a long SSE stream:
// callers bound each request with its context. The transport bounds the
// dial, the TLS handshake and the wait for response headers. Call
// CloseIdleConnections when the server is removed.
func NewClient(opts Options) *http.Client {
	o := opts.withDefaults()
	d := &guardedDialer{
		loopbackHost:  strings.ToLower(strings.Trim(o.LoopbackHost, "[]")),
		allowPrivate:  o.AllowPrivate,
		denyLinkLocal: o.DenyLinkLocal,
		resolver:      o.Resolver,
		dial:          o.Dial,
		timeout:       o.DialTimeout,
	}
	t := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    o.TLSHandshakeTimeout,
		ResponseHeaderTimeout:  o.ResponseHeaderTimeout,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        idleConnTimeout,
		MaxIdleConns:           maxIdleConnsPerHost,
		MaxIdleConnsPerHost:    maxIdleConnsPerHost,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
	}
	return &http.Client{Transport: t, CheckRedirect: redirectPolicy(o.AllowPrivate, o.MaxRedirects)}
}

func redirectPolicy(allowPrivate bool, maxRedirects int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		// req.URL.Host only: the path and query may hold secrets.
		target := req.URL.Host
		if allowPrivate {
			return fmt.Errorf("%w: to %s: a local MCP endpoint has no business redirecting", ErrRedirectRefused, target)
		}
		if len(via) > maxRedirects {
			return fmt.Errorf("%w: to %s: more than %d redirects", ErrRedirectRefused, target, max(maxRedirects, 0))
		}
		if prev := via[len(via)-1]; prev.URL.Scheme == "https" && req.URL.Scheme != "https" {
			return fmt.Errorf("%w: to %s: from https to %s", ErrRedirectRefused, target, req.URL.Scheme)
		}
		return nil
	}
}

// guardedDialer resolves, checks and then dials IP literals only.
type guardedDialer struct {
	loopbackHost  string // Options.LoopbackHost, lower-cased, without brackets
	allowPrivate  bool
	denyLinkLocal bool
	resolver      Resolver
	dial          func(ctx context.Context, network, addr string) (net.Conn, error)
	timeout       time.Duration
}

// DialContext connects to address, a host and a port, as http.Transport
// asks. A failed lookup is a *net.OpError, as from net.Dialer; a refused
// address is not (it wraps ErrPrivateAddress). It is safe for concurrent
// use.
func (d *guardedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("outbound: bad port in %q", address)
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel() // the timeout bounds the dial, not the connection

	var addrs []netip.Addr
	literal, err := netip.ParseAddr(host)
	if err == nil {
		addrs = []netip.Addr{literal}
	} else if addrs, err = d.resolver.LookupNetIP(ctx, ipNetwork(network), host); err != nil {
		// As net.Dialer reports it, so that callers tell a failed lookup
		// from a refusal the same way as without the guard.
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	} else if len(addrs) == 0 {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}}
	}
	refused := nonPublic
	switch {
	case d.allowPrivate && d.denyLinkLocal:
		refused = linkLocal
	case d.allowPrivate:
		refused = nil
	case d.loopbackHost != "" && strings.EqualFold(host, d.loopbackHost):
		refused = func(a netip.Addr) string {
			if a.Unmap().IsLoopback() {
				return ""
			}
			return nonPublic(a)
		}
	}
	if refused != nil {
		// Every address, not just the first: the dialer below may fall
		// back to any of them.
		for _, a := range addrs {
			if reason := refused(a); reason != "" {
				if literal.IsValid() {
					return nil, fmt.Errorf("%w: %s (%s)", ErrPrivateAddress, a, reason)
				}
				return nil, fmt.Errorf("%w: %s resolves to %s (%s)", ErrPrivateAddress, host, a, reason)
			}
		}
	}
	var firstErr error
	for i, a := range addrs {
		attempt, cancelAttempt := ctx, context.CancelFunc(func() {})
		if deadline, ok := ctx.Deadline(); ok && i < len(addrs)-1 {
			attempt, cancelAttempt = context.WithDeadline(ctx, partialDeadline(time.Now(), deadline, len(addrs)-i))
		}
		// Unmap: an IPv4-mapped address is dialed as the IPv4 address it
		// was checked as.
		conn, err := d.dial(attempt, network, netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		cancelAttempt()
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// ipNetwork maps a dial network to the resolver's.
func ipNetwork(network string) string {
	switch network {
	case "tcp4":
		return "ip4"
	case "tcp6":
		return "ip6"
	}
	return "ip"
}

// partialDeadline shares the time left among the addresses left to try, as
// net.Dialer does, so that one address that never answers does not use up
// the whole dial timeout.
func partialDeadline(now, deadline time.Time, addrsLeft int) time.Time {
	left := deadline.Sub(now)
	timeout := left / time.Duration(addrsLeft)
	if timeout < minAttemptTimeout {
		timeout = min(left, minAttemptTimeout)
	}
	return now.Add(timeout)
}

// CloseIdle closes the idle connections of rt when it keeps any: what a
// RoundTripper that wraps another does in its own CloseIdleConnections, so
// that http.Client.CloseIdleConnections reaches the transport underneath.
func CloseIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
