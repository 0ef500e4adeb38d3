package outbound

import "errors"

// Sentinel errors. The errors NewClient's clients return wrap them (inside
// the *url.Error that http.Client returns); test them with errors.Is.
var (
	// ErrPrivateAddress: the server's host is, or resolves to, an address
	// that is not globally routable, and the server is not allowed private
	// addresses. Wrapped with the host and the address.
	ErrPrivateAddress = errors.New("refusing to connect to a non-public address")
	// ErrRedirectRefused: the server answered with a redirect the client
	// does not follow. Wrapped with the target's host, never its query.
	ErrRedirectRefused = errors.New("redirect refused")
)
