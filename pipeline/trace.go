package pipeline

import (
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// TraceMeta returns the _meta members that carry the caller's W3C trace
// context to the server (SEP-414: traceparent, tracestate, baggage), or nil
// when ctx carries no span. Only the context is read: no span is made and
// nothing is exported here.
func TraceMeta(ctx context.Context) json.RawMessage {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	m := map[string]string{
		protocol.MetaTraceparent: "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String(),
	}
	if ts := sc.TraceState().String(); ts != "" {
		m[protocol.MetaTracestate] = ts
	}
	if b := baggage.FromContext(ctx).String(); b != "" {
		m[protocol.MetaBaggage] = b
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return out
}

// w3c reads the W3C trace context and baggage: traceparent, tracestate and
// baggage, which HTTP headers and a request's _meta (SEP-414) name alike.
var w3c = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// TraceFromHeaders returns ctx with the caller's trace context and baggage
// from the W3C headers of an inbound HTTP request (traceparent,
// tracestate, baggage), so the span of a call made with it is the
// caller's child; ctx itself when h carries none, at no cost.
func TraceFromHeaders(ctx context.Context, h http.Header) context.Context {
	if h.Get(protocol.MetaTraceparent) == "" && h.Get(protocol.MetaBaggage) == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// TraceFromMeta is TraceFromHeaders for a request's _meta (SEP-414):
// ctx with the trace context and baggage meta carries, or ctx itself when
// it carries no valid traceparent or baggage. What _meta carries replaces
// what ctx had: it names the request, a header only the HTTP exchange.
func TraceFromMeta(ctx context.Context, meta json.RawMessage) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return ctx
	}
	carrier := propagation.MapCarrier{}
	for _, k := range []string{protocol.MetaTraceparent, protocol.MetaTracestate, protocol.MetaBaggage} {
		var v string
		if json.Unmarshal(m[k], &v) == nil && v != "" {
			carrier[k] = v
		}
	}
	if carrier[protocol.MetaTraceparent] == "" && carrier[protocol.MetaBaggage] == "" {
		return ctx
	}
	return w3c.Extract(ctx, carrier)
}
