package mcpvisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/outbound"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// Authorization of remote servers (the MCP specification's OAuth 2.1
// client; see internal/oauth). Every http and sse server without a static
// Authorization header has an authorizer: when the server answers 401 it
// discovers the authorization server, registers, and waits for a sign-in
// (state needs_auth) — or signs in by itself through Options.SignIn. Its
// token, refresh token and client registrations live in the secret store
// (DataDir/secrets.json, never the journal), and it is restarted as soon
// as a sign-in completes.

// SignInPrompt is one sign-in for a person to complete: open URL in a
// browser; the authorization server redirects to RedirectURI.
type SignInPrompt struct {
	Server string
	// User is the platform user to sign in (a per-user server); "" for
	// the host's own identity.
	User        string
	URL         string
	RedirectURI string
}

// SignInFunc drives the browser step of a sign-in for the embedder (it
// shows the URL to its user). It returns the query of the redirect that
// ended the flow (code, state, iss), or nil values to let the host's
// loopback listener on RedirectURI receive it.
type SignInFunc func(ctx context.Context, p SignInPrompt) (url.Values, error)

// AuthStatus is what may be shown of a server's authorization: never a
// token or a secret.
type AuthStatus = oauth.Status

// authorizers holds one authorizer per remote server.
type authorizers struct {
	mu sync.Mutex
	m  map[string]*authorizerEntry
	// perUser is set once any per-user server exists: until then a call
	// does not look its server up here.
	perUser atomic.Bool
	// clients make the authorization requests (discovery, registration,
	// tokens) of every authorizer, by AllowPrivate: they are rare, and one
	// client (one pool) per remote server would cost each of thousands of
	// servers a transport for nothing.
	clients [2]*http.Client
}

// client is the outbound client for authorization requests of servers
// that may (or may not) reach private addresses; h.auth.mu held.
func (as *authorizers) client(allowPrivate bool) *http.Client {
	i := 0
	if allowPrivate {
		i = 1
	}
	if as.clients[i] == nil {
		as.clients[i] = outbound.NewClient(outbound.Options{AllowPrivate: allowPrivate})
	}
	return as.clients[i]
}

type authorizerEntry struct {
	a       *oauth.Authorizer
	cfg     oauth.Config
	url     string
	priv    bool
	perUser bool
	spec    actors.ServerSpec        // the server's, for its users' instances
	users   map[string]*userInstance // perUser: by user
}

// userInstance is one user's instance of a per-user server: its own
// authorizer (token, registrations) and its own connection, run as a hidden
// server of the runtime.
type userInstance struct {
	a       *oauth.Authorizer
	name    string        // the runtime's name for it
	started chan struct{} // closed once it is registered
	err     error
}

// oauthStore is the secret store's oauth section, as oauth.Store.
type oauthStore struct{ s *secretStore }

func (o oauthStore) Load(key string) ([]byte, error) { return o.s.LoadOAuth(key) }

func (o oauthStore) Save(key string, b []byte) error { return o.s.SaveOAuth(key, b) }

// authorize gives spec its authorizer: the one it had when nothing it
// depends on changed (a sign-in in progress survives re-registration), a
// new one otherwise. A server with a static Authorization header or a
// headers helper gets none.
func (h *Host) authorize(spec *actors.ServerSpec, perUser bool) error {
	if spec.Transport == actors.TransportStdio || spec.URL == "" {
		return nil
	}
	if hasHeader(spec.Headers, "Authorization") || (len(spec.HeadersHelper) > 0 && spec.OAuth == nil) {
		h.dropAuth(spec.Name)
		return nil
	}
	var cfg oauth.Config
	if spec.OAuth != nil {
		cfg = *spec.OAuth
	}
	h.auth.mu.Lock()
	defer h.auth.mu.Unlock()
	if h.auth.m == nil {
		h.auth.m = map[string]*authorizerEntry{}
	}
	if e := h.auth.m[spec.Name]; e != nil && e.url == spec.URL && e.priv == spec.AllowPrivate && e.perUser == perUser && reflect.DeepEqual(e.cfg, cfg) {
		spec.Auth = e.a
		e.spec = *spec
		return nil
	} else if e != nil {
		h.stopUsers(e)
		h.closeLater(e.a) // its sign-ins end; the new one takes over
	}
	a, err := h.newAuthorizer(spec, cfg, "", spec.Name)
	if err != nil {
		return err
	}
	spec.Auth = a
	h.auth.m[spec.Name] = &authorizerEntry{a: a, cfg: cfg, url: spec.URL, priv: spec.AllowPrivate, perUser: perUser, spec: *spec}
	if perUser {
		h.auth.perUser.Store(true)
	}
	return nil
}

// newAuthorizer makes the authorizer of server spec for user ("" for the
// host's own identity); runtime names the server it restarts.
func (h *Host) newAuthorizer(spec *actors.ServerSpec, cfg oauth.Config, user, runtime string) (*oauth.Authorizer, error) {
	key := spec.Name
	if user != "" {
		key += "\x00" + user
	}
	var browser oauth.Browser
	if f := h.opts.SignIn; f != nil {
		browser = func(ctx context.Context, p oauth.Prompt) (url.Values, error) {
			return f(ctx, SignInPrompt{Server: spec.Name, User: user, URL: p.URL, RedirectURI: p.RedirectURI})
		}
	}
	a, err := oauth.New(cfg, oauth.Options{
		Server:  spec.Name,
		User:    user,
		URL:     spec.URL,
		HTTP:    h.auth.client(spec.AllowPrivate),
		Store:   oauthStore{h.secrets},
		Key:     key,
		Browser: browser,
		OnChange: func() {
			if h.rt != nil {
				h.rt.AuthChanged(runtime)
			}
		},
		Log: h.opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("server %q: oauth: %w", spec.Name, err)
	}
	return a, nil
}

// dropAuth forgets server's authorizer and stops its users' instances.
func (h *Host) dropAuth(name string) {
	h.auth.mu.Lock()
	if e := h.auth.m[name]; e != nil {
		h.stopUsers(e)
		h.closeLater(e.a)
	}
	delete(h.auth.m, name)
	h.auth.mu.Unlock()
}

// closeLater closes an authorizer no server uses any more, in the
// background (a sign-in's hook may take a moment to return), as one of the
// host's tasks, which Close waits for.
func (h *Host) closeLater(a *oauth.Authorizer) {
	h.tasksWG.Add(1)
	go func() {
		defer h.tasksWG.Done()
		a.Close()
	}()
}

// stopUsersOf stops the users' instances of server, if it is per-user.
func (h *Host) stopUsersOf(server string) {
	h.auth.mu.Lock()
	defer h.auth.mu.Unlock()
	if e := h.auth.m[server]; e != nil {
		h.stopUsers(e)
	}
}

// stopUsers stops the users' instances of e, in the background (h.auth.mu
// held).
func (h *Host) stopUsers(e *authorizerEntry) {
	for _, u := range e.users {
		name := u.name
		h.tasksWG.Add(1)
		go func() {
			defer h.tasksWG.Done()
			<-u.started
			if u.a != nil {
				u.a.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = h.rt.Unregister(ctx, name)
		}()
	}
	e.users = nil
}

// instanceFor returns the runtime's name for the server a call for user
// goes to: server itself, or, for a per-user server, user's own instance,
// started on first use.
func (h *Host) instanceFor(ctx context.Context, server, user string) (string, error) {
	if !h.auth.perUser.Load() {
		return server, nil
	}
	h.auth.mu.Lock()
	e := h.auth.m[server]
	if e == nil || !e.perUser {
		h.auth.mu.Unlock()
		return server, nil
	}
	if user == "" {
		h.auth.mu.Unlock()
		return "", fmt.Errorf("%w: server %q signs each user in on their own (oauth.perUser): set CallOptions.User", ErrNoUser, server)
	}
	if st, ok := h.rt.ServerStatus(server); ok && !st.Enabled {
		h.auth.mu.Unlock()
		return server, nil // disabled: the server itself says so
	}
	u := e.users[user]
	if u == nil {
		u = &userInstance{name: instanceName(server, user), started: make(chan struct{})}
		spec := e.spec
		spec.Name, spec.Hidden, spec.LastCatalog = u.name, true, nil
		u.a, u.err = h.newAuthorizer(&e.spec, e.cfg, user, u.name)
		if e.users == nil {
			e.users = map[string]*userInstance{}
		}
		e.users[user] = u
		h.auth.mu.Unlock()
		if u.err == nil {
			spec.Auth = u.a
			u.err = h.rt.Register(context.WithoutCancel(ctx), spec)
		}
		if u.err != nil {
			// Not kept: the user's next call tries again.
			h.auth.mu.Lock()
			if e.users[user] == u {
				delete(e.users, user)
			}
			h.auth.mu.Unlock()
		}
		close(u.started)
	} else {
		h.auth.mu.Unlock()
	}
	select {
	case <-u.started:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return u.name, u.err
}

// instanceName is the runtime's name for user's instance of server: the
// server's name and a digest of the user's (a user id never appears in a
// file name, a log or a metric).
func instanceName(server, user string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + user))
	return server + "-u" + hex.EncodeToString(sum[:8])
}

// userAuthorizer returns user's authorizer of a per-user server, starting
// the user's instance if needed.
func (h *Host) userAuthorizer(ctx context.Context, server, user string) (*oauth.Authorizer, error) {
	if user == "" {
		return h.authorizer(server)
	}
	if _, err := h.instanceFor(ctx, server, user); err != nil {
		return nil, err
	}
	h.auth.mu.Lock()
	defer h.auth.mu.Unlock()
	e := h.auth.m[server]
	if e == nil || !e.perUser {
		return nil, fmt.Errorf("server %q does not sign users in on their own (oauth.perUser)", server)
	}
	return e.users[user].a, nil
}

func (as *authorizers) get(name string) *oauth.Authorizer {
	as.mu.Lock()
	defer as.mu.Unlock()
	if e := as.m[name]; e != nil {
		return e.a
	}
	return nil
}

// authorizer returns server's authorizer, or an error saying why it has
// none.
func (h *Host) authorizer(server string) (*oauth.Authorizer, error) {
	if a := h.auth.get(server); a != nil {
		return a, nil
	}
	if _, ok := h.rt.ServerStatus(server); !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownServer, server)
	}
	return nil, fmt.Errorf("server %q does not use OAuth (a stdio server, or one with a static Authorization header or a headers helper)", server)
}

// SignIn is a sign-in in progress: the URL to open, and its end.
type SignIn struct {
	Server      string
	URL         string
	RedirectURI string
	flow        *oauth.Flow
}

// Done is closed when the sign-in has ended; Err then tells how.
func (s *SignIn) Done() <-chan struct{} { return s.flow.Done() }

// Err is the sign-in's outcome once Done is closed (nil: signed in).
func (s *SignIn) Err() error { return s.flow.Err() }

// BeginSignIn starts server's sign-in: discovery, client registration and
// the authorization URL, returned for a person to open. The host listens
// for the redirect on the loopback redirect URI (the server's
// oauth.callbackPort, else a free port) until it arrives; an embedder that
// receives the redirect itself hands its query to CompleteSignIn. Once
// signed in, the server starts again by itself.
func (h *Host) BeginSignIn(ctx context.Context, server string) (*SignIn, error) {
	a, err := h.authorizer(server)
	if err != nil {
		return nil, err
	}
	f, err := a.Begin(ctx)
	if err != nil {
		return nil, err
	}
	h.rt.AuthChanged(server) // status: sign-in pending
	return &SignIn{Server: server, URL: f.URL, RedirectURI: f.RedirectURI, flow: f}, nil
}

// CompleteSignIn ends server's sign-in with the query of the redirect (code,
// state, iss): the authorization response is checked (state, RFC 9207 iss)
// and the code redeemed.
func (h *Host) CompleteSignIn(ctx context.Context, server string, redirect url.Values) error {
	a, err := h.authorizer(server)
	if err != nil {
		return err
	}
	// The state names the flow: the host's own, or one of its users'.
	h.auth.mu.Lock()
	if e := h.auth.m[server]; e != nil && !a.HasFlow(redirect.Get("state")) {
		for _, u := range e.users {
			if u.a != nil && u.a.HasFlow(redirect.Get("state")) {
				a = u.a
			}
		}
	}
	h.auth.mu.Unlock()
	return a.Complete(ctx, redirect)
}

// BeginUserSignIn is BeginSignIn for one platform user of a per-user server
// (oauth.perUser): the token it gets serves only calls for that user.
func (h *Host) BeginUserSignIn(ctx context.Context, server, user string) (*SignIn, error) {
	a, err := h.userAuthorizer(ctx, server, user)
	if err != nil {
		return nil, err
	}
	f, err := a.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &SignIn{Server: server, URL: f.URL, RedirectURI: f.RedirectURI, flow: f}, nil
}

// SignOutUser forgets one user's token of a per-user server.
func (h *Host) SignOutUser(ctx context.Context, server, user string) error {
	a, err := h.userAuthorizer(ctx, server, user)
	if err != nil {
		return err
	}
	return a.Logout(ctx)
}

// SignInWith runs a whole sign-in of server with f doing the browser step
// (for a machine grant, client credentials or enterprise-managed, it gets
// a token without f). It returns once signed in.
func (h *Host) SignInWith(ctx context.Context, server string, f SignInFunc) error {
	a, err := h.authorizer(server)
	if err != nil {
		return err
	}
	err = a.SignIn(ctx, func(ctx context.Context, p oauth.Prompt) (url.Values, error) {
		h.rt.AuthChanged(server)
		if f == nil {
			return nil, errors.New("no browser to sign in with")
		}
		return f(ctx, SignInPrompt{Server: p.Server, URL: p.URL, RedirectURI: p.RedirectURI})
	})
	h.rt.AuthChanged(server)
	return err
}

// SignOut forgets server's token and client registrations; the server
// needs a sign-in again at its next 401.
func (h *Host) SignOut(ctx context.Context, server string) error {
	a, err := h.authorizer(server)
	if err != nil {
		return err
	}
	if err := a.Logout(ctx); err != nil {
		return err
	}
	h.rt.AuthChanged(server)
	return nil
}

// closeAuth ends every sign-in in progress, the host's and its users'.
func (h *Host) closeAuth() {
	h.auth.mu.Lock()
	var as []*oauth.Authorizer
	for _, e := range h.auth.m {
		as = append(as, e.a)
		for _, u := range e.users {
			if u.a != nil {
				as = append(as, u.a)
			}
		}
	}
	h.auth.mu.Unlock()
	for _, a := range as {
		a.Close()
	}
}

// AuthStatuses reports the authorization of every server that has an
// authorizer, by name.
func (h *Host) AuthStatuses() []AuthStatus {
	h.auth.mu.Lock()
	names := make([]string, 0, len(h.auth.m))
	for n := range h.auth.m {
		names = append(names, n)
	}
	h.auth.mu.Unlock()
	slices.Sort(names)
	out := make([]AuthStatus, 0, len(names))
	for _, n := range names {
		h.auth.mu.Lock()
		e := h.auth.m[n]
		var as []*oauth.Authorizer
		if e != nil {
			as = append(as, e.a)
			for _, u := range slices.Sorted(maps.Keys(e.users)) {
				if e.users[u].a != nil {
					as = append(as, e.users[u].a)
				}
			}
		}
		h.auth.mu.Unlock()
		for _, a := range as {
			out = append(out, a.Status())
		}
	}
	return out
}

// authorizeUnstarted gives a server that Options.Only leaves unstarted its
// authorizer, so that its sign-in can be shown and changed (auth status,
// auth logout) without starting it.
func (h *Host) authorizeUnstarted(rec persistence.ServerRecord) {
	sc, err := recordConfig(rec)
	if err != nil {
		return
	}
	spec, err := serverSpec(sc, h.lookupFor(sc.Name), h.opts.Environ)
	if err != nil {
		return
	}
	_ = h.authorize(&spec, sc.OAuth != nil && sc.OAuth.PerUser)
}
