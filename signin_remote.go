package mcpvisor

import (
	"context"
	"net/url"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
)

// Sign-in for a person who is not at the host (a headless machine, a
// remote sidecar): with a code, where the authorization server offers the
// device authorization grant (RFC 8628); else by the redirect, which
// reaches the host's own callback when Options.SignInCallback is set, or
// which the person pastes back (CompleteSignIn with its query).

// DeviceCode is what a person needs for a sign-in with a code: the user
// code to enter at the verification URI, and when it expires.
type DeviceCode = oauth.DeviceCode

// OffersDeviceSignIn reports whether server's authorization server offers
// sign-in with a code. It runs discovery if it has not run yet.
func (h *Host) OffersDeviceSignIn(ctx context.Context, server string) (bool, error) {
	return h.auth.OffersDevice(ctx, server)
}

// BeginDeviceSignIn starts server's sign-in with a code: the SignIn's
// Device holds the user code and the verification URI to show the person,
// and the host polls the authorization server until they have decided
// (Done). ErrNoDeviceSignIn when the authorization server does not offer
// it. Once signed in, the server starts again by itself.
func (h *Host) BeginDeviceSignIn(ctx context.Context, server string) (*SignIn, error) {
	return newSignIn(server)(h.auth.BeginDevice(ctx, server))
}

// CompleteSignInRedirect ends the sign-in whose state the redirect's query
// names, whichever server (or user of a per-user server) it is for, and
// returns that server's name: the handler of Options.SignInCallback. An
// unknown or already used state is refused.
func (h *Host) CompleteSignInRedirect(ctx context.Context, redirect url.Values) (string, error) {
	return h.auth.CompleteRedirect(ctx, redirect)
}

// ErrSignInLinkUsed is OpenSignInStart's error for a start URL opened a
// second time: it went somewhere else too, and the sign-in is cancelled.
var ErrSignInLinkUsed = oauth.ErrStartUsed

// OpenSignInStart opens the one-time start URL (SignIn.URL, ending in the
// id) of a sign-in whose redirect the host serves (Options.SignInCallback):
// the authorization URL to send the browser to, the first time only. The
// handler of that start URL beside the callback.
func (h *Host) OpenSignInStart(id string) (string, error) {
	return h.auth.OpenStart(id)
}
