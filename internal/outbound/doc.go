// Package outbound makes the HTTP clients that talk to remote MCP servers:
// one guarded *http.Client per server, never shared, so that one server's
// connections, limits and failures stay its own.
//
//	client := outbound.NewClient(outbound.Options{AllowPrivate: cfg.AllowPrivate})
//	defer client.CloseIdleConnections()
//	resp, err := client.Do(req.WithContext(ctx)) // bounded by ctx: there is no client-wide timeout
//	if errors.Is(err, outbound.ErrPrivateAddress) {
//		// the URL's host is, or resolves to, 10.0.0.1, 169.254.169.254, ...
//	}
//	if err != nil {
//		logger.Warn("post failed", "err", outbound.Redact(err.Error(), apiKey, sessionID))
//	}
//
// (Example in example_test.go runs a refused and an allowed request.)
//
// The client guards against server-side request forgery. Its dialer
// resolves the host itself, refuses the connection if any address it
// resolves to is not globally routable (CheckAddr), and dials the checked
// address literally, so that a DNS answer that changes between the check and
// the connection (DNS rebinding) cannot slip past. Every redirect hop goes
// through the same dialer, at most three hops are followed, never from https
// to http, and a server allowed private addresses (a local one) follows no
// redirect at all.
//
// Errors from http.Client come as a *url.Error whose URL is the request's,
// or for a refused redirect the raw Location header, query included: pass
// what reaches logs, status or errors through Redact, or report urlErr.Err.
//
// Timeouts bound the dial, the TLS handshake and the wait for response
// headers, but not the response body: a Streamable HTTP response can be an
// SSE stream that lasts for hours. Callers bound calls with contexts and
// bodies with their own readers (protocol.FrameReader, sse.Reader).
package outbound
