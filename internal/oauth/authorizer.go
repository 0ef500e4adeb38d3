package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/outbound"
)

// Config is one server's authorization configuration. The zero value
// discovers everything and registers dynamically.
type Config struct {
	// GrantType: GrantAuthorizationCode (default; a person signs in) or
	// GrantClientCredentials (machine to machine), or GrantJWTBearer for
	// enterprise-managed authorization (an identity provider's ID token
	// exchanged for an authorization grant).
	GrantType string
	// Pre-registered client credentials; ClientSecret may be empty for a
	// public client.
	ClientID     string
	ClientSecret string
	// TokenEndpointAuthMethod overrides the choice of client_secret_basic,
	// client_secret_post, none or private_key_jwt.
	TokenEndpointAuthMethod string
	// PrivateKey (PEM) signs RFC 7523 client assertions
	// (private_key_jwt); SigningAlg names the algorithm (default from the
	// key: ES256, RS256, EdDSA), KeyID its kid.
	PrivateKey string
	SigningAlg string
	KeyID      string
	// Scopes are requested instead of those discovery would choose.
	Scopes []string
	// RedirectURI receives the authorization response; a loopback URI
	// (http://localhost:PORT/callback) is listened on during sign-in. Port
	// 0 or empty: a free port is chosen per sign-in.
	RedirectURI string
	// AuthServerMetadataURL skips discovery of the authorization server.
	AuthServerMetadataURL string
	// ClientMetadataURL is this client's Client ID Metadata Document (an
	// https URL used as client_id where the server supports it).
	ClientMetadataURL string
	// ClientName is sent in dynamic registrations.
	ClientName string
	// DPoP says when tokens are bound to a key of the Authorizer's (RFC
	// 9449). The zero value, DPoPAuto, binds them only when the protected
	// resource asks for it.
	DPoP DPoPMode
	// Enterprise-managed authorization (GrantJWTBearer): the identity
	// provider's token endpoint, this client there, and the ID token to
	// exchange for an identity assertion grant.
	IDPTokenEndpoint string
	IDPClientID      string
	IDPClientSecret  string
	IDToken          string
	// Assertion is a JWT the workload already holds (workload identity
	// federation), presented as the GrantJWTBearer assertion as it is.
	Assertion string
	// AllowPrivate lets the authorization requests reach loopback and
	// private addresses other than the server's own origin (never
	// link-local): the host's clients honour it (internal/signin), the
	// Authorizer only names it in errors.
	AllowPrivate bool
}

// DPoPMode says when an Authorizer binds its tokens to a key (RFC 9449).
type DPoPMode int

const (
	// DPoPAuto binds tokens only when the protected resource asks for
	// it: its metadata (RFC 9728: dpop_bound_access_tokens_required, or
	// dpop_signing_alg_values_supported present), or a 401 that
	// challenges with DPoP and not Bearer. That the authorization server
	// supports DPoP says nothing of the resource server, which may
	// accept Bearer only.
	DPoPAuto DPoPMode = iota
	// DPoPOn always binds tokens (the config's "dpop": true).
	DPoPOn
	// DPoPOff never does (the config's "dpop": false), whatever the
	// metadata says.
	DPoPOff
)

// Options are an Authorizer's surroundings.
type Options struct {
	// Server names the server in messages; User, when set, is the platform
	// user this Authorizer signs in (one Authorizer per user).
	Server string
	User   string
	// URL is the server's endpoint: the resource tokens are for.
	URL string
	// HTTP makes every authorization request (discovery, registration,
	// token). nil: a client with the outbound guard (public addresses only).
	HTTP *http.Client
	// Store keeps the State under Key. nil: kept in memory only.
	Store Store
	Key   string
	// CallbackURI is the host's own redirect URI (a sidecar's public URL):
	// used when Config.RedirectURI is empty, and never listened on; the
	// host hands the redirect's query to Complete.
	CallbackURI string
	// Browser, when set, signs in by itself whenever the server needs it
	// (the CLI's browser, an embedder's hook, a test's fetcher). nil: sign-in
	// waits for SignIn or Begin.
	Browser Browser
	// OnChange is called (on its own goroutine) when a token is obtained,
	// or sign-in is needed: the host restarts a server waiting for it.
	OnChange func()
	Log      *slog.Logger
	Now      func() time.Time
}

// Authorizer is one server's authorization for one user. Safe for
// concurrent use.
type Authorizer struct {
	cfg  Config
	opts Options
	http *http.Client

	signer *assertioner // private_key_jwt
	origin *url.URL     // the server's URL: tokens go to its scheme and host only

	// life ends with Close: background sign-ins stop with it.
	life context.Context
	stop context.CancelFunc

	// grant serialises refreshes and machine grants: concurrent requests
	// that find the token expired get one new token, and a rotated refresh
	// token is never spent twice.
	grant sync.Mutex
	// refreshes joins the refresh goroutines (Close waits for them);
	// refreshLife ends them, cancelled by Close only after that wait.
	refreshes     sync.WaitGroup
	refreshLife   context.Context
	endRefreshes  context.CancelFunc
	refreshClosed bool         // Close began: no refresh starts; a.mu
	refreshing    *refreshCall // the refresh in flight; a.mu
	// polls joins the pollers of sign-ins with a code (device.go); Close
	// waits for them. waitPoll, when set (tests), stands in for their
	// timer.
	polls    sync.WaitGroup
	waitPoll func(done <-chan struct{}, d time.Duration) bool
	// unsaved: the last Save failed, so the Store holds an older state
	// than a.st, not a newer one of another Authorizer's; a.mu.
	unsaved bool

	mu        sync.Mutex
	st        State
	loaded    bool
	challenge Challenge // the last 401 or 403 challenge
	disc      *Discovery
	dpop      *dpopKey
	nonces    map[string]string // DPoP nonce by origin
	flows     map[string]*Flow  // by state
	signing   chan struct{}     // closed when the sign-in in progress ends
	autoTried bool              // automatic sign-in was tried since the token last worked
	fresh     bool              // the token has not yet been accepted by the server
	lastErr   string
	needs     bool // the server needs sign-in
	// refusedScopes were asked for in a step-up and not granted: asking
	// again cannot help. Cleared by SignIn.
	refusedScopes map[string]bool
	// machineFailed: a machine grant was refused; it is not retried
	// until SignIn (a refused assertion stays refused).
	machineFailed bool
	// noRefreshOnce logs, once, that a sign-in brought no refresh token.
	noRefreshOnce sync.Once
}

// New returns an Authorizer of cfg for the server opts names.
func New(cfg Config, opts Options) (*Authorizer, error) {
	if opts.HTTP == nil {
		opts.HTTP = outbound.NewClient(outbound.Options{})
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if cfg.GrantType == "" {
		cfg.GrantType = GrantAuthorizationCode
	}
	switch cfg.GrantType {
	case GrantAuthorizationCode, GrantClientCredentials, GrantJWTBearer:
	default:
		return nil, fmt.Errorf("oauth: grant type %q: want %s, %s or %s", cfg.GrantType, GrantAuthorizationCode, GrantClientCredentials, GrantJWTBearer)
	}
	origin, err := url.Parse(opts.URL)
	if err != nil || origin.Host == "" {
		return nil, fmt.Errorf("oauth: server %q: %q is not an absolute URL", opts.Server, opts.URL)
	}
	a := &Authorizer{cfg: cfg, opts: opts, http: opts.HTTP, origin: origin, nonces: map[string]string{}, flows: map[string]*Flow{}}
	a.life, a.stop = context.WithCancel(context.Background())
	a.refreshLife, a.endRefreshes = context.WithCancel(context.Background())
	if cfg.PrivateKey != "" {
		s, err := newAssertioner(cfg.PrivateKey, cfg.SigningAlg, cfg.KeyID)
		if err != nil {
			return nil, err
		}
		a.signer = s
	}
	return a, nil
}

func (a *Authorizer) now() time.Time { return a.opts.Now() }

// interactive reports whether tokens come from a person signing in.
func (a *Authorizer) interactive() bool { return a.cfg.GrantType == GrantAuthorizationCode }

// load reads the stored state once; a.mu held.
func (a *Authorizer) loadLocked() {
	if a.loaded {
		return
	}
	a.loaded = true
	if a.opts.Store == nil {
		return
	}
	b, err := a.opts.Store.Load(a.opts.Key)
	if err != nil {
		a.lastErr = "reading the stored token: " + err.Error()
		a.opts.Log.Warn("oauth: reading the stored token", "server", a.opts.Server, "err", err)
		return
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &a.st); err != nil {
			a.lastErr = "the stored token is unreadable; sign in again"
			a.opts.Log.Warn("oauth: the stored token is unreadable", "server", a.opts.Server)
		}
	}
	if a.st.Token != nil && a.st.Token.Resource != "" && !resourceMatches(a.st.Token.Resource, a.opts.URL) {
		// Issued for another URL than the server's now: never send it.
		a.st.Token = nil
	}
}

// saveLocked stores the state durably; a.mu held.
func (a *Authorizer) saveLocked() error {
	if a.opts.Store == nil {
		return nil
	}
	var b []byte
	if a.st.Token != nil || len(a.st.Clients) > 0 || a.st.DPoPKey != "" {
		var err error
		if b, err = json.Marshal(&a.st); err != nil {
			return err
		}
	}
	if err := a.opts.Store.Save(a.opts.Key, b); err != nil {
		a.unsaved = true
		a.opts.Log.Warn("oauth: storing the token", "server", a.opts.Server, "err", err)
		return fmt.Errorf("oauth: storing the token: %w", err)
	}
	a.unsaved = false
	return nil
}

// setToken installs a newly issued token, stores it and tells the host.
func (a *Authorizer) setToken(t *Token) error {
	a.mu.Lock()
	a.st.Token = t
	a.fresh, a.needs, a.lastErr = true, false, ""
	err := a.saveLocked()
	a.mu.Unlock()
	a.changed()
	return err
}

func (a *Authorizer) changed() {
	if f := a.opts.OnChange; f != nil {
		go f()
	}
}

// Close ends every sign-in in progress (their listeners close, a
// background sign-in stops) and waits for a background one to return. A
// token refresh in flight is not cancelled but waited for, up to
// closeRefreshWait: the authorization server may already have rotated the
// refresh token, and only the answer holds its successor. The token stays
// stored. Close may be called more than once; no refresh starts after it.
func (a *Authorizer) Close() {
	a.stop()
	a.mu.Lock()
	flows := a.flows
	a.flows = map[string]*Flow{}
	a.refreshClosed = true
	inFlight := a.refreshing != nil
	a.mu.Unlock()
	for _, f := range flows {
		f.end(fmt.Errorf("%w: the host is closing", ErrAuthorization))
	}
	a.Wait(context.Background())
	a.polls.Wait()
	if inFlight {
		a.opts.Log.Info("oauth: waiting for the token refresh in flight", "server", a.opts.Server)
	}
	a.waitRefreshes(closeRefreshWait)
	a.http.CloseIdleConnections()
}

// HasFlow reports whether a sign-in with this state is in progress.
func (a *Authorizer) HasFlow(state string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.flowLocked(state) != nil
}

// Ready reports whether the Authorizer has a token to try: a server
// waiting for sign-in can start again. (A machine grant that was refused
// waits, like a person's sign-in, for SignIn or a new configuration.)
func (a *Authorizer) Ready() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked()
	return a.st.Token != nil
}

// Logout forgets the token (and the client registrations: the next sign-in
// starts afresh), after asking the authorization server to revoke it
// (RFC 7009) where it offers that. A revocation that fails is logged; the
// token is forgotten all the same.
func (a *Authorizer) Logout(ctx context.Context) error {
	a.mu.Lock()
	a.loadLocked()
	t := a.st.Token
	a.mu.Unlock()
	if t != nil {
		a.revoke(ctx, t)
	}
	a.mu.Lock()
	a.st = State{DPoPKey: a.st.DPoPKey}
	a.disc = nil
	a.fresh = false
	err := a.saveLocked()
	a.mu.Unlock()
	return err
}

// revoke asks t's authorization server to revoke its refresh token (which
// ends the grant) and its access token, and logs what it revoked. Many
// providers refuse to revoke access tokens that are JWTs (they cannot call
// back a self-contained token: RFC 7009 §2.2.1, unsupported_token_type);
// that refusal is no failure: the refresh token is what matters, and the
// access token expires on its own.
func (a *Authorizer) revoke(ctx context.Context, t *Token) {
	d, err := a.discovery(ctx)
	if err != nil || d.Server.Issuer != t.Issuer || d.Server.RevocationEndpoint == "" {
		return
	}
	ec, err := a.endpointClient(ctx, d)
	if err != nil {
		return
	}
	var revoked []string
	for _, tok := range []struct{ value, hint, name string }{{t.Refresh, "refresh_token", "refresh token"}, {t.Access, "access_token", "access token"}} {
		if tok.value == "" {
			continue
		}
		form := url.Values{"token": {tok.value}, "token_type_hint": {tok.hint}}
		err := a.plainRequest(ctx, d.Server.RevocationEndpoint, ec, form)
		var ee *endpointError
		switch {
		case err == nil:
			revoked = append(revoked, tok.name)
		case tok.hint == "access_token" && errors.As(err, &ee) && ee.status == http.StatusBadRequest && ee.body.Code == "unsupported_token_type":
			a.opts.Log.Info("oauth: the provider does not revoke access tokens; it expires on its own", "server", a.opts.Server, "expiry", t.Expiry)
		default:
			a.opts.Log.Warn("oauth: revoking the "+tok.name, "server", a.opts.Server, "err", a.redact(err.Error()))
		}
	}
	if len(revoked) > 0 {
		a.opts.Log.Info("oauth: revoked the "+strings.Join(revoked, " and the "), "server", a.opts.Server, "issuer", t.Issuer)
	}
}

// Status is what may be shown of an Authorizer: never a token or secret.
type Status struct {
	Server    string    `json:"server"`
	User      string    `json:"user,omitempty"`
	Grant     string    `json:"grant"`
	Issuer    string    `json:"issuer,omitempty"`
	Client    string    `json:"clientKind,omitempty"` // preregistered, cimd, dcr
	SignedIn  bool      `json:"signedIn"`
	NeedsAuth bool      `json:"needsAuth"`
	Scopes    []string  `json:"scopes,omitempty"`
	Expiry    time.Time `json:"expiry,omitzero"`
	Refresh   bool      `json:"refreshable"`
	TokenType string    `json:"tokenType,omitempty"`
	Error     string    `json:"error,omitempty"`
	Pending   bool      `json:"signInPending"`
	// Warning is what the user should know of a token that works: that
	// the provider issued no refresh token, so sign-in will be asked for
	// again when it expires.
	Warning string `json:"warning,omitempty"`
}

// Status reports the Authorizer's state.
func (a *Authorizer) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked()
	s := Status{Server: a.opts.Server, User: a.opts.User, Grant: a.cfg.GrantType, NeedsAuth: a.needs, Error: a.lastErr, Pending: len(a.flows) > 0 || a.signing != nil}
	if t := a.st.Token; t != nil {
		s.SignedIn = true
		s.Issuer, s.Scopes, s.Expiry, s.Refresh, s.TokenType = t.Issuer, slices.Clone(t.Scopes), t.Expiry, t.Refresh != "", t.Type
		if c, ok := a.st.Clients[t.Issuer]; ok {
			s.Client = c.Kind
		}
		if t.Refresh == "" && a.interactive() {
			s.Warning = noRefreshNote(t, a.now())
		}
	}
	return s
}

// noRefreshNote says plainly what a token without a refresh token means
// for the person who signed in.
func noRefreshNote(t *Token, now time.Time) string {
	const note = "the provider issued no refresh token: you will be asked to sign in again when the access token expires"
	switch {
	case t.Expiry.IsZero():
		return note
	case t.Expiry.After(now):
		return fmt.Sprintf("%s (in %s)", note, t.Expiry.Sub(now).Round(time.Second))
	}
	return fmt.Sprintf("%s (it expired %s ago)", note, now.Sub(t.Expiry).Round(time.Second))
}

// currentToken returns the token to send, refreshing it first when it is
// about to expire; nil when there is none. The error is a refresh of an
// expired token that failed for want of the authorization server (not a
// refusal): the request fails like any unreachable server's.
func (a *Authorizer) currentToken(ctx context.Context) (*Token, error) {
	a.mu.Lock()
	a.loadLocked()
	t := a.st.Token
	a.mu.Unlock()
	if t == nil || !t.refreshDue(a.now()) {
		return t, nil
	}
	if t.Refresh != "" {
		nt, err := a.refresh(ctx, t)
		if err == nil {
			return nt, nil
		}
		if t.expiresWithin(a.now(), 0) && !refused(err) {
			return nil, fmt.Errorf("refreshing the token of server %q: %s", a.opts.Server, a.redact(err.Error()))
		}
	}
	if t.expiresWithin(a.now(), 0) {
		a.dropToken(t) // expired and not refreshable: the server will say 401
		return nil, nil
	}
	return t, nil
}

// dropToken forgets t if it is still the current token.
func (a *Authorizer) dropToken(t *Token) {
	a.mu.Lock()
	if a.st.Token == t {
		a.st.Token = nil
		_ = a.saveLocked()
	}
	a.mu.Unlock()
}

// failed records err for Status and the log, and returns it.
func (a *Authorizer) failed(what string, err error) error {
	msg := a.redact(err.Error())
	a.mu.Lock()
	a.lastErr = what + ": " + msg
	a.mu.Unlock()
	a.opts.Log.Warn("oauth: "+what, "server", a.opts.Server, "err", msg)
	return err
}

// redact removes the secrets the Authorizer knows from s.
func (a *Authorizer) redact(s string) string {
	a.mu.Lock()
	var secrets []string
	if t := a.st.Token; t != nil {
		secrets = append(secrets, t.Access, t.Refresh)
	}
	for _, c := range a.st.Clients {
		secrets = append(secrets, c.Secret)
	}
	a.mu.Unlock()
	secrets = append(secrets, a.cfg.ClientSecret, a.cfg.IDPClientSecret, a.cfg.IDToken, a.cfg.Assertion)
	return outbound.Redact(s, secrets...)
}

// discovery returns the server's discovery, running it on first use and
// again after a challenge that points elsewhere.
func (a *Authorizer) discovery(ctx context.Context) (*Discovery, error) {
	a.mu.Lock()
	d, ch := a.disc, a.challenge
	a.mu.Unlock()
	if d != nil {
		return d, nil
	}
	d, err := discover(ctx, a.http, a.opts.URL, ch, a.cfg.AuthServerMetadataURL)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.disc = d
	a.mu.Unlock()
	return d, nil
}

// noteChallenge records a 401's or 403's challenge; one that names other
// resource metadata than the last makes discovery run again.
func (a *Authorizer) noteChallenge(ch Challenge) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.disc != nil && ch.ResourceMetadata() != a.challenge.ResourceMetadata() {
		a.disc = nil
	}
	a.challenge = ch
}

// forgetDiscovery makes the next request discover again (after a 401 that
// may mean the server changed its authorization server).
func (a *Authorizer) forgetDiscovery() {
	a.mu.Lock()
	a.disc = nil
	a.mu.Unlock()
}

// nonce and setNonce keep the last DPoP nonce per origin (RFC 9449 §8, §9).
func (a *Authorizer) nonce(target string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nonces[originOf(target)]
}

func (a *Authorizer) setNonce(target, n string) {
	a.mu.Lock()
	a.nonces[originOf(target)] = n
	a.mu.Unlock()
}

func originOf(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		if j := strings.IndexByte(raw[i+3:], '/'); j >= 0 {
			return strings.ToLower(raw[:i+3+j])
		}
	}
	return strings.ToLower(raw)
}

// wantDPoP reports whether tokens for the resource d describes are to be
// DPoP-bound under mode: "dpop": false never, "dpop": true always, else
// only when the resource asks for it: in its metadata (RFC 9728), or by
// challenging with the DPoP scheme alone (ch is the challenge acted on,
// Bearer whenever the resource offered it; RFC 9449 §7.1). The
// authorization server's dpop_signing_alg_values_supported is not asked:
// most providers advertise DPoP, and a token bound to a key is refused by
// a resource server that accepts Bearer only.
func wantDPoP(mode DPoPMode, d *Discovery, ch Challenge) bool {
	switch mode {
	case DPoPOff:
		return false
	case DPoPOn:
		return true
	}
	if ch.Scheme == "dpop" {
		return true
	}
	return d != nil && d.PRM != nil && (d.PRM.DPoPBoundAccessTokensRequired || len(d.PRM.DPoPSigningAlgValuesSupported) > 0)
}

// dpopKeyFor returns the DPoP key, made (and stored) on first use, when
// tokens for d's resource are to be DPoP-bound (wantDPoP). d nil: the key
// of a DPoP token already held.
func (a *Authorizer) dpopKeyFor(d *Discovery) (*dpopKey, error) {
	if d != nil {
		a.mu.Lock()
		ch := a.challenge
		a.mu.Unlock()
		if !wantDPoP(a.cfg.DPoP, d, ch) {
			return nil, nil
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked()
	if a.dpop != nil {
		return a.dpop, nil
	}
	k, pemKey, err := newDPoPKey(a.st.DPoPKey)
	if err != nil {
		return nil, err
	}
	a.dpop = k
	if a.st.DPoPKey != pemKey {
		a.st.DPoPKey = pemKey
		_ = a.saveLocked()
	}
	return k, nil
}
