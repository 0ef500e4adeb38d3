package gateway

import (
	"context"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor"
)

// withCallerOf returns ctx with from's span (the caller's, from the W3C
// headers: mcpvisor.TraceFromHeaders), baggage and credential
// (mcpvisor.WithCredential: the sidecar's name of the token the request
// carried), and none of from's deadline, cancellation or other values: a
// request served on a session's context, or a call that outlives its
// request, stays in the caller's trace, and an approval it raises is
// known to be the caller's.
func withCallerOf(ctx, from context.Context) context.Context {
	ctx = mcpvisor.WithCredential(ctx, mcpvisor.CredentialOf(from))
	if span := trace.SpanFromContext(from); span.SpanContext().IsValid() {
		ctx = trace.ContextWithSpan(ctx, span) // a remote parent stays remote
	}
	if b := baggage.FromContext(from); b.Len() > 0 {
		ctx = baggage.ContextWithBaggage(ctx, b)
	}
	return ctx
}
