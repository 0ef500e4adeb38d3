package oauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/outbound"
)

// signInTimeout bounds a sign-in a Browser runs by itself.
const signInTimeout = 10 * time.Minute

// A Browser shows a person the authorization URL and returns the query of
// the redirect that ended the flow (code, state, iss; or error). It may
// return nil values and no error: the redirect then reaches the loopback
// listener the flow opened on its redirect URI.
type Browser func(ctx context.Context, p Prompt) (url.Values, error)

// Prompt is one sign-in to show.
type Prompt struct {
	Server string
	// URL is what to open in a browser: with a loopback redirect URI, the
	// flow's one-time start URL on its listener (Flow.URL), which holds no
	// secret; else the authorization URL.
	URL string
	// AuthorizationURL is the authorization server's URL itself, state and
	// PKCE challenge in its query: for a Browser that follows the flow on
	// its own and returns the redirect's query. Never put it on a command
	// line (any local user can read one), and note that the loopback
	// listener refuses a redirect whose browser did not come through URL.
	AuthorizationURL string
	RedirectURI      string
}

// startPath is where a flow's loopback listener answers its one-time start
// URL: startPath + an id of its own.
const startPath = "/mcpvisor-sign-in/"

// Flow is one authorization code flow in progress.
type Flow struct {
	// URL is what to open in a browser. With a loopback redirect URI it is
	// a one-time URL on the flow's own listener (http://localhost:PORT/
	// mcpvisor-sign-in/ID) that redirects to AuthorizationURL once: it
	// can go on a command line ($BROWSER's), where any local user may read
	// it, for whoever opens it first gets the sign-in and the listener then
	// refuses the rest (a second visit ends the flow). Without a listener it is
	// AuthorizationURL.
	URL string
	// AuthorizationURL is the authorization server's URL, with state and
	// the PKCE challenge.
	AuthorizationURL string
	RedirectURI      string
	// Device is set on a sign-in with a code (BeginDevice): what the
	// person enters, and where. URL is then the verification URI.
	Device *DeviceCode

	state    string
	verifier string
	startID  string // the one-time start URL's; "" without a listener
	scopes   []string
	disc     *Discovery
	client   Client
	lns      []net.Listener
	srv      *http.Server
	expiry   *time.Timer
	done     chan struct{} // closed when Complete ends it
	err      error

	// started is set when the start URL is first visited: only then does
	// the listener take a redirect.
	started atomic.Bool
}

// Done is closed when the flow has ended; Err then tells how.
func (f *Flow) Done() <-chan struct{} { return f.done }

// Err is the flow's outcome once Done is closed.
func (f *Flow) Err() error { return f.err }

// Begin starts the authorization code flow: discovery, the client's
// identity, PKCE, and the authorization URL to open. The redirect's query
// goes to Complete; a loopback redirect URI is also listened on.
func (a *Authorizer) Begin(ctx context.Context) (*Flow, error) {
	return a.begin(ctx, nil)
}

func (a *Authorizer) begin(ctx context.Context, extra []string) (*Flow, error) {
	if !a.interactive() {
		return nil, fmt.Errorf("oauth: server %q uses the %s grant: there is nothing to sign in to", a.opts.Server, a.cfg.GrantType)
	}
	d, err := a.discovery(ctx)
	if err != nil {
		return nil, a.failed("signing in", err)
	}
	m := d.Server
	if !hasString(m.CodeChallengeMethodsSupported, "S256") {
		return nil, a.failed("signing in", fmt.Errorf("%w: %s does not advertise PKCE S256 (code_challenge_methods_supported)", ErrUnsupported, m.Issuer))
	}
	if m.AuthorizationEndpoint == "" || m.TokenEndpoint == "" {
		return nil, a.failed("signing in", fmt.Errorf("%w: %s lacks an authorization or token endpoint", ErrDiscovery, m.Issuer))
	}
	f := &Flow{state: randomString(24), verifier: randomString(48), disc: d, done: make(chan struct{})}
	// Without a configured callback port, the port registered last time
	// with this issuer, if it is free: a registration is tied to its
	// redirect URI, and a new port would mean a new registration.
	want := a.cfg.RedirectURI
	if want == "" && a.opts.CallbackURI != "" {
		want = a.opts.CallbackURI // the host serves it: listenRedirect opens no listener
	} else if want == "" {
		a.mu.Lock()
		a.loadLocked()
		if c, ok := a.st.Clients[m.Issuer]; ok && c.Kind == "dcr" {
			want = c.RedirectURI
		}
		a.mu.Unlock()
	}
	if want == a.opts.CallbackURI && want != "" {
		f.RedirectURI = want
	} else {
		f.RedirectURI, f.lns, err = listenRedirect(want)
	}
	if err != nil && want != a.cfg.RedirectURI {
		f.RedirectURI, f.lns, err = listenRedirect(a.cfg.RedirectURI) // that port is taken now
	}
	if err != nil {
		return nil, a.failed("signing in", err)
	}
	f.client, err = a.clientFor(ctx, d, f.RedirectURI)
	if err != nil {
		f.close()
		return nil, a.failed("signing in", err)
	}
	f.scopes = a.scopes(d, extra)
	sum := sha256.Sum256([]byte(f.verifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {f.client.ID},
		"redirect_uri":          {f.RedirectURI},
		"state":                 {f.state},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
		"resource":              {d.Resource},
	}
	if len(f.scopes) > 0 {
		q.Set("scope", strings.Join(f.scopes, " "))
	}
	if slices.Contains(f.scopes, "offline_access") {
		// OpenID Connect Core §11: an OpenID Provider ignores
		// offline_access unless the request asks for consent, and then
		// issues no refresh token.
		q.Set("prompt", "consent")
	}
	if k, err := a.dpopKeyFor(d); err == nil && k != nil {
		q.Set("dpop_jkt", k.thumbprint())
	}
	sep := "?"
	if strings.Contains(m.AuthorizationEndpoint, "?") {
		sep = "&"
	}
	f.AuthorizationURL = m.AuthorizationEndpoint + sep + q.Encode()
	f.URL = f.AuthorizationURL
	// hosted: the host serves the redirect (Options.CallbackURI), and the
	// start URL beside it (OpenStart), as a listener serves both.
	hosted := len(f.lns) == 0 && f.RedirectURI == a.opts.CallbackURI
	if len(f.lns) > 0 || hosted {
		f.startID = randomString(24)
		u, _ := url.Parse(f.RedirectURI)
		p := startPath + f.startID
		if hosted {
			// Beside the callback: /oauth/callback → /mcpvisor-sign-in/ID,
			// under the same prefix.
			p = path.Join(path.Dir(path.Dir(u.Path)), p)
		}
		f.URL = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: p}).String()
	}
	// A new sign-in supersedes the ones not completed (a second click, a
	// browser tab closed): their listeners close; none outlives
	// signInTimeout.
	a.mu.Lock()
	old := a.flows
	a.flows = map[string]*Flow{f.state: f}
	a.mu.Unlock()
	for _, o := range old {
		o.end(fmt.Errorf("%w: superseded by a newer sign-in", ErrAuthorization))
	}
	f.expiry = time.AfterFunc(signInTimeout, func() { a.abandon(f) })
	if len(f.lns) > 0 {
		f.serve(a)
	}
	return f, nil
}

// scopes chooses what to ask for: the configured scopes; else the
// challenge's (plus extra, the scopes already granted, on step-up); else all
// of the resource's scopes_supported; else none. offline_access is added
// when the authorization server advertises it.
func (a *Authorizer) scopes(d *Discovery, extra []string) []string {
	a.mu.Lock()
	ch := a.challenge
	a.mu.Unlock()
	var s []string
	switch {
	case len(a.cfg.Scopes) > 0:
		// The configured scopes, and what the server says it needs.
		s = union(a.cfg.Scopes, ch.Scopes())
	case len(ch.Scopes()) > 0:
		s = ch.Scopes()
	case d.PRM != nil && len(d.PRM.ScopesSupported) > 0:
		s = slices.Clone(d.PRM.ScopesSupported)
	}
	for _, e := range extra {
		if !slices.Contains(s, e) {
			s = append(s, e)
		}
	}
	if len(s) > 0 && hasString(d.Server.ScopesSupported, "offline_access") && !slices.Contains(s, "offline_access") && a.interactive() {
		s = append(s, "offline_access")
	}
	return s
}

// Complete ends the flow the redirect's query q belongs to (by its state):
// it checks iss (RFC 9207) and redeems the code.
func (a *Authorizer) Complete(ctx context.Context, q url.Values) error {
	return a.completeFlow(ctx, nil, q)
}

// completeFlow is Complete; with only set, the state must be only's (a
// redirect that reached only's listener).
func (a *Authorizer) completeFlow(ctx context.Context, only *Flow, q url.Values) error {
	a.mu.Lock()
	f := a.flowLocked(q.Get("state"))
	if f != nil && (only == nil || f == only) {
		delete(a.flows, f.state)
	} else {
		f = nil
	}
	a.mu.Unlock()
	if f == nil {
		return fmt.Errorf("%w for server %q (state unknown or already used)", ErrNoFlow, a.opts.Server)
	}
	err := a.complete(ctx, f, q)
	f.end(err)
	if err != nil {
		return a.failed("signing in", err)
	}
	return nil
}

func (a *Authorizer) complete(ctx context.Context, f *Flow, q url.Values) error {
	m := f.disc.Server
	iss, hasIss := q["iss"]
	switch {
	case hasIss && (len(iss) != 1 || iss[0] != m.Issuer):
		// Compared as strings, never normalised (RFC 9207 §2.4).
		return fmt.Errorf("%w: the redirect's iss %q is not the authorization server %q (mix-up attack?)", ErrAuthorization, strings.Join(iss, ","), m.Issuer)
	case !hasIss && m.AuthorizationResponseIssParameterSupported:
		return fmt.Errorf("%w: %s advertises iss in authorization responses but the redirect has none", ErrAuthorization, m.Issuer)
	}
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		return fmt.Errorf("%w: %s", ErrAuthorization, msg)
	}
	code := q.Get("code")
	if code == "" {
		return fmt.Errorf("%w: the redirect carries no code", ErrAuthorization)
	}
	ec, err := a.endpointClientWith(f.client, f.disc)
	if err != nil {
		return err
	}
	form := url.Values{
		"grant_type":    {GrantAuthorizationCode},
		"code":          {code},
		"redirect_uri":  {f.RedirectURI},
		"code_verifier": {f.verifier},
		"resource":      {f.disc.Resource},
	}
	tr, err := a.tokenRequest(ctx, m.TokenEndpoint, ec, form)
	if err != nil {
		return err
	}
	t, err := a.toToken(tr, m.Issuer, f.disc.Resource, f.scopes, nil)
	if err != nil {
		return err
	}
	a.opts.Log.Info("oauth: signed in", "server", a.opts.Server, "issuer", m.Issuer, "scopes", strings.Join(t.Scopes, " "))
	if t.Refresh == "" {
		a.noRefreshOnce.Do(func() {
			a.opts.Log.Warn("oauth: "+noRefreshNote(t, a.now()), "server", a.opts.Server, "issuer", m.Issuer)
		})
	}
	return a.setToken(t)
}

// SignIn runs a whole sign-in with browser: Begin, the browser step, and
// Complete (with the values it returns, or the redirect the loopback
// listener receives).
// A machine grant (no person) is simply tried again.
func (a *Authorizer) SignIn(ctx context.Context, browser Browser) error {
	a.mu.Lock()
	a.refusedScopes = nil
	a.mu.Unlock()
	if !a.interactive() {
		a.mu.Lock()
		a.machineFailed = false
		a.mu.Unlock()
		_, err := a.obtain(ctx)
		return err
	}
	return a.signIn(ctx, browser, nil)
}

func (a *Authorizer) signIn(ctx context.Context, browser Browser, extra []string) error {
	f, err := a.begin(ctx, extra)
	if err != nil {
		return err
	}
	defer a.abandon(f)
	q, err := browser(ctx, Prompt{Server: a.opts.Server, URL: f.URL, AuthorizationURL: f.AuthorizationURL, RedirectURI: f.RedirectURI})
	if err != nil {
		return a.failed("signing in", err)
	}
	if q != nil {
		return a.Complete(ctx, q)
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return a.failed("signing in", fmt.Errorf("%w: no redirect arrived: %v", ErrAuthorization, ctx.Err()))
	}
}

// abandon ends f if nothing completed it.
func (a *Authorizer) abandon(f *Flow) {
	a.abandonWith(f, fmt.Errorf("%w: abandoned", ErrAuthorization))
}

// abandonWith ends f with err if nothing completed it.
func (a *Authorizer) abandonWith(f *Flow, err error) {
	a.mu.Lock()
	open := a.flows[f.state] == f
	if open {
		delete(a.flows, f.state)
	}
	a.mu.Unlock()
	if open {
		f.end(err)
	}
}

// flowLocked returns the flow in progress whose state is state, compared
// in constant time; a.mu held.
func (a *Authorizer) flowLocked(state string) *Flow {
	var found *Flow
	for s, f := range a.flows {
		if subtle.ConstantTimeCompare([]byte(s), []byte(state)) == 1 {
			found = f
		}
	}
	return found
}

func (f *Flow) end(err error) {
	select {
	case <-f.done:
		return
	default:
	}
	f.err = err
	close(f.done)
	f.close()
}

func (f *Flow) close() {
	if f.expiry != nil {
		f.expiry.Stop()
	}
	for _, ln := range f.lns {
		ln.Close() // the port is free for the next sign-in at once
	}
	if f.srv != nil {
		// Shut down, not closed: the browser's "signed in" page is being
		// written by the handler that ended the flow.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = f.srv.Shutdown(ctx)
		}()
	}
}

// listenRedirect opens the loopback listeners of a loopback redirect URI
// (http on localhost, 127.0.0.1 or ::1; port 0 or none: a free port) and
// returns the URI with its actual port. Other redirect URIs are returned as
// they are: the embedder receives the redirect.
func listenRedirect(uri string) (string, []net.Listener, error) {
	if uri == "" {
		uri = "http://localhost:0/callback"
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", nil, fmt.Errorf("oauth: redirect URI %q: %v", uri, err)
	}
	host := u.Hostname()
	if u.Scheme != "http" || (host != "localhost" && host != "127.0.0.1" && host != "::1") {
		return uri, nil, nil
	}
	var lns []net.Listener
	if host == "::1" {
		ln, err := net.Listen("tcp6", net.JoinHostPort("::1", u.Port()))
		if err != nil {
			return "", nil, fmt.Errorf("oauth: listening for the redirect on %s: %v", u.Host, err)
		}
		lns = []net.Listener{ln}
	} else if lns, err = listenLoopback(u.Port()); err != nil {
		return "", nil, fmt.Errorf("oauth: listening for the redirect on %s: %v", u.Host, err)
	}
	u.Host = net.JoinHostPort(host, fmt.Sprint(lns[0].Addr().(*net.TCPAddr).Port))
	if u.Path == "" {
		u.Path = "/callback"
	}
	return u.String(), lns, nil
}

// loopbackAttempts bounds the free ports listenLoopback tries whose [::1]
// side someone else holds.
const loopbackAttempts = 8

// listenLoopback listens on port (0: a free one) of both loopback
// families, 127.0.0.1 and [::1]: a browser may resolve localhost to
// either, and a port held on one family only would let another local
// process take the redirect on the other. Where the machine has no IPv6
// loopback it listens on 127.0.0.1 alone. A free port whose [::1] side is
// taken is given up for another; a fixed one is an error.
func listenLoopback(port string) ([]net.Listener, error) {
	var lastErr error
	for range loopbackAttempts {
		ln4, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			return nil, err
		}
		p := fmt.Sprint(ln4.Addr().(*net.TCPAddr).Port)
		ln6, err := net.Listen("tcp6", net.JoinHostPort("::1", p))
		switch {
		case err == nil:
			return []net.Listener{ln4, ln6}, nil
		case noIPv6Loopback(err):
			return []net.Listener{ln4}, nil
		}
		// Taken, or failing for a reason not known to be harmless: the
		// 127.0.0.1 side alone would leave [::1] to whoever holds it.
		ln4.Close()
		lastErr = err
		if port != "0" && port != "" {
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("port %s is taken on [::1] by another process: %w", port, err)
			}
			return nil, fmt.Errorf("listening on [::1]:%s: %w", port, err)
		}
	}
	return nil, fmt.Errorf("%d free ports on 127.0.0.1 could not be held on [::1] too: %w", loopbackAttempts, lastErr)
}

// noIPv6Loopback reports whether err, from listening on [::1], says the
// machine has no IPv6 loopback (IPv6 disabled or absent), as opposed to
// the port being held.
func noIPv6Loopback(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EPROTONOSUPPORT)
}

// ErrStartUsed is OpenStart's error for a start URL opened before.
var ErrStartUsed = fmt.Errorf("%w: the sign-in URL was opened more than once; sign in again", ErrAuthorization)

// open is the opening of f's start URL: the authorization URL the first
// time. Opened twice, the URL went somewhere else too (it was on a command
// line), and whoever came first may be signing in to an account of their
// own: the sign-in is abandoned, and ErrStartUsed.
func (a *Authorizer) open(f *Flow) (string, error) {
	if f.started.Swap(true) {
		a.abandonWith(f, ErrStartUsed)
		return "", ErrStartUsed
	}
	return f.AuthorizationURL, nil
}

// OpenStart opens the start URL with id of one of a's sign-ins: false if
// none has that id.
func (a *Authorizer) OpenStart(id string) (string, bool, error) {
	a.mu.Lock()
	var found *Flow
	for _, f := range a.flows {
		if f.startID != "" && subtle.ConstantTimeCompare([]byte(id), []byte(f.startID)) == 1 {
			found = f
		}
	}
	a.mu.Unlock()
	if found == nil {
		return "", false, nil
	}
	u, err := a.open(found)
	return u, true, err
}

// serveStart answers the opening of a start URL with what OpenStart gave:
// a redirect to the authorization URL, or why not.
func serveStart(w http.ResponseWriter, r *http.Request, authURL string, err error) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	switch {
	case errors.Is(err, ErrStartUsed):
		http.Error(w, "This sign-in link was already used; the sign-in is cancelled. Start it again.", http.StatusGone)
	case err != nil || authURL == "":
		http.NotFound(w, r)
	default:
		http.Redirect(w, r, authURL, http.StatusSeeOther)
	}
}

// serve answers the flow's one-time start URL and the redirect on the
// flow's loopback listeners.
func (f *Flow) serve(a *Authorizer) {
	u, _ := url.Parse(f.RedirectURI)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+startPath+"{id}", func(w http.ResponseWriter, r *http.Request) {
		authURL, err := "", ErrNoFlow
		if subtle.ConstantTimeCompare([]byte(r.PathValue("id")), []byte(f.startID)) == 1 {
			authURL, err = a.open(f)
		}
		serveStart(w, r, authURL, err)
	})
	mux.HandleFunc("GET "+u.Path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		var err error
		if !f.started.Load() {
			// Nobody opened the start URL: this is not the browser's
			// redirect.
			err = fmt.Errorf("%w for server %q: the sign-in was not started from this machine's link", ErrNoFlow, a.opts.Server)
		} else {
			err = a.completeFlow(r.Context(), f, r.URL.Query())
		}
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<!doctype html><title>Sign-in failed</title><p>Sign-in to %s failed: %s</p>", html.EscapeString(a.opts.Server), html.EscapeString(err.Error()))
			return
		}
		fmt.Fprintf(w, "<!doctype html><title>Signed in</title><p>Signed in to %s. You can close this window.</p>", html.EscapeString(a.opts.Server))
	})
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	for _, ln := range f.lns {
		go f.srv.Serve(ln)
	}
}

// clientFor returns the client identity to use with d's authorization
// server, in the specification's priority: pre-registered credentials, a
// Client ID Metadata Document, a registration stored for this issuer (same
// redirect URI), Dynamic Client Registration.
func (a *Authorizer) clientFor(ctx context.Context, d *Discovery, redirectURI string) (Client, error) {
	m := d.Server
	if a.cfg.ClientID != "" {
		return Client{ID: a.cfg.ClientID, Secret: a.cfg.ClientSecret, AuthMethod: a.authMethod(m, a.cfg.ClientSecret != ""), RedirectURI: redirectURI, Kind: "preregistered"}, nil
	}
	if a.cfg.ClientMetadataURL != "" && m.ClientIDMetadataDocumentSupported {
		return Client{ID: a.cfg.ClientMetadataURL, AuthMethod: AuthNone, RedirectURI: redirectURI, Kind: "cimd"}, nil
	}
	a.mu.Lock()
	a.loadLocked()
	c, ok := a.st.Clients[m.Issuer]
	a.mu.Unlock()
	expired := !c.SecretExpires.IsZero() && !a.now().Before(c.SecretExpires)
	if ok && !expired && (c.RedirectURI == "" || c.RedirectURI == redirectURI || !a.interactive()) {
		return c, nil
	}
	if m.RegistrationEndpoint == "" {
		return Client{}, fmt.Errorf("%w: %s offers no dynamic client registration and no client id is configured (set oauth.clientId%s)", ErrUnsupported, m.Issuer, cimdHint(m))
	}
	c, err := a.register(ctx, m, redirectURI)
	if err != nil {
		return Client{}, err
	}
	a.mu.Lock()
	if a.st.Clients == nil {
		a.st.Clients = map[string]Client{}
	}
	a.st.Clients[m.Issuer] = c
	err = a.saveLocked()
	a.mu.Unlock()
	return c, err
}

func cimdHint(m *ServerMetadata) string {
	if m.ClientIDMetadataDocumentSupported {
		return " or oauth.clientMetadataUrl"
	}
	return ""
}

// authMethod chooses how a client with (or without) a secret authenticates
// at m's token endpoint: the configured method, else the first the server
// supports of basic, post (with a secret) or none (without); basic when it
// lists none (RFC 8414's default).
func (a *Authorizer) authMethod(m *ServerMetadata, secret bool) string {
	if a.cfg.TokenEndpointAuthMethod != "" {
		return a.cfg.TokenEndpointAuthMethod
	}
	if a.signer != nil {
		return AuthPrivateJWT
	}
	if !secret {
		return AuthNone
	}
	if len(m.TokenEndpointAuthMethodsSupported) == 0 {
		return AuthBasic
	}
	for _, want := range []string{AuthBasic, AuthPost} {
		if hasString(m.TokenEndpointAuthMethodsSupported, want) {
			return want
		}
	}
	return AuthBasic
}

// registration is an RFC 7591 client registration request and response.
type registration struct {
	ClientName              string   `json:"client_name,omitempty"`
	RedirectURIs            []string `json:"redirect_uris,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	ApplicationType         string   `json:"application_type,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
	ClientID                string   `json:"client_id,omitempty"`
	ClientSecret            string   `json:"client_secret,omitempty"`
	ClientSecretExpiresAt   int64    `json:"client_secret_expires_at,omitempty"`
}

// register registers this client with m (RFC 7591): a native application
// on a loopback redirect, a web one otherwise; public ("none") where the
// server allows it, else a confidential client with the secret it issues.
func (a *Authorizer) register(ctx context.Context, m *ServerMetadata, redirectURI string) (Client, error) {
	name := a.cfg.ClientName
	if name == "" {
		name = "mcpvisor"
	}
	method := AuthNone
	if a.cfg.TokenEndpointAuthMethod != "" {
		method = a.cfg.TokenEndpointAuthMethod
	} else if len(m.TokenEndpointAuthMethodsSupported) > 0 && !hasString(m.TokenEndpointAuthMethodsSupported, AuthNone) {
		method = m.TokenEndpointAuthMethodsSupported[0]
		for _, want := range []string{AuthBasic, AuthPost} {
			if hasString(m.TokenEndpointAuthMethodsSupported, want) {
				method = want
				break
			}
		}
	}
	req := registration{
		ClientName:              name,
		TokenEndpointAuthMethod: method,
		ApplicationType:         "native",
	}
	if a.interactive() {
		req.RedirectURIs = []string{redirectURI}
		req.GrantTypes = []string{GrantAuthorizationCode, GrantRefreshToken}
		if offersDevice(m) {
			// One registration serves both sign-ins: with a browser and
			// with a code.
			req.GrantTypes = append(req.GrantTypes, GrantDeviceCode)
		}
		req.ResponseTypes = []string{"code"}
		if u, err := url.Parse(redirectURI); err == nil && u.Scheme == "https" {
			req.ApplicationType = "web"
		}
	} else {
		req.GrantTypes = []string{a.cfg.GrantType}
	}
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, m.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return Client{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	resp, err := a.http.Do(hr)
	if err != nil {
		return Client{}, fmt.Errorf("%w: registering with %s: %w", ErrUnsupported, outbound.Where(m.RegistrationEndpoint), unwrapURL(err))
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var te tokenError
		_ = json.Unmarshal(b, &te)
		return Client{}, fmt.Errorf("%w: %s refused the registration: HTTP %d %s %s", ErrUnsupported, outbound.Where(m.RegistrationEndpoint), resp.StatusCode, te.Code, te.Description)
	}
	var got registration
	if err := json.Unmarshal(b, &got); err != nil || got.ClientID == "" {
		return Client{}, fmt.Errorf("%w: %s answered the registration without a client_id", ErrUnsupported, outbound.Where(m.RegistrationEndpoint))
	}
	c := Client{ID: got.ClientID, Secret: got.ClientSecret, AuthMethod: got.TokenEndpointAuthMethod, RedirectURI: redirectURI, Kind: "dcr"}
	if got.ClientSecretExpiresAt > 0 {
		c.SecretExpires = time.Unix(got.ClientSecretExpiresAt, 0)
	}
	if c.AuthMethod == "" {
		c.AuthMethod = method
	}
	a.opts.Log.Info("oauth: registered", "server", a.opts.Server, "issuer", m.Issuer)
	return c, nil
}

// endpointClient is the client identity for d's token endpoint, for
// refreshes and machine grants.
func (a *Authorizer) endpointClient(ctx context.Context, d *Discovery) (endpointClient, error) {
	a.mu.Lock()
	a.loadLocked()
	c, ok := a.st.Clients[d.Server.Issuer]
	a.mu.Unlock()
	if !ok || a.cfg.ClientID != "" || (a.cfg.ClientMetadataURL != "" && d.Server.ClientIDMetadataDocumentSupported) {
		var err error
		if c, err = a.clientFor(ctx, d, a.cfg.RedirectURI); err != nil {
			return endpointClient{}, err
		}
	}
	return a.endpointClientWith(c, d)
}

func (a *Authorizer) endpointClientWith(c Client, d *Discovery) (endpointClient, error) {
	k, err := a.dpopKeyFor(d)
	if err != nil {
		return endpointClient{}, err
	}
	aud := d.Server.Issuer
	return endpointClient{client: c, audience: aud, signer: a.signer, dpop: k}, nil
}
