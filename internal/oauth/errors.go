package oauth

import "errors"

var (
	// ErrNeedsAuth: the server wants a token the Authorizer cannot get
	// without a person signing in.
	ErrNeedsAuth = errors.New("sign-in needed")
	// ErrDiscovery: the server's authorization server could not be found.
	ErrDiscovery = errors.New("authorization discovery failed")
	// ErrIssuerMismatch: an authorization server's metadata names another
	// issuer than the one it was fetched for.
	ErrIssuerMismatch = errors.New("authorization server issuer mismatch")
	// ErrUnsupported: the authorization server lacks something the flow
	// requires (PKCE S256, a registration method).
	ErrUnsupported = errors.New("authorization server unsupported")
	// ErrAuthorization: the authorization response was refused (an error
	// from the server, a wrong state or iss).
	ErrAuthorization = errors.New("authorization failed")
	// ErrToken: the token endpoint refused a request.
	ErrToken = errors.New("token request failed")
	// ErrNoFlow: a redirect arrived for no sign-in in progress.
	ErrNoFlow = errors.New("no sign-in in progress")
	// ErrNoDeviceGrant: the authorization server does not offer the
	// device authorization grant (RFC 8628).
	ErrNoDeviceGrant = errors.New("the authorization server offers no sign-in with a code")
)
