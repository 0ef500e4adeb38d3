package mcpvisor

import (
	"context"
	"net/url"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/signin"
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
	User string
	// URL is what to open in a browser. With a loopback redirect URI it is
	// a one-time URL on the host's redirect listener that sends the
	// browser on to the authorization server: it holds no secret and may
	// go on a command line, and the listener takes the redirect only from
	// a browser that came through it.
	URL string
	// AuthorizationURL is the authorization server's URL itself, state and
	// PKCE challenge included, for a SignInFunc that follows the flow on
	// its own and returns the redirect's query. Keep it off command lines.
	AuthorizationURL string
	RedirectURI      string
}

// SignInFunc drives the browser step of a sign-in for the embedder (it
// shows the URL to its user). It returns the query of the redirect that
// ended the flow (code, state, iss), or nil values to let the host's
// loopback listener on RedirectURI receive it.
type SignInFunc func(ctx context.Context, p SignInPrompt) (url.Values, error)

// AuthStatus is what may be shown of a server's authorization: never a
// token or a secret.
type AuthStatus = oauth.Status

// newAuthorizers makes the host's authorizers (internal/signin), once its
// runtime exists.
func (h *Host) newAuthorizers() *signin.Authorizers {
	return signin.New(signin.Options{Runtime: h.rt, Store: signin.SecretStore(h.secrets), Browser: browser(h.opts.SignIn),
		CallbackURI: h.opts.SignInCallback, Log: h.opts.Logger})
}

// browser is f as internal/signin's Browser (nil for nil).
func browser(f SignInFunc) signin.Browser {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, server, user string, p oauth.Prompt) (url.Values, error) {
		return f(ctx, SignInPrompt{Server: server, User: user, URL: p.URL, AuthorizationURL: p.AuthorizationURL, RedirectURI: p.RedirectURI})
	}
}

// SignIn is a sign-in in progress: the URL to open (as SignInPrompt's),
// and its end.
type SignIn struct {
	Server string
	URL    string
	// AuthorizationURL is the authorization server's URL itself, state
	// and PKCE challenge in its query (as SignInPrompt's): for a person
	// on another machine, who opens it there and pastes back the address
	// the browser ends on (CompleteSignIn). Keep it off command lines.
	AuthorizationURL string
	RedirectURI      string
	// Device is set on a sign-in with a code (BeginDeviceSignIn): the
	// code to enter and where; URL is then the verification URI.
	Device *DeviceCode
	flow   *oauth.Flow
}

// Done is closed when the sign-in has ended; Err then tells how.
func (s *SignIn) Done() <-chan struct{} { return s.flow.Done() }

// Err is the sign-in's outcome once Done is closed (nil: signed in).
func (s *SignIn) Err() error { return s.flow.Err() }

// newSignIn makes a SignIn of server from a flow begun.
func newSignIn(server string) func(*oauth.Flow, error) (*SignIn, error) {
	return func(f *oauth.Flow, err error) (*SignIn, error) {
		if err != nil {
			return nil, err
		}
		return &SignIn{Server: server, URL: f.URL, AuthorizationURL: f.AuthorizationURL, RedirectURI: f.RedirectURI, Device: f.Device, flow: f}, nil
	}
}

// BeginSignIn starts server's sign-in: discovery, client registration and
// the authorization URL, returned for a person to open. The host listens
// for the redirect on the loopback redirect URI (the server's
// oauth.callbackPort, else a free port) until it arrives; an embedder that
// receives the redirect itself hands its query to CompleteSignIn. Once
// signed in, the server starts again by itself.
func (h *Host) BeginSignIn(ctx context.Context, server string) (*SignIn, error) {
	return newSignIn(server)(h.auth.Begin(ctx, server))
}

// CompleteSignIn ends server's sign-in with the query of the redirect (code,
// state, iss): the authorization response is checked (state, RFC 9207 iss)
// and the code redeemed.
func (h *Host) CompleteSignIn(ctx context.Context, server string, redirect url.Values) error {
	// The state names the flow: the host's own, or one of its users'.
	return h.auth.Complete(ctx, server, redirect)
}

// BeginUserSignIn is BeginSignIn for one platform user of a per-user server
// (oauth.perUser): the token it gets serves only calls for that user.
func (h *Host) BeginUserSignIn(ctx context.Context, server, user string) (*SignIn, error) {
	return newSignIn(server)(h.auth.BeginUser(ctx, server, user))
}

// SignOutUser forgets one user's token of a per-user server.
func (h *Host) SignOutUser(ctx context.Context, server, user string) error {
	return h.auth.SignOutUser(ctx, server, user)
}

// SignInWith runs a whole sign-in of server with f doing the browser step
// (for a machine grant, client credentials or enterprise-managed, it gets
// a token without f). It returns once signed in.
func (h *Host) SignInWith(ctx context.Context, server string, f SignInFunc) error {
	return h.auth.SignIn(ctx, server, browser(f))
}

// SignOut forgets server's token and client registrations. A server that
// was signed in (by a person: a machine grant gets its token again by
// itself) is in StateNeedsAuth when SignOut returns, without waiting for
// a call to meet the 401.
func (h *Host) SignOut(ctx context.Context, server string) error {
	return h.auth.SignOut(ctx, server)
}

// AuthStatuses reports the authorization of every server that has an
// authorizer, by name.
func (h *Host) AuthStatuses() []AuthStatus { return h.auth.Statuses() }
