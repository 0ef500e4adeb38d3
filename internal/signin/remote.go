package signin

import (
	"context"
	"fmt"
	"net/url"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
)

// Sign-ins for a person who is not at the host: with a code (the device
// authorization grant), and by a redirect that reaches the host's own
// callback (a sidecar's public URL) or is pasted back.

// OffersDevice reports whether server's authorization server offers
// sign-in with a code.
func (as *Authorizers) OffersDevice(ctx context.Context, server string) (bool, error) {
	a, err := as.Get(server)
	if err != nil {
		return false, err
	}
	return a.OffersDevice(ctx)
}

// BeginDevice starts server's sign-in with a code (oauth.Authorizer's
// BeginDevice) and tells the runtime its status changed.
func (as *Authorizers) BeginDevice(ctx context.Context, server string) (*oauth.Flow, error) {
	a, err := as.Get(server)
	if err != nil {
		return nil, err
	}
	f, err := a.BeginDevice(ctx)
	if err != nil {
		return nil, err
	}
	as.o.Runtime.AuthChanged(server)
	// Its end, a refusal included, is news for the status too; Close
	// ends the flow and joins this.
	as.wg.Go(func() { <-f.Done(); as.o.Runtime.AuthChanged(server) })
	return f, nil
}

// CompleteRedirect ends the sign-in, of whichever server or user, whose
// state the redirect's query names, and returns the server's name: a
// redirect that reached the host's own callback, which names no server.
// The state is the one-time check: an unknown or spent one is
// oauth.ErrNoFlow.
func (as *Authorizers) CompleteRedirect(ctx context.Context, redirect url.Values) (string, error) {
	state := redirect.Get("state")
	as.mu.Lock()
	var found *oauth.Authorizer
	var server string
	for name, e := range as.m {
		if e.a.HasFlow(state) {
			found, server = e.a, name
		}
		for _, u := range e.users {
			if u.a != nil && u.a.HasFlow(state) {
				found, server = u.a, name
			}
		}
	}
	as.mu.Unlock()
	if found == nil {
		return "", fmt.Errorf("%w (state unknown or already used)", oauth.ErrNoFlow)
	}
	err := found.Complete(ctx, redirect)
	as.o.Runtime.AuthChanged(server)
	return server, err
}

// OpenStart opens the one-time start URL with id, of whichever sign-in
// has it (one whose redirect the host serves: Options.CallbackURI), and
// returns the authorization URL to send the browser to. A second opening
// cancels that sign-in (oauth.ErrStartUsed); an unknown id is
// oauth.ErrNoFlow.
func (as *Authorizers) OpenStart(id string) (string, error) {
	as.mu.Lock()
	var all []*oauth.Authorizer
	for _, e := range as.m {
		all = append(all, e.a)
		for _, u := range e.users {
			if u.a != nil {
				all = append(all, u.a)
			}
		}
	}
	as.mu.Unlock()
	for _, a := range all {
		if u, ok, err := a.OpenStart(id); ok {
			return u, err
		}
	}
	return "", oauth.ErrNoFlow
}
