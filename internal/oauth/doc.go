// Package oauth is the authorization client of the MCP specification
// (2026-07-28 basic/authorization, which also covers 2025-11-25 and the
// 2025-03-26 fallbacks) for one remote server.
//
// An Authorizer holds one server's authorization for one user: the
// authorization server it discovered, the client identity it registered
// there, and the token it holds. Its RoundTripper puts the token on every
// request to the server (and only to the server: a token is bound to the
// resource it was issued for), refreshes it when a third of its lifetime
// remains and once on a 401 (one refresh at a time per stored token, on a
// goroutine a giving-up request does not cancel and Close waits for, the
// rotated token stored before it is used), re-authorizes with the union of scopes on 403 insufficient_scope, and
// otherwise fails the request with ErrNeedsAuth, so the host can show the
// server as needing sign-in instead of restarting it in a loop.
//
// Signing in (Begin, then Complete with the redirect's query; or SignIn
// with a Browser that does both) runs the authorization code flow:
//
//   - discovery: resource_metadata from WWW-Authenticate, else the RFC 9728
//     well-known URIs (path, then root); the authorization server's metadata
//     by RFC 8414 and OpenID Connect discovery in the specification's order,
//     its issuer checked against the URL it came from; the 2025-03-26
//     fallbacks (the server's origin as issuer, default endpoints) for
//     servers without Protected Resource Metadata;
//   - client identity, in the specification's priority: pre-registered
//     credentials, a Client ID Metadata Document URL, Dynamic Client
//     Registration (RFC 7591); registrations are kept per issuer;
//   - PKCE S256 (refused when the server does not advertise it), state,
//     RFC 8707 resource on authorization and token requests, RFC 9207 iss
//     checked before the code is redeemed;
//   - scopes from the challenge, else all of scopes_supported, else none;
//     offline_access only when advertised.
//
// For a person who is not at the machine, BeginDevice signs in with a code
// (the device authorization grant, RFC 8628) where the authorization server
// offers it, polling its token endpoint in the background; a redirect the
// person pastes back goes to Complete like any other; and
// Options.CallbackURI is a redirect URI the host serves itself (a
// sidecar's public URL), with no loopback listener.
//
// The machine-to-machine grants (client credentials with a secret or an RFC
// 7523 assertion, the enterprise-managed token exchange) need no person and
// run whenever a token is missing. DPoP (RFC 9449) binds tokens to a key of
// the Authorizer's when configured.
//
// Every request an Authorizer makes goes through the http.Client it is
// given (the host's outbound guard). No token or secret ever appears in an
// error it returns.
package oauth
