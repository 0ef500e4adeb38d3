// Package oauthtest is an OAuth 2.1 authorization server and a protected
// MCP-like resource on loopback, for tests of the authorization client.
//
//	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
//	rs := oauthtest.NewResource(t, as)
//	// rs.MCPURL() answers 401 until a token of as's is presented.
//
// Both record what they receive; every method is safe for concurrent use.
package oauthtest

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// IssMode is what iss an authorization response carries (RFC 9207).
type IssMode int

const (
	IssCorrect IssMode = iota // the server's issuer
	IssMissing                // none
	IssWrong                  // another issuer's
)

// ServerOptions configure an AuthServer; the zero value is a server with
// PKCE, dynamic registration, iss in responses and rotating refresh tokens
// with reuse detection: a spent refresh token presented again revokes every
// token of its grant, as OAuth 2.1 §4.3.1 asks of public clients' rotating
// refresh tokens and providers do.
type ServerOptions struct {
	Path           string   // the issuer's path ("" or "/tenant")
	Scopes         []string // scopes_supported; nil: read write admin offline_access
	Withhold       []string // scopes never granted, even when asked for
	NoPKCE         bool     // omit code_challenge_methods_supported
	NoRegistration bool     // no registration_endpoint
	CIMD           bool     // client_id_metadata_document_supported
	AuthMethods    []string // token_endpoint_auth_methods_supported; nil: none, basic, post
	Iss            IssMode
	HideIssSupport bool // do not advertise authorization_response_iss_parameter_supported
	DPoPAlgs       []string
	ExpiresIn      int  // access token lifetime in seconds; 0: 3600
	NoRotation     bool // a refresh keeps the refresh token valid and issues none
	// HoldToken, when set, is called with the grant type of each token
	// request that succeeds, after its tokens are issued (and a refresh
	// token it spent is spent) and before the answer is written, outside
	// the server's lock: a test holds the answer back there, as a slow
	// provider does after it has rotated the refresh token.
	HoldToken func(grantType string)
	// SecretExpiresIn sets client_secret_expires_at of registrations, in
	// seconds from now; 0: never.
	SecretExpiresIn int
	// Device offers the device authorization grant (RFC 8628): a
	// device_authorization_endpoint, and the device_code grant type.
	// DeviceInterval is the polling interval it asks for, in seconds
	// (0 is sent as it is); DeviceExpiresIn a device code's lifetime
	// (0: 600 s). DeviceAnswers are the errors a device code's polls are
	// answered with, in order (authorization_pending, slow_down, ...),
	// before its decision (DecideDevice) counts; an undecided code is
	// authorization_pending.
	Device          bool
	DeviceInterval  int
	DeviceExpiresIn int
	DeviceAnswers   []string
	Now             func() time.Time
}

// Request is one request an AuthServer received.
type Request struct {
	Endpoint string     // "authorize", "token" or "register"
	Form     url.Values // the query, the form, or the registration's JSON fields
	ClientID string     // as presented: query, form or Basic authentication
}

type client struct {
	secret    string
	redirects []string
	grants    []string // registered grant_types; nil: any
}

type grant struct {
	kind     string // "access", "refresh" or "code"
	client   string
	scopes   []string
	resource string
	expiry   time.Time
	revoked  bool
	// family is the authorization a token descends from (the code's
	// value): reuse of a spent refresh token revokes the whole family.
	family string
	spent  bool // a refresh token that was rotated out
	// codes only
	redirect, challenge string
	// device codes only: the user code, the polls answered so far, and
	// the person's decision ("approve", "deny"; "": none yet)
	userCode, decision string
	polls              int
}

// AuthServer is an authorization server on loopback.
type AuthServer struct {
	*httptest.Server

	mu       sync.Mutex
	opts     ServerOptions
	clients  map[string]*client
	grants   map[string]*grant
	issued   []string // every token, code and secret, in order
	requests []Request
	reuses   int // spent refresh tokens presented again
}

// NewAuthServer starts an authorization server, closed when t ends.
func NewAuthServer(t testing.TB, opts ServerOptions) *AuthServer {
	s := &AuthServer{opts: opts, clients: map[string]*client{}, grants: map[string]*grant{}}
	p := opts.Path
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server"+p, s.metadata)
	mux.HandleFunc("GET "+p+"/authorize", s.authorize)
	mux.HandleFunc("POST "+p+"/token", s.token)
	mux.HandleFunc("POST "+p+"/register", s.register)
	mux.HandleFunc("POST "+p+"/revoke", s.revoke)
	mux.HandleFunc("POST "+p+"/device_authorization", s.deviceAuthorization)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Issuer is the server's issuer identifier.
func (s *AuthServer) Issuer() string { return s.URL + s.opts.Path }

// Configure changes the server's options while it runs.
func (s *AuthServer) Configure(f func(*ServerOptions)) {
	s.mu.Lock()
	f(&s.opts)
	s.mu.Unlock()
}

// AddClient pre-registers a client (secret "" for a public one).
func (s *AuthServer) AddClient(id, secret string) {
	s.mu.Lock()
	s.clients[id] = &client{secret: secret}
	s.mu.Unlock()
}

// Requests returns the requests received at endpoint ("" for all).
func (s *AuthServer) Requests(endpoint string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if endpoint == "" || r.Endpoint == endpoint {
			out = append(out, r)
		}
	}
	return out
}

// Issued returns every token, code and client secret issued so far: what
// must never appear in an error message.
func (s *AuthServer) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// Tokens returns the access ("access") or refresh ("refresh") tokens
// issued, oldest first.
func (s *AuthServer) Tokens(kind string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, v := range s.issued {
		if g := s.grants[v]; g != nil && g.kind == kind {
			out = append(out, v)
		}
	}
	return out
}

// Reuses is how many times a spent (rotated out) refresh token was
// presented again; each revoked its grant.
func (s *AuthServer) Reuses() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reuses
}

// Revoke revokes an access or refresh token; RevokeAll every one issued.
func (s *AuthServer) Revoke(token string) {
	s.mu.Lock()
	if g := s.grants[token]; g != nil {
		g.revoked = true
	}
	s.mu.Unlock()
}

func (s *AuthServer) RevokeAll() {
	s.mu.Lock()
	for _, g := range s.grants {
		g.revoked = true
	}
	s.mu.Unlock()
}

// Validate reports the scopes and resource of a live access token.
func (s *AuthServer) Validate(token string) (scopes []string, resource string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.grants[token]
	if g == nil || g.kind != "access" || g.revoked || !s.now().Before(g.expiry) {
		return nil, "", false
	}
	return slices.Clone(g.scopes), g.resource, true
}

func (s *AuthServer) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

// newSecret makes and records a random value; s.mu held.
func (s *AuthServer) newSecret(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	v := prefix + base64.RawURLEncoding.EncodeToString(b)
	s.issued = append(s.issued, v)
	return v
}

func (s *AuthServer) metadata(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	o := s.opts
	s.mu.Unlock()
	iss := s.Issuer()
	m := map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         iss + "/authorize",
		"token_endpoint":                                 iss + "/token",
		"revocation_endpoint":                            iss + "/revoke",
		"scopes_supported":                               orDefault(o.Scopes, []string{"read", "write", "admin", "offline_access"}),
		"token_endpoint_auth_methods_supported":          orDefault(o.AuthMethods, []string{"none", "client_secret_basic", "client_secret_post"}),
		"grant_types_supported":                          []string{"authorization_code", "refresh_token", "client_credentials"},
		"client_id_metadata_document_supported":          o.CIMD,
		"authorization_response_iss_parameter_supported": !o.HideIssSupport,
	}
	if !o.NoPKCE {
		m["code_challenge_methods_supported"] = []string{"S256"}
	}
	if !o.NoRegistration {
		m["registration_endpoint"] = iss + "/register"
	}
	if len(o.DPoPAlgs) > 0 {
		m["dpop_signing_alg_values_supported"] = o.DPoPAlgs
	}
	if o.Device {
		m["device_authorization_endpoint"] = iss + "/device_authorization"
		m["grant_types_supported"] = []string{"authorization_code", "refresh_token", "client_credentials", deviceGrant}
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := q.Get("client_id")
	s.requests = append(s.requests, Request{Endpoint: "authorize", Form: q, ClientID: id})
	c, redirect := s.clients[id], q.Get("redirect_uri")
	if c == nil && !(s.opts.CIMD && strings.HasPrefix(id, "https://")) || c != nil && !redirectAllowed(c.redirects, redirect) {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest) // never redirect then
		return
	}
	back := url.Values{"state": {q.Get("state")}}
	switch s.opts.Iss {
	case IssCorrect:
		back.Set("iss", s.Issuer())
	case IssWrong:
		back.Set("iss", "https://attacker.example")
	}
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		back.Set("error", "invalid_request")
	} else {
		code := s.newSecret("code-")
		s.grants[code] = &grant{kind: "code", client: id, scopes: s.grantable(strings.Fields(q.Get("scope"))),
			resource: q.Get("resource"), redirect: redirect, challenge: q.Get("code_challenge"), expiry: s.now().Add(time.Minute)}
		back.Set("code", code)
	}
	http.Redirect(w, r, redirect+"?"+back.Encode(), http.StatusFound)
}

// grantable is the requested scopes less the withheld ones; s.mu held.
func (s *AuthServer) grantable(requested []string) []string {
	return slices.DeleteFunc(slices.Clone(requested), func(sc string) bool { return slices.Contains(s.opts.Withhold, sc) })
}

// redirectAllowed matches registered redirect URIs, any port on loopback
// (RFC 8252 §7.3); a client registered with none accepts any.
func redirectAllowed(registered []string, got string) bool {
	if len(registered) == 0 {
		return true
	}
	g, err := url.Parse(got)
	if err != nil {
		return false
	}
	for _, r := range registered {
		u, err := url.Parse(r)
		if err == nil && (r == got || isLoopback(u.Hostname()) && u.Hostname() == g.Hostname() && u.Path == g.Path && u.Scheme == g.Scheme) {
			return true
		}
	}
	return false
}

func isLoopback(h string) bool {
	ip := net.ParseIP(h)
	return h == "localhost" || ip != nil && ip.IsLoopback()
}

func (s *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	s.mu.Lock()
	status, resp := s.grantLocked(f, id, secret)
	hold := s.opts.HoldToken
	s.mu.Unlock()
	if hold != nil && status == http.StatusOK {
		hold(f.Get("grant_type"))
	}
	if status == http.StatusOK {
		w.Header().Set("Cache-Control", "no-store")
	}
	writeJSON(w, status, resp)
}

// grantLocked answers a token request: the status and the JSON body.
// s.mu held.
func (s *AuthServer) grantLocked(f url.Values, id, secret string) (int, any) {
	s.requests = append(s.requests, Request{Endpoint: "token", Form: f, ClientID: id})
	c := s.clients[id]
	if c == nil && !(s.opts.CIMD && strings.HasPrefix(id, "https://")) || c != nil && c.secret != secret {
		return http.StatusUnauthorized, map[string]string{"error": "invalid_client"}
	}
	fail := func(desc string) (int, any) {
		return http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": desc}
	}
	var scopes []string
	var resource, family string
	refresh := true
	switch f.Get("grant_type") {
	case "authorization_code":
		g := s.grants[f.Get("code")]
		if g == nil || g.kind != "code" || g.revoked || g.client != id || !s.now().Before(g.expiry) {
			return fail("unknown or used code")
		}
		g.revoked = true // single use
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			return fail("PKCE verification failed")
		case f.Get("redirect_uri") != g.redirect:
			return fail("redirect_uri mismatch")
		case f.Get("resource") != g.resource:
			return fail("resource mismatch")
		}
		scopes, resource, family = g.scopes, g.resource, f.Get("code")
	case "refresh_token":
		g := s.grants[f.Get("refresh_token")]
		if g != nil && g.kind == "refresh" && g.spent {
			// Reuse of a rotated-out refresh token: whoever holds it may
			// be a thief, so the whole grant ends.
			s.reuses++
			s.revokeFamilyLocked(g.family)
			return fail("refresh token reused: the grant is revoked")
		}
		if g == nil || g.kind != "refresh" || g.revoked || g.client != id {
			return fail("unknown or revoked refresh token")
		}
		if res := f.Get("resource"); res != "" && res != g.resource {
			return fail("resource mismatch")
		}
		scopes, resource, family = g.scopes, g.resource, g.family
		if s.opts.NoRotation {
			refresh = false
		} else {
			g.revoked, g.spent = true, true
		}
	case deviceGrant:
		g := s.grants[f.Get("device_code")]
		if g == nil || g.kind != "device" || g.client != id {
			return fail("unknown device code")
		}
		if status, resp, done := s.pollLocked(g); done {
			return status, resp
		}
		if res := f.Get("resource"); res != "" && res != g.resource {
			return fail("resource mismatch")
		}
		scopes, resource, family = g.scopes, g.resource, f.Get("device_code")
	case "client_credentials":
		if c == nil || c.secret == "" {
			return http.StatusUnauthorized, map[string]string{"error": "invalid_client"}
		}
		scopes, resource, refresh = s.grantable(strings.Fields(f.Get("scope"))), f.Get("resource"), false
	default:
		return http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"}
	}
	expiresIn := cmp.Or(s.opts.ExpiresIn, 3600)
	at := s.newSecret("at-")
	s.grants[at] = &grant{kind: "access", client: id, scopes: scopes, resource: resource, family: family, expiry: s.now().Add(time.Duration(expiresIn) * time.Second)}
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": expiresIn, "scope": strings.Join(scopes, " ")}
	if refresh {
		rt := s.newSecret("rt-")
		s.grants[rt] = &grant{kind: "refresh", client: id, scopes: scopes, resource: resource, family: family}
		resp["refresh_token"] = rt
	}
	return http.StatusOK, resp
}

// revokeFamilyLocked revokes every token of the grant family; s.mu held.
func (s *AuthServer) revokeFamilyLocked(family string) {
	if family == "" {
		return
	}
	for _, g := range s.grants {
		if g.family == family {
			g.revoked = true
		}
	}
}

func (s *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
		ClientName   string   `json:"client_name"`
		GrantTypes   []string `json:"grant_types"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	form := url.Values{"redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": {req.AuthMethod}, "client_name": {req.ClientName}, "grant_types": req.GrantTypes}
	s.requests = append(s.requests, Request{Endpoint: "register", Form: form})
	c := &client{redirects: req.RedirectURIs, grants: req.GrantTypes}
	resp := map[string]any{"redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": cmp.Or(req.AuthMethod, "client_secret_basic")}
	if n := s.opts.SecretExpiresIn; n > 0 {
		resp["client_secret_expires_at"] = s.now().Add(time.Duration(n) * time.Second).Unix()
	}
	if req.AuthMethod != "none" {
		c.secret = s.newSecret("secret-")
		resp["client_secret"] = c.secret
	}
	id := "client-" + s.newSecret("")
	s.clients[id] = c
	resp["client_id"] = id
	writeJSON(w, http.StatusCreated, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func orDefault(v, def []string) []string {
	if v == nil {
		return def
	}
	return v
}

// revoke is RFC 7009 token revocation: the token in the form is revoked
// (an unknown one is fine, as the RFC says), recorded as "revoke".
func (s *AuthServer) revoke(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	s.mu.Lock()
	s.requests = append(s.requests, Request{Endpoint: "revoke", Form: r.PostForm})
	if g := s.grants[r.PostForm.Get("token")]; g != nil {
		g.revoked = true
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}
