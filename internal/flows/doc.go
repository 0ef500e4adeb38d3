// Package flows answers the requests servers send the host (elicitation,
// sampling, roots) and the config inputs (${input:ID}) a starting server
// waits for.
//
// A server's request is answered by the handler of the call in flight it
// belongs to (an Asker, attributed by Askers.Pick), else by the host's own
// handler, or its inbox (internal/elicit's Broker). An elicitation is
// journaled through the Host, never with what the person entered.
//
// The root package's Host implements Host with an unexported adapter; the
// public types (CallOptions, ElicitationHandler, InputRequest, …) stay in
// the root, whose handlers convert to this package's function types.
package flows
