// Package signin holds a host's OAuth authorizers: one per remote server
// that may need a sign-in, and, for a server that signs each platform user
// in on their own (oauth.perUser), one per user, each with an instance of
// the server of its own, run as a hidden server of the runtime.
//
// It decides which authorizer a server gets (the one it had when nothing
// it depends on changed, so a sign-in in progress survives
// re-registration), which runtime server a call for a user goes to, and
// which authorizer a redirect belongs to. The authorizers themselves
// (discovery, registration, the code flow, tokens) are internal/oauth's.
//
// Authorizers owns the goroutines it starts (closing replaced authorizers,
// stopping users' instances); Close ends every sign-in in progress and
// joins them.
package signin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/secrets"
)

// ErrNoUser: a call to a per-user server (oauth.perUser) names no user.
var ErrNoUser = errors.New("the call names no user")

// Runtime is what the authorizers need of the server runtime
// (*actors.Runtime): users' instances are its servers, and a change of a
// server's authorization is news for its status.
type Runtime interface {
	Register(ctx context.Context, specs ...actors.ServerSpec) error
	Unregister(ctx context.Context, name string) error
	AuthChanged(name string)
	AuthChangedWait(ctx context.Context, name string) error
	ServerStatus(name string) (actors.ServerStatus, bool)
}

// Browser drives the browser step of a sign-in of server for user ("" for
// the host's own identity): see oauth.Browser.
type Browser func(ctx context.Context, server, user string, p oauth.Prompt) (url.Values, error)

// Options configure Authorizers.
type Options struct {
	Runtime Runtime
	Store   oauth.Store // tokens and registrations, by key
	Browser Browser     // nil: sign-ins wait for a person (BeginSignIn)
	// CallbackURI is the host's own redirect URI (oauth.Options.CallbackURI);
	// "": a loopback listener per sign-in.
	CallbackURI string
	Log         *slog.Logger
}

// Authorizers holds the authorizers of a host's remote servers. Safe for
// concurrent use.
type Authorizers struct {
	o  Options
	wg sync.WaitGroup // closeLater and stopUsers

	mu sync.Mutex
	m  map[string]*entry
	// clients make the authorization requests (discovery, registration,
	// tokens) of every authorizer, by what they may reach (authClient).
	clients [clientKinds]*http.Client
	// perUser is set once any per-user server exists: until then a call
	// does not look its server up here.
	perUser atomic.Bool
}

type entry struct {
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

// New returns an empty set of authorizers.
func New(o Options) *Authorizers {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Authorizers{o: o, m: map[string]*entry{}}
}

// Authorize gives spec its authorizer (spec.Auth): the one it had when
// nothing it depends on changed, a new one otherwise. A stdio server, or
// one with a static Authorization header or a headers helper (and no oauth
// section), gets none.
func (as *Authorizers) Authorize(spec *actors.ServerSpec, perUser bool) error {
	if spec.Transport == actors.TransportStdio || spec.URL == "" {
		return nil
	}
	if config.HasHeader(spec.Headers, "Authorization") || (len(spec.HeadersHelper) > 0 && spec.OAuth == nil) {
		as.Drop(spec.Name)
		return nil
	}
	var cfg oauth.Config
	if spec.OAuth != nil {
		cfg = *spec.OAuth
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if e := as.m[spec.Name]; e != nil && e.url == spec.URL && e.priv == spec.AllowPrivate && e.perUser == perUser && reflect.DeepEqual(e.cfg, cfg) {
		spec.Auth = e.a
		e.spec = *spec
		return nil
	} else if e != nil {
		as.stopUsers(e)
		as.closeLater(e.a) // its sign-ins end; the new one takes over
	}
	a, err := as.newAuthorizer(spec, cfg, "", spec.Name)
	if err != nil {
		return err
	}
	spec.Auth = a
	as.m[spec.Name] = &entry{a: a, cfg: cfg, url: spec.URL, priv: spec.AllowPrivate, perUser: perUser, spec: *spec}
	if perUser {
		as.perUser.Store(true)
	}
	return nil
}

// newAuthorizer makes the authorizer of server spec for user ("" for the
// host's own identity); runtime names the server it restarts. as.mu held.
func (as *Authorizers) newAuthorizer(spec *actors.ServerSpec, cfg oauth.Config, user, runtime string) (*oauth.Authorizer, error) {
	key := spec.Name
	if user != "" {
		key += "\x00" + user
	}
	var browser oauth.Browser
	if f := as.o.Browser; f != nil {
		server := spec.Name
		browser = func(ctx context.Context, p oauth.Prompt) (url.Values, error) { return f(ctx, server, user, p) }
	}
	a, err := oauth.New(cfg, oauth.Options{
		Server:      spec.Name,
		User:        user,
		URL:         spec.URL,
		HTTP:        as.authClient(spec.URL, spec.AllowPrivate, cfg.AllowPrivate),
		Store:       as.o.Store,
		Key:         key,
		Browser:     browser,
		CallbackURI: as.o.CallbackURI,
		OnChange:    func() { as.o.Runtime.AuthChanged(runtime) },
		Log:         as.o.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("server %q: oauth: %w", spec.Name, err)
	}
	return a, nil
}

// Drop forgets server's authorizer and stops its users' instances.
func (as *Authorizers) Drop(name string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if e := as.m[name]; e != nil {
		as.stopUsers(e)
		as.closeLater(e.a)
	}
	delete(as.m, name)
}

// closeLater closes an authorizer no server uses any more, in the
// background (a sign-in's hook may take a moment to return); Close waits
// for it.
func (as *Authorizers) closeLater(a *oauth.Authorizer) {
	as.wg.Go(a.Close)
}

// StopUsersOf stops the users' instances of server, if it is per-user.
func (as *Authorizers) StopUsersOf(server string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if e := as.m[server]; e != nil {
		as.stopUsers(e)
	}
}

// stopUsers stops the users' instances of e, in the background (as.mu
// held).
func (as *Authorizers) stopUsers(e *entry) {
	for _, u := range e.users {
		as.wg.Go(func() {
			<-u.started
			if u.a != nil {
				u.a.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = as.o.Runtime.Unregister(ctx, u.name)
		})
	}
	e.users = nil
}

// InstanceFor returns the runtime's name for the server a call for user
// goes to: server itself, or, for a per-user server, user's own instance,
// started on first use (ErrNoUser without a user).
func (as *Authorizers) InstanceFor(ctx context.Context, server, user string) (string, error) {
	if !as.perUser.Load() {
		return server, nil
	}
	as.mu.Lock()
	e := as.m[server]
	if e == nil || !e.perUser {
		as.mu.Unlock()
		return server, nil
	}
	if user == "" {
		as.mu.Unlock()
		return "", fmt.Errorf("%w: server %q signs each user in on their own (oauth.perUser): set CallOptions.User", ErrNoUser, server)
	}
	if st, ok := as.o.Runtime.ServerStatus(server); ok && !st.Enabled {
		as.mu.Unlock()
		return server, nil // disabled: the server itself says so
	}
	u := e.users[user]
	if u == nil {
		u = &userInstance{name: InstanceName(server, user), started: make(chan struct{})}
		spec := e.spec
		spec.Name, spec.Hidden, spec.LastCatalog = u.name, true, nil
		u.a, u.err = as.newAuthorizer(&e.spec, e.cfg, user, u.name)
		if e.users == nil {
			e.users = map[string]*userInstance{}
		}
		e.users[user] = u
		as.mu.Unlock()
		if u.err == nil {
			spec.Auth = u.a
			u.err = as.o.Runtime.Register(context.WithoutCancel(ctx), spec)
		}
		if u.err != nil {
			// Not kept: the user's next call tries again.
			as.mu.Lock()
			if e.users[user] == u {
				delete(e.users, user)
			}
			as.mu.Unlock()
		}
		close(u.started)
	} else {
		as.mu.Unlock()
	}
	select {
	case <-u.started:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return u.name, u.err
}

// InstanceName is the runtime's name for user's instance of server: the
// server's name and a digest of the user's (a user id never appears in a
// file name, a log or a metric).
func InstanceName(server, user string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + user))
	return server + "-u" + hex.EncodeToString(sum[:8])
}

// Get returns server's authorizer, or an error saying why it has none.
func (as *Authorizers) Get(server string) (*oauth.Authorizer, error) {
	as.mu.Lock()
	e := as.m[server]
	as.mu.Unlock()
	if e != nil {
		return e.a, nil
	}
	if _, ok := as.o.Runtime.ServerStatus(server); !ok {
		return nil, fmt.Errorf("%w: %q", actors.ErrUnknownServer, server)
	}
	return nil, fmt.Errorf("server %q does not use OAuth (a stdio server, or one with a static Authorization header or a headers helper)", server)
}

// ForUser returns user's authorizer of a per-user server, starting the
// user's instance if needed; server's own for user "".
func (as *Authorizers) ForUser(ctx context.Context, server, user string) (*oauth.Authorizer, error) {
	if user == "" {
		return as.Get(server)
	}
	if _, err := as.InstanceFor(ctx, server, user); err != nil {
		return nil, err
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	e := as.m[server]
	if e == nil || !e.perUser {
		return nil, fmt.Errorf("server %q does not sign users in on their own (oauth.perUser)", server)
	}
	return e.users[user].a, nil
}

// ForRedirect returns the authorizer of server whose sign-in the redirect's
// state names: the server's own, or one of its users'.
func (as *Authorizers) ForRedirect(server string, redirect url.Values) (*oauth.Authorizer, error) {
	a, err := as.Get(server)
	if err != nil {
		return nil, err
	}
	state := redirect.Get("state")
	as.mu.Lock()
	defer as.mu.Unlock()
	if e := as.m[server]; e != nil && !a.HasFlow(state) {
		for _, u := range e.users {
			if u.a != nil && u.a.HasFlow(state) {
				return u.a, nil
			}
		}
	}
	return a, nil
}

// Statuses reports the authorization of every server that has an
// authorizer, by name, each server's users after it.
func (as *Authorizers) Statuses() []oauth.Status {
	var out []oauth.Status
	for _, a := range as.all(true) {
		out = append(out, a.Status())
	}
	return out
}

// all lists the authorizers, the servers' by name, each one's users' after
// it (by user, when sorted).
func (as *Authorizers) all(sorted bool) []*oauth.Authorizer {
	as.mu.Lock()
	defer as.mu.Unlock()
	names := slices.Collect(maps.Keys(as.m))
	if sorted {
		slices.Sort(names)
	}
	var out []*oauth.Authorizer
	for _, n := range names {
		e := as.m[n]
		out = append(out, e.a)
		for _, u := range slices.Sorted(maps.Keys(e.users)) {
			if a := e.users[u].a; a != nil {
				out = append(out, a)
			}
		}
	}
	return out
}

// Close ends every sign-in in progress, the servers' and their users', and
// waits for the goroutines Authorizers started (users' instances being
// unregistered among them: call it before closing the runtime).
func (as *Authorizers) Close() {
	for _, a := range as.all(false) {
		a.Close()
	}
	as.wg.Wait()
}

// Begin starts server's sign-in with the host's own identity (see
// oauth.Authorizer.Begin) and tells the runtime its status changed (a
// sign-in pending).
func (as *Authorizers) Begin(ctx context.Context, server string) (*oauth.Flow, error) {
	a, err := as.Get(server)
	if err != nil {
		return nil, err
	}
	f, err := a.Begin(ctx)
	if err != nil {
		return nil, err
	}
	as.o.Runtime.AuthChanged(server)
	return f, nil
}

// BeginUser starts user's sign-in of a per-user server, starting the
// user's instance if needed (ForUser).
func (as *Authorizers) BeginUser(ctx context.Context, server, user string) (*oauth.Flow, error) {
	a, err := as.ForUser(ctx, server, user)
	if err != nil {
		return nil, err
	}
	return a.Begin(ctx)
}

// Complete ends the sign-in of server whose state the redirect's query
// names (ForRedirect) with that query.
func (as *Authorizers) Complete(ctx context.Context, server string, redirect url.Values) error {
	a, err := as.ForRedirect(server, redirect)
	if err != nil {
		return err
	}
	return a.Complete(ctx, redirect)
}

// SignIn runs a whole sign-in of server with the host's own identity,
// browser doing the browser step (nil: a sign-in that needs one fails),
// and tells the runtime of the change when the browser step starts and
// when it ends.
func (as *Authorizers) SignIn(ctx context.Context, server string, browser Browser) error {
	a, err := as.Get(server)
	if err != nil {
		return err
	}
	err = a.SignIn(ctx, func(ctx context.Context, p oauth.Prompt) (url.Values, error) {
		as.o.Runtime.AuthChanged(server)
		if browser == nil {
			return nil, errors.New("no browser to sign in with")
		}
		return browser(ctx, p.Server, "", p)
	})
	as.o.Runtime.AuthChanged(server)
	return err
}

// SignOut forgets server's token and client registrations and tells the
// runtime, returning once the server has acted on it: a signed-in server
// is in needs_auth when SignOut returns.
func (as *Authorizers) SignOut(ctx context.Context, server string) error {
	a, err := as.Get(server)
	if err != nil {
		return err
	}
	if err := a.Logout(ctx); err != nil {
		return err
	}
	return as.o.Runtime.AuthChangedWait(ctx, server)
}

// SignOutUser forgets user's token of a per-user server.
func (as *Authorizers) SignOutUser(ctx context.Context, server, user string) error {
	a, err := as.ForUser(ctx, server, user)
	if err != nil {
		return err
	}
	return a.Logout(ctx)
}

// SecretStore is a secret store's oauth section, as oauth.Store.
func SecretStore(s *secrets.Store) oauth.Store { return secretStore{s} }

type secretStore struct{ s *secrets.Store }

func (o secretStore) Load(key string) ([]byte, error) { return o.s.LoadOAuth(key) }

func (o secretStore) Save(key string, b []byte) error { return o.s.SaveOAuth(key, b) }
