package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/outbound"
)

// maxStepUps bounds the re-authorizations for more scope one token gets.
const maxStepUps = 2

// Transport returns a RoundTripper that authorizes requests to the server
// through base: requests elsewhere pass untouched and carry no token.
func (a *Authorizer) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{a: a, base: base}
}

type transport struct {
	a    *Authorizer
	base http.RoundTripper
}

// NeedsAuthError is the error a request fails with when the server needs a
// sign-in the Authorizer cannot do by itself.
type NeedsAuthError struct {
	Server string
	Reason string
}

func (e *NeedsAuthError) Error() string {
	return fmt.Sprintf("server %q needs sign-in: %s", e.Server, e.Reason)
}

func (e *NeedsAuthError) Unwrap() error { return ErrNeedsAuth }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	a := t.a
	if !strings.EqualFold(req.URL.Scheme, a.origin.Scheme) || !strings.EqualFold(req.URL.Host, a.origin.Host) {
		return t.base.RoundTrip(req) // not the resource: no token
	}
	ctx := req.Context()
	tok, err := a.currentToken(ctx)
	if err != nil {
		return nil, err
	}
	refreshed, obtained, stepUps, nonceRetries := false, false, 0, 0
	if tok == nil && !a.interactive() && a.mayObtain() {
		// Machine grants need nobody: get a token before the first request.
		obtained = true
		nt, err := a.obtain(ctx)
		if err != nil && !refused(err) {
			return nil, err // the authorization server is unreachable: retried with backoff
		}
		tok = nt
	}
	// A request whose body cannot be read again is sent once: its 401 or
	// 403 is the answer.
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	for attempt := 0; ; attempt++ {
		r := req // a first attempt without a token goes as it is: no copy
		if tok != nil || attempt > 0 {
			if r, err = t.prepare(req, tok); err != nil {
				return nil, err
			}
		}
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		if n := resp.Header.Get("DPoP-Nonce"); n != "" && tok != nil && tok.Type == "DPoP" {
			a.setNonce(req.URL.String(), n)
		}
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			ch := bearerChallenge(resp.Header)
			if ch.Error() == "use_dpop_nonce" && resp.Header.Get("DPoP-Nonce") != "" && nonceRetries < 2 && replayable {
				nonceRetries++
				discard(resp)
				continue
			}
			a.noteChallenge(ch)
			if !replayable {
				return resp, nil
			}
			discard(resp)
			if tok != nil {
				// The token was refused: the server may have moved to
				// another authorization server, so discover afresh.
				a.forgetDiscovery()
				if !refreshed && tok.Refresh != "" {
					refreshed = true
					nt, err := a.refresh(ctx, tok)
					if err == nil {
						tok = nt
						continue
					}
					if !refused(err) {
						// The authorization server could not be reached:
						// a failure like any other, retried with backoff.
						return nil, fmt.Errorf("refreshing the token of server %q: %s", a.opts.Server, a.redact(err.Error()))
					}
				}
				a.dropToken(tok)
			}
			if !a.interactive() && !obtained && a.mayObtain() {
				// Once per request: a server that refuses a fresh token
				// would otherwise get new ones forever.
				obtained = true
				nt, err := a.obtain(ctx)
				if err == nil {
					tok = nt
					continue
				}
				if !refused(err) {
					return nil, err
				}
			}
			if a.interactive() {
				if _, err := a.discovery(ctx); errors.Is(err, errResourceMismatch) {
					// No sign-in can succeed: say why in the error the
					// user sees, not only in the log.
					return nil, a.misconfigured(err)
				}
			}
			return nil, a.needsAuth(tok != nil)
		case http.StatusForbidden:
			ch := bearerChallenge(resp.Header)
			if ch.Error() != "insufficient_scope" || tok == nil || stepUps >= maxStepUps || !replayable || !a.needsMoreScope(tok, ch) {
				return resp, nil
			}
			a.noteChallenge(ch)
			nt, err := a.stepUp(ctx, tok, ch)
			if err != nil {
				return resp, nil // the 403 stands; the error is in Status and the log
			}
			discard(resp)
			stepUps++
			tok = nt
			continue
		}
		if tok != nil && resp.StatusCode < 400 {
			a.accepted(tok)
		}
		return resp, nil
	}
}

// CloseIdleConnections closes the idle connections of the transport
// underneath, so http.Client.CloseIdleConnections reaches it through this
// wrapper.
func (t *transport) CloseIdleConnections() { outbound.CloseIdle(t.base) }

// prepare clones req with the token (and a DPoP proof) set.
func (t *transport) prepare(req *http.Request, tok *Token) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody && req.GetBody != nil {
		b, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = b
	}
	if tok == nil {
		return r, nil
	}
	return t.authorize(r, tok)
}

func (t *transport) authorize(r *http.Request, tok *Token) (*http.Request, error) {
	if tok.Type != "DPoP" {
		r.Header.Set("Authorization", "Bearer "+tok.Access)
		return r, nil
	}
	k, err := t.a.dpopKeyFor(nil)
	if err != nil || k == nil {
		return nil, fmt.Errorf("oauth: a DPoP token without its key: %v", err)
	}
	proof, err := k.proof(r.Method, r.URL.String(), tok.Access, t.a.nonce(r.URL.String()), t.a.now())
	if err != nil {
		return nil, err
	}
	r.Header.Set("Authorization", "DPoP "+tok.Access)
	r.Header.Set("DPoP", proof)
	return r, nil
}

func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// accepted notes that the server took tok: a later refusal is news, worth
// an automatic sign-in again.
func (a *Authorizer) accepted(tok *Token) {
	a.mu.Lock()
	if a.st.Token == tok {
		a.fresh, a.autoTried, a.needs = false, false, false
	}
	a.mu.Unlock()
}

// needsMoreScope reports whether ch asks for a scope tok was not granted:
// asking again for what was granted cannot help (and would loop).
func (a *Authorizer) needsMoreScope(tok *Token, ch Challenge) bool {
	want := ch.Scopes()
	if len(want) == 0 {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range want {
		if !slices.Contains(tok.Scopes, s) && !a.refusedScopes[s] {
			return true
		}
	}
	return false
}

// stepUp re-authorizes for the union of tok's scopes and the challenge's
// (the specification's step-up), with the Browser; without one, the server
// needs sign-in for the larger scope.
func (a *Authorizer) stepUp(ctx context.Context, tok *Token, ch Challenge) (*Token, error) {
	if !a.interactive() {
		if nt, err := a.obtainScopes(ctx, union(tok.Scopes, ch.Scopes())); err == nil {
			return nt, nil
		} else {
			return nil, err
		}
	}
	if a.opts.Browser == nil {
		a.mu.Lock()
		a.lastErr = fmt.Sprintf("the server asks for scope %q: sign in again to grant it", strings.Join(ch.Scopes(), " "))
		a.mu.Unlock()
		return nil, errors.New("no browser")
	}
	if err := a.signIn(ctx, a.opts.Browser, tok.Scopes); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	nt := a.st.Token
	if nt == nil {
		return nil, ErrNeedsAuth
	}
	for _, s := range ch.Scopes() {
		if !slices.Contains(nt.Scopes, s) {
			if a.refusedScopes == nil {
				a.refusedScopes = map[string]bool{}
			}
			a.refusedScopes[s] = true
		}
	}
	return nt, nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// needsAuth marks the server as needing sign-in and, when a Browser is
// configured and has not been tried since the token last worked, starts
// one in the background: the host restarts the server once it succeeds
// (OnChange). The error says why.
func (a *Authorizer) needsAuth(refused bool) error {
	a.mu.Lock()
	auto := a.opts.Browser != nil && a.interactive() && !a.autoTried && a.signing == nil && a.life.Err() == nil
	reason := "the server requires authorization"
	switch {
	case refused && a.fresh:
		reason = "the server refused the token it was just issued"
	case refused:
		reason = "the server refused the token (expired or revoked) and it could not be refreshed"
	}
	if a.lastErr != "" && !auto {
		reason += " (" + a.lastErr + ")"
	}
	if auto {
		a.autoTried = true
		done := make(chan struct{})
		a.signing = done
		go a.autoSignIn(done)
	}
	a.needs = true
	a.mu.Unlock()
	if !auto {
		a.changed()
	}
	return &NeedsAuthError{Server: a.opts.Server, Reason: reason}
}

// misconfigured marks the server as needing sign-in that cannot succeed
// until its configuration changes (err says what to change); no automatic
// sign-in is started.
func (a *Authorizer) misconfigured(err error) error {
	_ = a.failed("signing in", err)
	a.mu.Lock()
	a.needs = true
	reason := a.lastErr
	a.mu.Unlock()
	a.changed()
	return &NeedsAuthError{Server: a.opts.Server, Reason: reason}
}

func (a *Authorizer) autoSignIn(done chan struct{}) {
	ctx, cancel := context.WithTimeout(a.life, signInTimeout)
	defer cancel()
	err := a.signIn(ctx, a.opts.Browser, nil)
	a.mu.Lock()
	a.signing = nil
	a.mu.Unlock()
	close(done)
	if err != nil {
		a.changed() // the host shows the failure
	}
}

// Wait blocks until a sign-in in progress ends (or ctx does).
func (a *Authorizer) Wait(ctx context.Context) {
	a.mu.Lock()
	ch := a.signing
	a.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// refused reports whether err is the authorization server's refusal (a
// token endpoint error, or a sign-in needed), as opposed to a failure to
// reach it.
func refused(err error) bool {
	var te *TokenError
	return errors.As(err, &te) || errors.Is(err, ErrNeedsAuth)
}
