package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// These tests send traffic to loopback only. Every client gets a fake
// Resolver, so no name is looked up, and a Dial that either records the
// address and refuses (recorder) or connects a made-up public address to a
// loopback listener and refuses every other address (router): even a wrong
// guard cannot reach 10.0.0.1 or 169.254.169.254.

type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if addrs, ok := f[host]; ok {
		return addrs, nil
	}
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

func resolveTo(host string, addrs ...string) fakeResolver {
	f := fakeResolver{host: nil}
	for _, a := range addrs {
		f[host] = append(f[host], netip.MustParseAddr(a))
	}
	return f
}

var errNotDialed = errors.New("test dialer: not connecting")

// recorder is a Dial that records the addresses it is asked for and never
// connects.
type recorder struct {
	mu    sync.Mutex
	addrs []string
}

func (r *recorder) Dial(_ context.Context, _, addr string) (net.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs = append(r.addrs, addr)
	return nil, errNotDialed
}

func (r *recorder) Addrs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.addrs)
}

// router is a Dial that connects made-up public addresses to loopback
// listeners, test-only rewiring, and refuses any other address.
type router struct {
	routes map[string]string // "8.8.8.8:443" → a listener's 127.0.0.1 address
	recorder
}

func (r *router) route(from string, to net.Addr) {
	if r.routes == nil {
		r.routes = map[string]string{}
	}
	if !to.(*net.TCPAddr).IP.IsLoopback() {
		panic("router: not a loopback listener: " + to.String())
	}
	r.routes[from] = to.String()
}

func (r *router) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	r.recorder.Dial(ctx, network, addr)
	to, ok := r.routes[addr]
	if !ok {
		return nil, errNotDialed
	}
	var d net.Dialer
	return d.DialContext(ctx, network, to)
}

// get requests url and returns the body on a 200.
func get(t *testing.T, c *http.Client, url string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s", resp.Status)
	}
	return string(body), nil
}

// counter is a handler that counts its requests and answers "ok".
type counter struct {
	mu   sync.Mutex
	hits int
}

func (c *counter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	c.hits++
	c.mu.Unlock()
	io.WriteString(w, "ok")
}

func (c *counter) Hits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var refusedAddrs = []string{
	"10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "127.0.0.1",
	"::1", "fe80::1", "fc00::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1",
	"64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "224.0.0.1", "255.255.255.255", "::",
}

func TestGuardRefusesBeforeDial(t *testing.T) {
	for _, addr := range refusedAddrs {
		t.Run(addr+"/resolved", func(t *testing.T) {
			rec := &recorder{}
			c := NewClient(Options{Resolver: resolveTo("mcp.example", addr), Dial: rec.Dial})
			defer c.CloseIdleConnections()
			_, err := get(t, c, "http://mcp.example:8080/mcp")
			var opErr *net.OpError
			if !errors.Is(err, ErrPrivateAddress) || errors.As(err, &opErr) {
				t.Fatalf("err = %v, want ErrPrivateAddress, not a network error", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "mcp.example resolves to "+netip.MustParseAddr(addr).String()) {
				t.Errorf("error %q does not name the host and the address", msg)
			}
			if got := rec.Addrs(); len(got) != 0 {
				t.Fatalf("Dial was called with %v", got)
			}
		})
		t.Run(addr+"/literal", func(t *testing.T) {
			rec := &recorder{}
			// The resolver knows no name: a literal must not be looked up.
			c := NewClient(Options{Resolver: fakeResolver{}, Dial: rec.Dial})
			defer c.CloseIdleConnections()
			_, err := get(t, c, "http://"+net.JoinHostPort(addr, "8080")+"/mcp")
			if !errors.Is(err, ErrPrivateAddress) {
				t.Fatalf("err = %v, want ErrPrivateAddress", err)
			}
			if got := rec.Addrs(); len(got) != 0 {
				t.Fatalf("Dial was called with %v", got)
			}
		})
	}
}

func TestGuardPassesPublicAddresses(t *testing.T) {
	tests := []struct {
		name     string
		url      string
		resolver fakeResolver
		want     []string // addresses Dial is asked for
	}{
		{"resolved", "http://mcp.example:8080/", resolveTo("mcp.example", "8.8.8.8"), []string{"8.8.8.8:8080"}},
		{"literal", "http://8.8.8.8/", nil, []string{"8.8.8.8:80"}},
		{"mapped literal dialed as IPv4", "http://[::ffff:8.8.8.8]:8080/", nil, []string{"8.8.8.8:8080"}},
		{"mapped from the resolver", "https://mcp.example/", resolveTo("mcp.example", "::ffff:8.8.8.8"), []string{"8.8.8.8:443"}},
		{"IPv6", "http://[2001:4860:4860::8888]:8080/", nil, []string{"[2001:4860:4860::8888]:8080"}},
		{"NAT64 of a public address", "http://[64:ff9b::808:808]/", nil, []string{"[64:ff9b::808:808]:80"}},
		{"every address tried in order", "http://mcp.example/", resolveTo("mcp.example", "8.8.8.8", "2001:4860:4860::8888"),
			[]string{"8.8.8.8:80", "[2001:4860:4860::8888]:80"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			if tt.resolver == nil {
				tt.resolver = fakeResolver{}
			}
			c := NewClient(Options{Resolver: tt.resolver, Dial: rec.Dial})
			defer c.CloseIdleConnections()
			_, err := get(t, c, tt.url)
			if !errors.Is(err, errNotDialed) || errors.Is(err, ErrPrivateAddress) {
				t.Fatalf("err = %v, want the test dialer's refusal", err)
			}
			if diff := cmp.Diff(tt.want, rec.Addrs()); diff != "" {
				t.Fatalf("Dial addresses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGuardChecksEveryAddress(t *testing.T) {
	rec := &recorder{}
	c := NewClient(Options{Resolver: resolveTo("mcp.example", "8.8.8.8", "10.0.0.1"), Dial: rec.Dial})
	defer c.CloseIdleConnections()
	if _, err := get(t, c, "http://mcp.example/"); !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("err = %v, want ErrPrivateAddress", err)
	}
	if got := rec.Addrs(); len(got) != 0 {
		t.Fatalf("Dial was called with %v", got)
	}
}

func TestGuardResolverErrors(t *testing.T) {
	rec := &recorder{}
	c := NewClient(Options{Resolver: fakeResolver{"empty.example": nil}, Dial: rec.Dial})
	defer c.CloseIdleConnections()
	for _, host := range []string{"unknown.example", "empty.example"} {
		_, err := get(t, c, "http://"+host+"/")
		var dnsErr *net.DNSError
		var opErr *net.OpError
		if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound || !errors.As(err, &opErr) || opErr.Op != "dial" {
			t.Errorf("%s: err = %v, want a dial *net.OpError with a not-found *net.DNSError", host, err)
		}
	}
	if got := rec.Addrs(); len(got) != 0 {
		t.Fatalf("Dial was called with %v", got)
	}
}

func TestAllowPrivate(t *testing.T) {
	srv := httptest.NewServer(&counter{})
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	localURL := fmt.Sprintf("http://local.example:%d/mcp", port)
	resolver := resolveTo("local.example", "127.0.0.1")

	t.Run("refused without", func(t *testing.T) {
		c := NewClient(Options{Resolver: resolver})
		defer c.CloseIdleConnections()
		if _, err := get(t, c, localURL); !errors.Is(err, ErrPrivateAddress) {
			t.Fatalf("err = %v, want ErrPrivateAddress", err)
		}
		if _, err := get(t, c, srv.URL); !errors.Is(err, ErrPrivateAddress) {
			t.Fatalf("err = %v, want ErrPrivateAddress", err)
		}
	})
	t.Run("reached with", func(t *testing.T) {
		c := NewClient(Options{AllowPrivate: true, Resolver: resolver})
		defer c.CloseIdleConnections()
		for _, u := range []string{localURL, srv.URL} {
			if body, err := get(t, c, u); err != nil || body != "ok" {
				t.Fatalf("GET %s = %q, %v", u, body, err)
			}
		}
	})
	t.Run("private addresses dialed with", func(t *testing.T) {
		rec := &recorder{}
		c := NewClient(Options{AllowPrivate: true, Resolver: resolveTo("nas.example", "192.168.1.10"), Dial: rec.Dial})
		defer c.CloseIdleConnections()
		get(t, c, "http://nas.example:8080/")
		get(t, c, "http://[fe80::1%25eth0]:8080/")
		if diff := cmp.Diff([]string{"192.168.1.10:8080", "[fe80::1%eth0]:8080"}, rec.Addrs()); diff != "" {
			t.Fatalf("Dial addresses (-want +got):\n%s", diff)
		}
	})
}

func TestAllowPrivateRefusesRedirects(t *testing.T) {
	b := &counter{}
	srvB := httptest.NewServer(b)
	defer srvB.Close()
	srvA := httptest.NewServer(http.RedirectHandler(srvB.URL+"/next?token=s3cret-token", http.StatusFound))
	defer srvA.Close()

	c := NewClient(Options{AllowPrivate: true})
	defer c.CloseIdleConnections()
	_, err := get(t, c, srvA.URL)
	if !errors.Is(err, ErrRedirectRefused) {
		t.Fatalf("err = %v, want ErrRedirectRefused", err)
	}
	if b.Hits() != 0 {
		t.Fatalf("the redirect target was hit %d times", b.Hits())
	}
	// net/http puts the Location in url.Error.URL; our error names the
	// host only.
	var urlErr *url.Error
	if !errors.As(err, &urlErr) {
		t.Fatalf("err = %T, want a *url.Error", err)
	}
	msg := urlErr.Err.Error()
	if strings.Contains(msg, "s3cret") || strings.Contains(msg, "/next") || !strings.Contains(msg, srvB.Listener.Addr().String()) {
		t.Fatalf("error %q should name the target host and nothing else of the URL", msg)
	}
}

// hops is a server for redirect chains: /hop/N redirects to /hop/N-1 on
// host hN-1.example, and /hop/0 answers "arrived".
type hops struct {
	port int
	mu   sync.Mutex
	hits map[string]int
}

func (h *hops) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.hits[r.URL.Path]++
	h.mu.Unlock()
	var n int
	if _, err := fmt.Sscanf(r.URL.Path, "/hop/%d", &n); err != nil {
		http.NotFound(w, r)
		return
	}
	if n == 0 {
		io.WriteString(w, "arrived")
		return
	}
	http.Redirect(w, r, fmt.Sprintf("http://h%d.example:%d/hop/%d", n-1, h.port, n-1), http.StatusFound)
}

func (h *hops) Hits() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.hits)
}

func TestRedirects(t *testing.T) {
	h := &hops{hits: map[string]int{}}
	mux := http.NewServeMux()
	mux.Handle("/hop/", h)
	mux.Handle("/to-private", http.RedirectHandler("http://internal.example/", http.StatusFound))
	mux.Handle("/to-metadata", http.RedirectHandler("http://169.254.169.254/latest/meta-data/", http.StatusFound))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	h.port = srv.Listener.Addr().(*net.TCPAddr).Port

	// hN.example are public names, rewired to the loopback server.
	publicIPs := []string{"8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "9.9.9.9", "149.112.112.112"}
	resolver := resolveTo("internal.example", "10.0.0.1")
	rt := &router{}
	for i, ip := range publicIPs {
		resolver[fmt.Sprintf("h%d.example", i)] = []netip.Addr{netip.MustParseAddr(ip)}
		rt.route(fmt.Sprintf("%s:%d", ip, h.port), srv.Listener.Addr())
	}
	hopURL := func(n int) string { return fmt.Sprintf("http://h%d.example:%d/hop/%d", n, h.port, n) }

	tests := []struct {
		name         string
		maxRedirects int
		url          string
		wantErr      error
		wantHits     map[string]int
	}{
		{"three hops followed", 0, hopURL(3), nil,
			map[string]int{"/hop/3": 1, "/hop/2": 1, "/hop/1": 1, "/hop/0": 1}},
		{"the fourth refused", 0, hopURL(4), ErrRedirectRefused,
			map[string]int{"/hop/4": 1, "/hop/3": 1, "/hop/2": 1, "/hop/1": 1}},
		{"MaxRedirects", 1, hopURL(2), ErrRedirectRefused,
			map[string]int{"/hop/2": 1, "/hop/1": 1}},
		{"none", -1, hopURL(1), ErrRedirectRefused,
			map[string]int{"/hop/1": 1}},
		{"hop to a private name checked", 0, fmt.Sprintf("http://h0.example:%d/to-private", h.port), ErrPrivateAddress,
			map[string]int{}},
		{"hop to the metadata address checked", 0, fmt.Sprintf("http://h0.example:%d/to-metadata", h.port), ErrPrivateAddress,
			map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.mu.Lock()
			clear(h.hits)
			h.mu.Unlock()
			c := NewClient(Options{Resolver: resolver, Dial: rt.Dial, MaxRedirects: tt.maxRedirects})
			defer c.CloseIdleConnections()
			body, err := get(t, c, tt.url)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("GET = %q, %v; want error %v", body, err, tt.wantErr)
			}
			if err == nil && body != "arrived" {
				t.Fatalf("body = %q", body)
			}
			if diff := cmp.Diff(tt.wantHits, h.Hits()); diff != "" {
				t.Fatalf("hits (-want +got):\n%s", diff)
			}
		})
	}
	for _, addr := range rt.Addrs() {
		if _, ok := rt.routes[addr]; !ok {
			t.Errorf("Dial was asked for %s", addr)
		}
	}
}

func TestRedirectFromHTTPSToHTTPRefused(t *testing.T) {
	plain := &counter{}
	plainSrv := httptest.NewServer(plain)
	defer plainSrv.Close()
	plainPort := plainSrv.Listener.Addr().(*net.TCPAddr).Port

	mux := http.NewServeMux()
	mux.Handle("/down", http.RedirectHandler(fmt.Sprintf("http://plain.example:%d/", plainPort), http.StatusFound))
	mux.Handle("/same", http.RedirectHandler("/done", http.StatusFound))
	mux.Handle("/done", &counter{})
	tlsSrv := httptest.NewTLSServer(mux)
	defer tlsSrv.Close()
	tlsPort := tlsSrv.Listener.Addr().(*net.TCPAddr).Port

	// The test certificate is valid for example.com: TLS verifies the
	// name while the dialer connects to the checked address.
	resolver := fakeResolver{
		"example.com":   {netip.MustParseAddr("8.8.8.8")},
		"plain.example": {netip.MustParseAddr("8.8.4.4")},
	}
	rt := &router{}
	rt.route(fmt.Sprintf("8.8.8.8:%d", tlsPort), tlsSrv.Listener.Addr())
	rt.route(fmt.Sprintf("8.8.4.4:%d", plainPort), plainSrv.Listener.Addr())
	c := NewClient(Options{Resolver: resolver, Dial: rt.Dial})
	defer c.CloseIdleConnections()
	roots := x509.NewCertPool()
	roots.AddCert(tlsSrv.Certificate())
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots}

	base := fmt.Sprintf("https://example.com:%d", tlsPort)
	if body, err := get(t, c, base+"/same"); err != nil || body != "ok" {
		t.Fatalf("https to https: %q, %v", body, err)
	}
	if _, err := get(t, c, base+"/down"); !errors.Is(err, ErrRedirectRefused) {
		t.Fatalf("https to http: err = %v, want ErrRedirectRefused", err)
	}
	if plain.Hits() != 0 {
		t.Fatalf("the http target was hit %d times", plain.Hits())
	}
}

func TestNewClientDefaults(t *testing.T) {
	c := NewClient(Options{})
	tr, ok := c.Transport.(*http.Transport)
	if !ok || tr == http.DefaultTransport {
		t.Fatalf("Transport = %T, want a fresh *http.Transport", c.Transport)
	}
	if other := NewClient(Options{}); other.Transport == c.Transport {
		t.Fatal("two clients share a transport")
	}
	if c.Timeout != 0 {
		t.Errorf("Timeout = %v, want none: it would cut SSE streams", c.Timeout)
	}
	if tr.Proxy != nil {
		t.Error("Proxy is set: a proxy would connect to unchecked addresses")
	}
	if !tr.ForceAttemptHTTP2 {
		t.Error("HTTP/2 is off")
	}
	got := []time.Duration{tr.TLSHandshakeTimeout, tr.ResponseHeaderTimeout}
	if diff := cmp.Diff([]time.Duration{10 * time.Second, 60 * time.Second}, got); diff != "" {
		t.Errorf("timeouts (-want +got):\n%s", diff)
	}
	c = NewClient(Options{TLSHandshakeTimeout: time.Second, ResponseHeaderTimeout: 2 * time.Second})
	tr = c.Transport.(*http.Transport)
	if tr.TLSHandshakeTimeout != time.Second || tr.ResponseHeaderTimeout != 2*time.Second {
		t.Errorf("timeouts = %v, %v; want the options'", tr.TLSHandshakeTimeout, tr.ResponseHeaderTimeout)
	}
}

func TestDialTimeout(t *testing.T) {
	for _, tt := range []struct {
		opt, want time.Duration
	}{{0, 10 * time.Second}, {3 * time.Second, 3 * time.Second}} {
		var left time.Duration
		dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
			deadline, ok := ctx.Deadline()
			if !ok {
				return nil, errors.New("no deadline")
			}
			left = time.Until(deadline)
			return nil, errNotDialed
		}
		c := NewClient(Options{Resolver: fakeResolver{}, Dial: dial, DialTimeout: tt.opt})
		if _, err := get(t, c, "http://8.8.8.8/"); !errors.Is(err, errNotDialed) {
			t.Fatalf("err = %v", err)
		}
		if left <= 0 || left > tt.want || left < tt.want-5*time.Second {
			t.Errorf("DialTimeout %v: the dial had %v left, want about %v", tt.opt, left, tt.want)
		}
	}
}

func TestPartialDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tt := range []struct {
		left time.Duration
		n    int
		want time.Duration
	}{
		{10 * time.Second, 2, 5 * time.Second},
		{10 * time.Second, 10, 2 * time.Second}, // at least 2 s each
		{time.Second, 3, time.Second},           // but no more than is left
	} {
		if got := partialDeadline(now, now.Add(tt.left), tt.n).Sub(now); got != tt.want {
			t.Errorf("partialDeadline(%v left, %d addresses) = %v, want %v", tt.left, tt.n, got, tt.want)
		}
	}
}

// TestNoLeakAfterCloseIdleConnections checks that the client's connection
// goroutines end when it closes its idle connections, with the server still
// running: the server's connection goroutines would also show a leak.
func TestNoLeakAfterCloseIdleConnections(t *testing.T) {
	srv := httptest.NewServer(&counter{})
	defer srv.Close()
	ignore := goleak.IgnoreCurrent()

	c := NewClient(Options{AllowPrivate: true})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := get(t, c, srv.URL); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c.CloseIdleConnections()
	goleak.VerifyNone(t, ignore)
}

// TestDenyLinkLocal: a client allowed private addresses with DenyLinkLocal
// dials loopback and private addresses but never a link-local one (the
// cloud metadata service), whether literal or resolved.
func TestDenyLinkLocal(t *testing.T) {
	rec := &recorder{}
	resolver := fakeResolver{
		"nas.example":      {netip.MustParseAddr("192.168.1.10")},
		"metadata.example": {netip.MustParseAddr("169.254.169.254")},
		"mixed.example":    {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("fe80::1")},
	}
	c := NewClient(Options{AllowPrivate: true, DenyLinkLocal: true, Resolver: resolver, Dial: rec.Dial})
	defer c.CloseIdleConnections()
	get(t, c, "http://nas.example:8080/")
	get(t, c, "http://127.0.0.1:8080/")
	get(t, c, "http://[::1]:8080/")
	for _, u := range []string{
		"http://169.254.169.254/latest/meta-data/",
		"http://metadata.example/latest/meta-data/",
		"http://mixed.example:8080/",
		"http://[fe80::1%25eth0]:8080/",
		"http://[::ffff:169.254.169.254]/",
		"http://[fd00:ec2::254]/",
	} {
		if _, err := get(t, c, u); !errors.Is(err, ErrPrivateAddress) {
			t.Errorf("GET %s: err = %v, want ErrPrivateAddress", u, err)
		}
	}
	if diff := cmp.Diff([]string{"192.168.1.10:8080", "127.0.0.1:8080", "[::1]:8080"}, rec.Addrs()); diff != "" {
		t.Fatalf("Dial addresses (-want +got):\n%s", diff)
	}
}

// LoopbackHost lets the one host the user's own file names reach loopback,
// and nothing else: another host resolving to loopback, a private address
// under that host, and a redirect from it to loopback elsewhere are
// refused as without it.
func TestLoopbackHost(t *testing.T) {
	srv := httptest.NewServer(&counter{})
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	resolver := resolveTo("local.example", "127.0.0.1")
	ownURL := fmt.Sprintf("http://local.example:%d/mcp", port)

	c := NewClient(Options{LoopbackHost: "local.example", Resolver: resolver})
	defer c.CloseIdleConnections()
	if body, err := get(t, c, ownURL); err != nil || body != "ok" {
		t.Fatalf("the file's own loopback host: %q, %v", body, err)
	}
	if _, err := get(t, c, srv.URL); !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("another loopback host: %v, want ErrPrivateAddress", err)
	}
	lit := NewClient(Options{LoopbackHost: "127.0.0.1"})
	defer lit.CloseIdleConnections()
	if body, err := get(t, lit, srv.URL); err != nil || body != "ok" {
		t.Fatalf("the file's own loopback literal: %q, %v", body, err)
	}
	rec := &recorder{}
	priv := NewClient(Options{LoopbackHost: "nas.example", Resolver: resolveTo("nas.example", "192.168.1.10"), Dial: rec.Dial})
	defer priv.CloseIdleConnections()
	if _, err := get(t, priv, "http://nas.example:8080/"); !errors.Is(err, ErrPrivateAddress) || len(rec.Addrs()) != 0 {
		t.Fatalf("a private address under the file's own host: %v (dialed %v), want ErrPrivateAddress", err, rec.Addrs())
	}

	// A public host the file names that redirects to loopback.
	redirect := httptest.NewServer(http.RedirectHandler(srv.URL, http.StatusFound))
	defer redirect.Close()
	rport := redirect.Listener.Addr().(*net.TCPAddr).Port
	hop := NewClient(Options{LoopbackHost: "hop.example", Resolver: resolveTo("hop.example", "127.0.0.1")})
	defer hop.CloseIdleConnections()
	if _, err := get(t, hop, fmt.Sprintf("http://hop.example:%d/", rport)); !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("a redirect from the file's own host to another on loopback: %v, want ErrPrivateAddress", err)
	}
}
