package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/outbound"
)

// Sign-in with a code: the device authorization grant (RFC 8628), for a
// person who is not at the machine (a headless host, a remote sidecar).
// The host asks the authorization server for a device code and a user
// code; the person opens the verification URI on any device of theirs and
// enters the user code; the host polls the token endpoint until they have
// decided. No redirect reaches the host, so no listener is opened.

// DeviceCode is what a person needs to complete a sign-in with a code.
type DeviceCode struct {
	// UserCode is what the person enters at VerificationURI.
	UserCode        string `json:"userCode"`
	VerificationURI string `json:"verificationUri"`
	// VerificationURIComplete, when the server offers it, holds the user
	// code already: opening it is enough.
	VerificationURIComplete string    `json:"verificationUriComplete,omitempty"`
	Expires                 time.Time `json:"expires"`
}

// Polling (RFC 8628 §3.5): the interval the server asks for, 5 s when it
// names none; a slow_down answer adds slowDownStep to it for good.
const (
	defaultPollInterval = 5 * time.Second
	slowDownStep        = 5 * time.Second
)

// deviceAuthorization is the device authorization response (RFC 8628 §3.2).
type deviceAuthorization struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete,omitempty"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                *int64 `json:"interval,omitempty"`
}

// offersDevice reports whether m offers the device authorization grant:
// an endpoint for it, and the grant type not left out of the grant types
// it lists (when it lists any).
func offersDevice(m *ServerMetadata) bool {
	return m.DeviceAuthorizationEndpoint != "" && (len(m.GrantTypesSupported) == 0 || hasString(m.GrantTypesSupported, GrantDeviceCode))
}

// OffersDevice reports whether the server's authorization server offers
// sign-in with a code (the device authorization grant); it runs discovery
// when it has not run yet.
func (a *Authorizer) OffersDevice(ctx context.Context) (bool, error) {
	if !a.interactive() {
		return false, nil
	}
	d, err := a.discovery(ctx)
	if err != nil {
		return false, err
	}
	return offersDevice(d.Server), nil
}

// BeginDevice starts a sign-in with a code: it returns once the
// authorization server has issued the codes (Flow.Device), and polls its
// token endpoint in the background until the person has decided, the code
// expires, a newer sign-in supersedes it or Close is called; Flow.Done is
// closed then. ErrNoDeviceGrant when the authorization server does not
// offer it. The same resource indicator and scopes as the code flow are
// asked for; PKCE does not apply.
func (a *Authorizer) BeginDevice(ctx context.Context) (*Flow, error) {
	if !a.interactive() {
		return nil, fmt.Errorf("oauth: server %q uses the %s grant: there is nothing to sign in to", a.opts.Server, a.cfg.GrantType)
	}
	d, err := a.discovery(ctx)
	if err != nil {
		return nil, a.failed("signing in", err)
	}
	m := d.Server
	if !offersDevice(m) {
		return nil, fmt.Errorf("%w: %s (no device_authorization_endpoint, or the device_code grant is not among its grant_types_supported)", ErrNoDeviceGrant, m.Issuer)
	}
	if m.TokenEndpoint == "" {
		return nil, a.failed("signing in", fmt.Errorf("%w: %s lacks a token endpoint", ErrDiscovery, m.Issuer))
	}
	f := &Flow{state: randomString(24), disc: d, done: make(chan struct{})}
	f.client, err = a.deviceClient(ctx, d, false)
	if err != nil {
		return nil, a.failed("signing in", err)
	}
	f.scopes = a.scopes(d, nil)
	da, ec, err := a.requestDeviceCode(ctx, f, d)
	var te *TokenError
	if errors.As(err, &te) && te.Code == "unauthorized_client" && f.client.Kind == "dcr" {
		// Registered before this grant was asked for: register again.
		if f.client, err = a.deviceClient(ctx, d, true); err != nil {
			return nil, a.failed("signing in", err)
		}
		da, ec, err = a.requestDeviceCode(ctx, f, d)
	}
	if err != nil {
		return nil, a.failed("signing in", err)
	}
	life := time.Duration(da.ExpiresIn) * time.Second
	if da.ExpiresIn <= 0 || life > signInTimeout {
		life = signInTimeout
	}
	f.Device = &DeviceCode{UserCode: da.UserCode, VerificationURI: da.VerificationURI, VerificationURIComplete: da.VerificationURIComplete, Expires: a.now().Add(life)}
	f.URL = da.VerificationURI
	if da.VerificationURIComplete != "" {
		f.URL = da.VerificationURIComplete
	}
	interval := defaultPollInterval
	if da.Interval != nil && *da.Interval >= 0 {
		interval = time.Duration(*da.Interval) * time.Second
	}
	a.mu.Lock()
	old := a.flows
	a.flows = map[string]*Flow{f.state: f}
	a.mu.Unlock()
	for _, o := range old {
		o.end(fmt.Errorf("%w: superseded by a newer sign-in", ErrAuthorization))
	}
	f.expiry = time.AfterFunc(life, func() {
		a.abandonWith(f, a.failed("signing in", fmt.Errorf("%w: the code was not entered in time", ErrAuthorization)))
	})
	a.polls.Go(func() { a.pollDevice(f, ec, da.DeviceCode, interval) })
	a.opts.Log.Info("oauth: sign-in with a code started", "server", a.opts.Server, "issuer", m.Issuer, "verification_uri", da.VerificationURI)
	return f, nil
}

// deviceClient is the client identity for a sign-in with a code: the
// configured or stored one, else (or with again) a new registration, which
// asks for the device_code grant.
func (a *Authorizer) deviceClient(ctx context.Context, d *Discovery, again bool) (Client, error) {
	a.mu.Lock()
	a.loadLocked()
	c, ok := a.st.Clients[d.Server.Issuer]
	if again {
		delete(a.st.Clients, d.Server.Issuer)
	}
	a.mu.Unlock()
	redirect := a.cfg.RedirectURI
	if redirect == "" {
		redirect = a.opts.CallbackURI
	}
	if ok && !again && c.Kind == "dcr" && a.cfg.ClientID == "" {
		redirect = c.RedirectURI // keep it: the code flow reuses the registration
	}
	if redirect == "" {
		redirect = "http://localhost/callback" // any port on loopback (RFC 8252 §7.3)
	}
	return a.clientFor(ctx, d, redirect)
}

// requestDeviceCode asks d's authorization server for a device code (RFC
// 8628 §3.1).
func (a *Authorizer) requestDeviceCode(ctx context.Context, f *Flow, d *Discovery) (*deviceAuthorization, endpointClient, error) {
	ec, err := a.endpointClientWith(f.client, d)
	if err != nil {
		return nil, ec, err
	}
	endpoint := d.Server.DeviceAuthorizationEndpoint
	form := url.Values{"resource": {d.Resource}}
	if len(f.scopes) > 0 {
		form.Set("scope", strings.Join(f.scopes, " "))
	}
	noProof := ec
	noProof.dpop = nil // a proof belongs on the token request only
	req, err := a.clientRequest(ctx, endpoint, noProof, form)
	if err != nil {
		return nil, ec, err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, ec, fmt.Errorf("%w: %s: %w", ErrToken, outbound.Where(endpoint), unwrapURL(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return nil, ec, fmt.Errorf("%w: %s: %v", ErrToken, outbound.Where(endpoint), err)
	}
	if resp.StatusCode != http.StatusOK {
		var te tokenError
		_ = json.Unmarshal(b, &te)
		if te.Code == "" {
			return nil, ec, fmt.Errorf("%w: %s answered HTTP %d", ErrToken, outbound.Where(endpoint), resp.StatusCode)
		}
		msg := outbound.Where(endpoint) + ": " + te.Code
		if te.Description != "" {
			msg += " (" + a.redact(te.Description) + ")"
		}
		return nil, ec, &TokenError{Code: te.Code, msg: msg}
	}
	var da deviceAuthorization
	if err := json.Unmarshal(b, &da); err != nil || da.DeviceCode == "" || da.UserCode == "" || da.VerificationURI == "" {
		return nil, ec, fmt.Errorf("%w: %s: the answer is not a device authorization response", ErrToken, outbound.Where(endpoint))
	}
	if u, err := url.Parse(da.VerificationURI); err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, ec, fmt.Errorf("%w: %s: the verification URI is not a web address", ErrToken, outbound.Where(endpoint))
	}
	if u, err := url.Parse(da.VerificationURIComplete); da.VerificationURIComplete != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http")) {
		da.VerificationURIComplete = ""
	}
	return &da, ec, nil
}

// pollDevice polls the token endpoint for f's device code every interval
// until the person decides (RFC 8628 §3.4–3.5), and ends f with the
// outcome. It returns when f has ended.
func (a *Authorizer) pollDevice(f *Flow, ec endpointClient, deviceCode string, interval time.Duration) {
	m := f.disc.Server
	form := url.Values{"grant_type": {GrantDeviceCode}, "device_code": {deviceCode}, "resource": {f.disc.Resource}}
	ctx := a.life // Close ends a request in flight
	for {
		if !a.pollWait(f.done, interval) {
			return
		}
		tr, err := a.tokenRequest(ctx, m.TokenEndpoint, ec, form)
		var te *TokenError
		switch {
		case err == nil:
		case errors.As(err, &te) && te.Code == "authorization_pending":
			continue
		case errors.As(err, &te) && te.Code == "slow_down":
			interval += slowDownStep // for the rest of this sign-in
			continue
		case errors.As(err, &te) && te.Code == "access_denied":
			a.abandonWith(f, a.failed("signing in", fmt.Errorf("%w: the sign-in was refused at %s", ErrAuthorization, m.Issuer)))
			return
		case errors.As(err, &te) && te.Code == "expired_token":
			a.abandonWith(f, a.failed("signing in", fmt.Errorf("%w: the code expired before the sign-in was approved", ErrAuthorization)))
			return
		case errors.As(err, &te):
			a.abandonWith(f, a.failed("signing in", err))
			return
		default:
			// Not an answer (the server unreachable a moment): the code
			// is still good until it expires.
			a.opts.Log.Warn("oauth: polling for the sign-in with a code", "server", a.opts.Server, "err", a.redact(err.Error()))
			continue
		}
		t, err := a.toToken(tr, m.Issuer, f.disc.Resource, f.scopes, nil)
		a.mu.Lock()
		open := a.flows[f.state] == f
		if open {
			delete(a.flows, f.state)
		}
		a.mu.Unlock()
		if !open {
			return // superseded or closed meanwhile
		}
		if err == nil {
			a.opts.Log.Info("oauth: signed in with a code", "server", a.opts.Server, "issuer", m.Issuer, "scopes", strings.Join(t.Scopes, " "))
			err = a.setToken(t)
		}
		if err != nil {
			err = a.failed("signing in", err)
		}
		f.end(err)
		return
	}
}

// pollWait waits d, or until done is closed (false then); tests set
// a.waitPoll to record the waits without spending them.
func (a *Authorizer) pollWait(done <-chan struct{}, d time.Duration) bool {
	if a.waitPoll != nil {
		return a.waitPoll(done, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}
