package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"
)

// Refreshing a token with a rotating refresh token spends the old one the
// moment the authorization server answers: the answer is then the only
// copy of its successor, and presenting the old one again makes a
// provider revoke the whole grant as a stolen token's reuse. So a refresh
//
//   - runs once per stored state at a time: the requests of one Authorizer
//     share the refresh in flight, and the Authorizers of a process that
//     share a Store key (one replaced while its predecessor still serves)
//     take turns, each reading the stored token again before it spends one
//     (another process never shares it: the host's journal lock gives one
//     process a data directory, its secret store included);
//   - is stored durably (Store.Save) before anything uses the new token;
//   - runs on a goroutine of the Authorizer's, not in the request that
//     needed it: a request that gives up does not cancel it, and Close
//     waits for it.

const (
	// refreshTimeout bounds one refresh: discovery and the token request.
	refreshTimeout = 30 * time.Second
	// closeRefreshWait is how long Close waits for a refresh in flight
	// before it cancels it.
	closeRefreshWait = 10 * time.Second
)

// errClosing: a refresh was needed after Close.
var errClosing = errors.New("oauth: the authorizer is closed")

// refreshCall is one refresh in flight; tok and err are set before done
// closes.
type refreshCall struct {
	done chan struct{}
	tok  *Token
	err  error
}

// refresh trades t's refresh token for a new token, or joins the refresh
// in flight. It returns when the refresh ends or ctx does; the refresh
// goes on without ctx. A refusal (revoked, expired) drops the token, so
// sign-in is needed; the error is kept for Status and logged, never
// swallowed.
func (a *Authorizer) refresh(ctx context.Context, t *Token) (*Token, error) {
	a.mu.Lock()
	c := a.refreshing
	if c == nil {
		cur := a.st.Token
		switch {
		case cur == nil:
			a.mu.Unlock()
			return nil, fmt.Errorf("%w: the token was dropped", ErrNeedsAuth)
		case cur != t:
			a.mu.Unlock()
			return cur, nil // refreshed meanwhile by another request
		case a.refreshClosed:
			a.mu.Unlock()
			return nil, errClosing
		}
		c = &refreshCall{done: make(chan struct{})}
		a.refreshing = c
		a.refreshes.Add(1)
		go a.runRefresh(c, t)
	}
	a.mu.Unlock()
	select {
	case <-c.done:
		return c.tok, c.err
	case <-ctx.Done():
		a.opts.Log.Info("oauth: the token refresh goes on without the request that needed it", "server", a.opts.Server)
		return nil, ctx.Err()
	}
}

// runRefresh is the goroutine of one refresh.
func (a *Authorizer) runRefresh(c *refreshCall, t *Token) {
	defer a.refreshes.Done()
	ctx, cancel := context.WithTimeout(a.refreshLife, refreshTimeout)
	defer cancel()
	tok, err := a.refreshStored(ctx, t)
	a.mu.Lock()
	a.refreshing = nil
	c.tok, c.err = tok, err
	a.mu.Unlock()
	close(c.done)
}

// waitRefreshes waits for the refreshes in flight, cancelling them after
// d, and returns when they have returned.
func (a *Authorizer) waitRefreshes(d time.Duration) {
	done := make(chan struct{})
	go func() {
		a.refreshes.Wait()
		close(done)
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		a.opts.Log.Warn("oauth: a token refresh did not end in time; cancelled", "server", a.opts.Server, "after", d)
		a.endRefreshes()
		<-done
	}
	a.endRefreshes()
}

// refreshStored refreshes t under its Store key's lock, unless the stored
// token shows that another Authorizer refreshed it (or signed out) meanwhile.
func (a *Authorizer) refreshStored(ctx context.Context, t *Token) (*Token, error) {
	a.grant.Lock()
	defer a.grant.Unlock()
	unlock, err := storeLocks.lock(ctx, a.opts.Store, a.opts.Key)
	if err != nil {
		return nil, a.failed("refreshing the token", err)
	}
	defer unlock()
	a.mu.Lock()
	unsaved := a.unsaved
	a.mu.Unlock()
	if stored, ok := a.storedToken(); ok && !unsaved {
		switch {
		case stored == nil:
			a.dropToken(t)
			return nil, a.failed("refreshing the token", fmt.Errorf("%w: the stored token is gone (signed out)", ErrNeedsAuth))
		case stored.Refresh != t.Refresh || stored.Access != t.Access:
			a.mu.Lock()
			if a.st.Token == t {
				a.st.Token = stored
			}
			a.mu.Unlock()
			a.opts.Log.Info("oauth: using the token another authorizer refreshed", "server", a.opts.Server)
			return stored, nil
		}
	}
	d, err := a.discovery(ctx)
	if err != nil {
		return nil, a.failed("refreshing the token", err)
	}
	if d.Server.Issuer != t.Issuer {
		// The server moved to another authorization server: its token and
		// its client registration there are no good here.
		a.dropToken(t)
		return nil, a.failed("refreshing the token", fmt.Errorf("%w: the server's authorization server is now %s", ErrNeedsAuth, d.Server.Issuer))
	}
	ec, err := a.endpointClient(ctx, d)
	if err != nil {
		return nil, a.failed("refreshing the token", err)
	}
	form := map[string][]string{
		"grant_type":    {GrantRefreshToken},
		"refresh_token": {t.Refresh},
		"resource":      {d.Resource},
	}
	tr, err := a.tokenRequest(ctx, d.Server.TokenEndpoint, ec, form)
	if err != nil {
		var te *TokenError
		if errors.As(err, &te) {
			a.dropToken(t)
		}
		return nil, a.failed("refreshing the token", err)
	}
	nt, err := a.toToken(tr, d.Server.Issuer, d.Resource, t.Scopes, t)
	if err != nil {
		return nil, a.failed("refreshing the token", err)
	}
	// Stored (fsynced) before the refresh is done: nothing uses the new
	// token, and nothing can lose it, before then.
	if err := a.setToken(nt); err != nil {
		return nt, a.failed("storing the refreshed token", err)
	}
	a.opts.Log.Info("oauth: token refreshed", "server", a.opts.Server, "expiry", nt.Expiry)
	return nt, nil
}

// storedToken reads the Store's token afresh; ok is false when there is
// no Store or it cannot be read (the Authorizer's own copy stands).
func (a *Authorizer) storedToken() (tok *Token, ok bool) {
	if a.opts.Store == nil {
		return nil, false
	}
	b, err := a.opts.Store.Load(a.opts.Key)
	if err != nil {
		return nil, false
	}
	var st State
	if len(b) > 0 {
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, false
		}
	}
	if st.Token != nil && st.Token.Resource != "" && !resourceMatches(st.Token.Resource, a.opts.URL) {
		return nil, true
	}
	return st.Token, true
}

// storeLocks serialise refreshes per Store and key across the Authorizers
// of the process.
var storeLocks = keyLocks{m: map[storeKey]*keyLock{}}

type storeKey struct {
	store Store
	key   string
}

type keyLocks struct {
	mu sync.Mutex
	m  map[storeKey]*keyLock
}

type keyLock struct {
	sem   chan struct{} // holds one token while locked
	users int           // holders and waiters: the entry goes with the last
}

// lock takes the lock of store's key, or fails when ctx ends first. A nil
// Store, or one of a type that cannot be a map key, is not shared: no lock.
func (l *keyLocks) lock(ctx context.Context, store Store, key string) (unlock func(), err error) {
	if store == nil || !reflect.TypeOf(store).Comparable() {
		return func() {}, nil
	}
	k := storeKey{store, key}
	l.mu.Lock()
	e := l.m[k]
	if e == nil {
		e = &keyLock{sem: make(chan struct{}, 1)}
		l.m[k] = e
	}
	e.users++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.m, k)
		}
		l.mu.Unlock()
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
	return func() {
		<-e.sem
		release()
	}, nil
}
