package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
	"github.com/mcpvisor/mcpvisor/internal/outbound"
)

// fakeClock is the Authorizer's time: it moves only when told to.
type fakeClock struct{ offset atomic.Int64 }

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func (c *fakeClock) Now() time.Time          { return epoch.Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// fetchBrowser is a Browser that GETs the authorization URL itself (no
// listener involved) without following the redirect and returns the
// redirect's query.
func fetchBrowser(ctx context.Context, p oauth.Prompt) (url.Values, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.AuthorizationURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("the authorization endpoint answered HTTP %d", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	return loc.Query(), nil
}

// mapStore is a Store in memory.
type mapStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *mapStore) Load(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key], nil
}

func (s *mapStore) Save(key string, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	if b == nil {
		delete(s.m, key)
	} else {
		s.m[key] = append([]byte(nil), b...)
	}
	return nil
}

func (s *mapStore) state(t *testing.T, key string) oauth.State {
	t.Helper()
	b, _ := s.Load(key)
	var st oauth.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("stored state: %v", err)
	}
	return st
}

// leakCheck collects the errors (and messages) a test sees and, when the
// test ends, fails it if any holds a token, code or secret a server issued.
type leakCheck struct {
	mu   sync.Mutex
	msgs []string
}

func newLeakCheck(t *testing.T, servers ...*oauthtest.AuthServer) *leakCheck {
	l := &leakCheck{}
	t.Cleanup(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, s := range servers {
			for _, secret := range s.Issued() {
				for _, m := range l.msgs {
					if strings.Contains(m, secret) {
						t.Errorf("a secret (%.6s…) appears in the message %q", secret, m)
					}
				}
			}
		}
	})
	return l
}

// see records err's message (and returns err).
func (l *leakCheck) see(err error) error {
	if err != nil {
		l.msg(err.Error())
	}
	return err
}

func (l *leakCheck) msg(m string) {
	l.mu.Lock()
	l.msgs = append(l.msgs, m)
	l.mu.Unlock()
}

// harness is one authorization server, one resource and an Authorizer of
// it with a fake clock.
type harness struct {
	t     *testing.T
	as    *oauthtest.AuthServer
	rs    *oauthtest.Resource
	clock *fakeClock
	leaks *leakCheck
	a     *oauth.Authorizer
	hc    *http.Client // through a.Transport
}

func newHarness(t *testing.T, so oauthtest.ServerOptions) *harness {
	as := oauthtest.NewAuthServer(t, so)
	h := &harness{t: t, as: as, rs: oauthtest.NewResource(t, as), clock: &fakeClock{}}
	h.leaks = newLeakCheck(t, as)
	return h
}

// authorizer makes h.a with opts (URL, HTTP and Now filled in).
func (h *harness) authorizer(cfg oauth.Config, opts oauth.Options) *oauth.Authorizer {
	h.t.Helper()
	opts.Server = "test"
	opts.URL = h.rs.MCPURL()
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	opts.Now = h.clock.Now
	a, err := oauth.New(cfg, opts)
	if err != nil {
		h.t.Fatalf("New: %v", err)
	}
	h.a = a
	h.hc = &http.Client{Transport: a.Transport(http.DefaultTransport)}
	h.t.Cleanup(func() {
		// An automatic sign-in may still run: let it end before the
		// servers close.
		a.Wait(context.Background())
		h.leaks.msg(a.Status().Error)
	})
	return a
}

func (h *harness) signIn() {
	h.t.Helper()
	if err := h.leaks.see(h.a.SignIn(context.Background(), fetchBrowser)); err != nil {
		h.t.Fatalf("SignIn: %v", err)
	}
}

// get requests the MCP endpoint through the Authorizer's transport.
func (h *harness) get() (int, error) {
	h.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, h.rs.MCPURL(), nil)
	resp, err := h.hc.Do(req)
	if err != nil {
		return 0, h.leaks.see(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (h *harness) mustGet() {
	h.t.Helper()
	if code, err := h.get(); err != nil || code != http.StatusOK {
		h.t.Fatalf("GET %s = %d, %v; want 200", h.rs.MCPURL(), code, err)
	}
}

// lastAuthorization is the Authorization header the resource last saw.
func (h *harness) lastAuthorization() string {
	auths := h.rs.Authorizations()
	if len(auths) == 0 {
		return ""
	}
	return auths[len(auths)-1]
}

func grants(reqs []oauthtest.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Form.Get("grant_type"))
	}
	return out
}

func TestSignInThenTransport(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	a := h.authorizer(oauth.Config{}, oauth.Options{})
	h.signIn()

	if n := len(h.as.Requests("register")); n != 1 {
		t.Errorf("%d registrations, want 1", n)
	}
	authz := h.as.Requests("authorize")
	if len(authz) != 1 {
		t.Fatalf("%d authorization requests, want 1", len(authz))
	}
	q := authz[0].Form
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != h.rs.MCPURL() || q.Get("state") == "" {
		t.Errorf("authorization request %v: want S256, resource %s and a state", q, h.rs.MCPURL())
	}
	if g := grants(h.as.Requests("token")); !slices.Equal(g, []string{"authorization_code"}) {
		t.Errorf("token grants = %q, want one authorization_code", g)
	}

	h.mustGet()
	access := h.as.Tokens("access")
	if want := "Bearer " + access[0]; h.lastAuthorization() != want {
		t.Errorf("the resource saw %q, want the issued token", h.lastAuthorization())
	}
	st := a.Status()
	if !st.SignedIn || st.NeedsAuth || st.Issuer != h.as.Issuer() || st.Client != "dcr" || st.Error != "" {
		t.Errorf("Status = %+v", st)
	}

	// Another origin gets no token.
	var seen atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization"))
	}))
	defer other.Close()
	resp, err := h.hc.Get(other.URL + "/mcp")
	if err != nil {
		t.Fatal(h.leaks.see(err))
	}
	resp.Body.Close()
	if v := seen.Load(); v != "" {
		t.Errorf("another origin received Authorization %q", v)
	}
}

// The token is refreshed when it is about to expire, before the request;
// the rotated refresh token is stored and the old one is dead.
func TestRefreshBeforeExpiryRotates(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{ExpiresIn: 3600})
	store := &mapStore{}
	h.authorizer(oauth.Config{}, oauth.Options{Store: store, Key: "k"})
	h.signIn()
	h.mustGet()
	oldRefresh := store.state(t, "k").Token.Refresh

	h.clock.Advance(3600*time.Second - 30*time.Second)
	h.mustGet()
	if g := grants(h.as.Requests("token")); !slices.Equal(g, []string{"authorization_code", "refresh_token"}) {
		t.Fatalf("token grants = %q, want authorization_code then refresh_token", g)
	}
	access, refresh := h.as.Tokens("access"), h.as.Tokens("refresh")
	if want := "Bearer " + access[1]; h.lastAuthorization() != want {
		t.Errorf("after the refresh the resource saw the old token (or none)")
	}
	if len(h.rs.Authorizations()) != 2 {
		t.Errorf("%d requests reached the resource, want 2 (the refresh comes first)", len(h.rs.Authorizations()))
	}
	st := store.state(t, "k")
	if st.Token.Refresh != refresh[1] || st.Token.Refresh == oldRefresh || st.Token.Access != access[1] {
		t.Errorf("the store does not hold the rotated token")
	}

	// The old refresh token is refused at the authorization server.
	tok := h.as.Requests("token")[0]
	resp, err := http.PostForm(h.as.Issuer()+"/token", url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {oldRefresh}, "client_id": {tok.ClientID}, "resource": {h.rs.MCPURL()},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("refreshing with the rotated-out token: HTTP %d, want 400", resp.StatusCode)
	}
}

// A 401 for a token the client thought good: refresh once, retry.
func TestRefreshOn401(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	h.authorizer(oauth.Config{}, oauth.Options{})
	h.signIn()
	h.mustGet()
	h.as.Revoke(h.as.Tokens("access")[0])
	h.mustGet()
	if g := grants(h.as.Requests("token")); !slices.Equal(g, []string{"authorization_code", "refresh_token"}) {
		t.Errorf("token grants = %q, want authorization_code then refresh_token", g)
	}
	access := h.as.Tokens("access")
	want := []string{"Bearer " + access[0], "Bearer " + access[0], "Bearer " + access[1]}
	if got := h.rs.Authorizations(); !slices.Equal(got, want) {
		t.Errorf("the resource saw %d requests, want the old token twice then the new one", len(got))
	}
}

// Everything revoked: the refresh fails, and so does the request, with
// ErrNeedsAuth and a reason in Status.
func TestRevokedNeedsAuth(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	a := h.authorizer(oauth.Config{}, oauth.Options{})
	h.signIn()
	h.mustGet()
	h.as.RevokeAll()
	code, err := h.get()
	if !errors.Is(err, oauth.ErrNeedsAuth) {
		t.Fatalf("GET = %d, %v; want an error matching ErrNeedsAuth", code, err)
	}
	if g := grants(h.as.Requests("token")); !slices.Equal(g, []string{"authorization_code", "refresh_token"}) {
		t.Errorf("token grants = %q, want authorization_code then one refresh_token", g)
	}
	st := a.Status()
	if st.Error == "" || !st.NeedsAuth || st.SignedIn {
		t.Errorf("Status = %+v; want NeedsAuth, not SignedIn, and an Error", st)
	}
	if n := len(h.as.Requests("authorize")); n != 1 {
		t.Errorf("%d authorization requests without a Browser, want 1", n)
	}
}

// RFC 9207: a wrong or missing iss is refused before the code is redeemed.
func TestIssuerInResponse(t *testing.T) {
	tests := []struct {
		name string
		opts oauthtest.ServerOptions
		ok   bool
	}{
		{"correct", oauthtest.ServerOptions{}, true},
		{"wrong", oauthtest.ServerOptions{Iss: oauthtest.IssWrong}, false},
		{"wrong, not advertised", oauthtest.ServerOptions{Iss: oauthtest.IssWrong, HideIssSupport: true}, false},
		{"missing though advertised", oauthtest.ServerOptions{Iss: oauthtest.IssMissing}, false},
		{"missing and not advertised", oauthtest.ServerOptions{Iss: oauthtest.IssMissing, HideIssSupport: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts)
			a := h.authorizer(oauth.Config{}, oauth.Options{})
			ctx := context.Background()
			f, err := a.Begin(ctx)
			if err != nil {
				t.Fatal(h.leaks.see(err))
			}
			q, err := fetchBrowser(ctx, oauth.Prompt{AuthorizationURL: f.AuthorizationURL})
			if err != nil {
				t.Fatal(err)
			}
			err = h.leaks.see(a.Complete(ctx, q))
			tokens := len(h.as.Requests("token"))
			if tt.ok {
				if err != nil || tokens != 1 {
					t.Errorf("Complete = %v with %d token requests; want success", err, tokens)
				}
				return
			}
			if !errors.Is(err, oauth.ErrAuthorization) {
				t.Errorf("Complete = %v, want ErrAuthorization", err)
			}
			if tokens != 0 {
				t.Errorf("%d token requests: the code was redeemed despite the iss", tokens)
			}
			if a.Status().SignedIn {
				t.Error("signed in despite the iss")
			}
		})
	}
}

// The resource moves to another authorization server: the next 401 leads
// to an automatic sign-in there, with a registration of its own; the first
// server's client id never reaches the second.
func TestAuthServerMigration(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	as2 := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{Path: "/second"})
	leaks2 := newLeakCheck(t, h.as, as2)
	a := h.authorizer(oauth.Config{}, oauth.Options{Browser: fetchBrowser})
	h.signIn()
	h.mustGet()

	h.rs.SetAuthServer(as2)
	code, err := h.get()
	leaks2.see(err)
	if !errors.Is(err, oauth.ErrNeedsAuth) {
		t.Fatalf("GET after the migration = %d, %v; want ErrNeedsAuth while signing in again", code, err)
	}
	a.Wait(context.Background())
	h.mustGet()

	if n := len(as2.Requests("register")); n != 1 {
		t.Errorf("%d registrations at the second server, want 1", n)
	}
	if g := grants(h.as.Requests("token")); len(g) != 1 {
		t.Errorf("token grants at the first server = %q: the old refresh token went on being used", g)
	}
	first := map[string]bool{}
	for _, r := range h.as.Requests("") {
		if r.ClientID != "" {
			first[r.ClientID] = true
		}
	}
	for _, r := range as2.Requests("") {
		for id := range first {
			if r.ClientID == id || strings.Contains(r.Form.Encode(), url.QueryEscape(id)) {
				t.Errorf("the first server's client id reached the second's %s endpoint", r.Endpoint)
			}
		}
	}
	st := a.Status()
	if st.Issuer != as2.Issuer() || !st.SignedIn {
		t.Errorf("Status = %+v, want signed in at %s", st, as2.Issuer())
	}
	access2 := as2.Tokens("access")
	if len(access2) != 1 || h.lastAuthorization() != "Bearer "+access2[0] {
		t.Errorf("the resource did not get the second server's token")
	}
}

// 403 insufficient_scope: re-authorize for the union of the scopes held and
// the scopes asked for.
func TestStepUpUnion(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	h.rs.MetadataScopes("read")
	a := h.authorizer(oauth.Config{}, oauth.Options{Browser: fetchBrowser})
	h.signIn()
	h.mustGet()
	h.rs.Require("write")
	h.mustGet()
	authz := h.as.Requests("authorize")
	if len(authz) != 2 {
		t.Fatalf("%d authorization requests, want 2", len(authz))
	}
	got := strings.Fields(authz[1].Form.Get("scope"))
	for _, want := range []string{"read", "write"} {
		if !slices.Contains(got, want) {
			t.Errorf("step-up asked for %q, want the union with %q", got, want)
		}
	}
	if s := a.Status().Scopes; !slices.Contains(s, "read") || !slices.Contains(s, "write") {
		t.Errorf("Status scopes = %q, want read and write", s)
	}
}

// A server that 403s for a scope the authorization server never grants
// gets at most 3 authorization requests: the sign-in and two step-ups for
// one request, and none more for the requests after it.
func TestStepUpBounded(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{Withhold: []string{"admin"}})
	h.rs.MetadataScopes("read")
	h.authorizer(oauth.Config{}, oauth.Options{Browser: fetchBrowser})
	h.signIn()
	h.rs.Require("admin")
	get403 := func(t *testing.T) {
		t.Helper()
		code, err := h.get()
		if err != nil || code != http.StatusForbidden {
			t.Fatalf("GET = %d, %v; want the 403 to stand", code, err)
		}
	}
	get403(t)
	if n := len(h.as.Requests("authorize")); n > 3 {
		t.Errorf("%d authorization requests for one request, want at most 3", n)
	}
	t.Run("later requests", func(t *testing.T) {
		get403(t)
		get403(t)
		if n := len(h.as.Requests("authorize")); n > 3 {
			t.Errorf("%d authorization requests after 3 requests, want at most 3", n)
		}
	})
}

// The outbound guard applies to discovery: the Authorizer's client refuses
// loopback addresses.
func TestOutboundGuardRefusesPrivateMetadata(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	h.authorizer(oauth.Config{}, oauth.Options{HTTP: outbound.NewClient(outbound.Options{})})
	err := h.leaks.see(h.a.SignIn(context.Background(), fetchBrowser))
	if !errors.Is(err, outbound.ErrPrivateAddress) || !errors.Is(err, oauth.ErrDiscovery) {
		t.Fatalf("SignIn = %v; want ErrDiscovery wrapping ErrPrivateAddress", err)
	}
	if n := len(h.rs.Authorizations()) + len(h.as.Requests("")); n != 0 {
		t.Errorf("%d requests reached the servers", n)
	}
}

// A public host whose metadata redirects to a private address: the guard
// refuses the redirect's hop.
func TestOutboundGuardRefusesRedirectToPrivate(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	var redirected atomic.Int32
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		http.Redirect(w, r, h.rs.URL+r.URL.Path, http.StatusFound)
	}))
	defer public.Close()
	hc := outbound.NewClient(outbound.Options{
		Resolver: staticResolver{"mcp.example": netip.MustParseAddr("93.184.215.14")},
		// The "public" address is served by the loopback redirector.
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, public.Listener.Addr().String())
		},
	})
	a, err := oauth.New(oauth.Config{}, oauth.Options{Server: "test", URL: "http://mcp.example/mcp", HTTP: hc, Now: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	err = h.leaks.see(a.SignIn(context.Background(), fetchBrowser))
	if !errors.Is(err, outbound.ErrPrivateAddress) || !errors.Is(err, oauth.ErrDiscovery) {
		t.Fatalf("SignIn = %v; want ErrDiscovery wrapping ErrPrivateAddress", err)
	}
	if redirected.Load() == 0 {
		t.Error("the request never reached the redirecting host")
	}
	if n := len(h.rs.Authorizations()); n != 0 {
		t.Errorf("%d requests reached the private resource", n)
	}
}

type staticResolver map[string]netip.Addr

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// The Store keeps the token: a new Authorizer with the same Store and key
// uses it without signing in again.
func TestStoreReload(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	store := &mapStore{}
	h.authorizer(oauth.Config{}, oauth.Options{Store: store, Key: "srv"})
	h.signIn()
	st := store.state(t, "srv")
	access := h.as.Tokens("access")
	if st.Token == nil || st.Token.Access != access[0] || st.Token.Resource != h.rs.MCPURL() {
		t.Fatalf("the store does not hold the issued token")
	}
	if c, ok := st.Clients[h.as.Issuer()]; !ok || c.Kind != "dcr" {
		t.Errorf("stored clients = %v, want the registration at %s", st.Clients, h.as.Issuer())
	}

	a2 := h.authorizer(oauth.Config{}, oauth.Options{Store: store, Key: "srv"})
	if s := a2.Status(); !s.SignedIn || !a2.Ready() {
		t.Errorf("the new Authorizer's Status = %+v, want signed in", s)
	}
	h.mustGet()
	if h.lastAuthorization() != "Bearer "+access[0] {
		t.Error("the new Authorizer did not send the stored token")
	}
	if n := len(h.as.Requests("")); n != 3 {
		t.Errorf("%d requests at the authorization server, want the first sign-in's 3 only", n)
	}
}

// An authorization server that cannot be reached during a refresh is an
// ordinary failure (retried with backoff), not a sign-in: the refresh
// token is kept and serves once the server is back.
func TestRefreshWhileAuthServerDown(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{ExpiresIn: 60})
	down := atomic.Bool{}
	base := http.DefaultTransport
	h.authorizer(oauth.Config{}, oauth.Options{HTTP: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if down.Load() && strings.HasPrefix(r.URL.String(), h.as.URL) {
			return nil, errors.New("connection refused")
		}
		return base.RoundTrip(r)
	})}})
	h.signIn()
	h.mustGet()
	down.Store(true)
	h.clock.Advance(2 * time.Minute) // expired
	_, err := h.get()
	if err == nil || errors.Is(err, oauth.ErrNeedsAuth) {
		t.Fatalf("GET with the authorization server down = %v; want a failure that is not ErrNeedsAuth", err)
	}
	if !h.a.Ready() {
		t.Fatal("the refresh token was dropped while the authorization server was down")
	}
	down.Store(false)
	h.mustGet()
	if n := len(h.as.Requests("authorize")); n != 1 {
		t.Errorf("%d authorization requests, want 1 (the refresh token served)", n)
	}
}

// A request whose body cannot be replayed is sent once: its 401 comes back
// as it is, with its body.
func TestUnreplayableBodyNotRetried(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	h.authorizer(oauth.Config{}, oauth.Options{})
	req, _ := http.NewRequest(http.MethodPost, h.rs.MCPURL(), io.NopCloser(strings.NewReader(`{}`)))
	req.GetBody = nil
	resp, err := h.hc.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "unauthorized") {
		t.Errorf("POST = %d %q, want the server's 401 as it was", resp.StatusCode, body)
	}
	if n := len(h.rs.Authorizations()); n != 1 {
		t.Errorf("%d requests reached the server, want 1", n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A server that refuses every token of a machine grant gets one new token
// per request, not a loop of them.
func TestClientCredentialsRefusedBounded(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	as.AddClient("svc", "s3cret")
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q]}`, srv.URL+"/mcp", as.Issuer())
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "no", http.StatusUnauthorized) // whatever the token
	}))
	t.Cleanup(srv.Close)
	a, err := oauth.New(oauth.Config{GrantType: oauth.GrantClientCredentials, ClientID: "svc", ClientSecret: "s3cret"},
		oauth.Options{Server: "test", URL: srv.URL + "/mcp", HTTP: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: a.Transport(http.DefaultTransport)}
	for i := 1; i <= 2; i++ {
		resp, err := hc.Get(srv.URL + "/mcp")
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, oauth.ErrNeedsAuth) {
			t.Fatalf("GET %d = %v, want ErrNeedsAuth", i, err)
		}
	}
	// One token per request: the one got before it was sent.
	if n := len(as.Requests("token")); n != 2 {
		t.Errorf("%d token requests for two refused requests, want 2", n)
	}
}

// Logout asks the authorization server to revoke the grant (RFC 7009)
// before forgetting it: the refresh token stops working there too.
func TestLogoutRevokes(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	a := h.authorizer(oauth.Config{}, oauth.Options{})
	h.signIn()
	h.mustGet()
	refresh := h.as.Tokens("refresh")
	if err := a.Logout(context.Background()); err != nil {
		t.Fatal(err)
	}
	revoked := h.as.Requests("revoke")
	if len(revoked) != 2 || revoked[0].Form.Get("token") != refresh[0] || revoked[0].Form.Get("token_type_hint") != "refresh_token" {
		t.Fatalf("revocation requests = %d, want the refresh token then the access token", len(revoked))
	}
	if _, _, live := h.as.Validate(h.as.Tokens("access")[0]); live {
		t.Error("the access token still works after logout")
	}
	if a.Ready() || a.Status().SignedIn {
		t.Error("the token is still held after logout")
	}
}

// A registered client whose secret expired (client_secret_expires_at)
// registers again at the next sign-in instead of failing with it.
func TestExpiredClientSecretReregisters(t *testing.T) {
	clock := &fakeClock{}
	h := newHarness(t, oauthtest.ServerOptions{SecretExpiresIn: 3600, AuthMethods: []string{"client_secret_basic"}, Now: clock.Now})
	h.clock = clock
	h.authorizer(oauth.Config{}, oauth.Options{})
	h.signIn()
	h.signIn() // the registration still serves
	if n := len(h.as.Requests("register")); n != 1 {
		t.Fatalf("%d registrations before the secret expired, want 1", n)
	}
	clock.Advance(2 * time.Hour)
	h.signIn()
	if n := len(h.as.Requests("register")); n != 2 {
		t.Errorf("%d registrations after the secret expired, want 2", n)
	}
	h.mustGet()
}

type idleCounter struct {
	http.RoundTripper
	closed atomic.Int32
}

func (c *idleCounter) CloseIdleConnections() { c.closed.Add(1) }

// http.Client.CloseIdleConnections reaches the transport underneath the
// Authorizer's: a connection's idle sockets close with it.
func TestTransportClosesIdleConnections(t *testing.T) {
	a, err := oauth.New(oauth.Config{}, oauth.Options{Server: "s", URL: "http://127.0.0.1:1/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	base := &idleCounter{RoundTripper: http.DefaultTransport}
	(&http.Client{Transport: a.Transport(base)}).CloseIdleConnections()
	if base.closed.Load() != 1 {
		t.Error("CloseIdleConnections did not reach the transport underneath")
	}
}
