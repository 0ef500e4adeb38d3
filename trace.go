package mcpvisor

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// traceMeta returns the _meta members that carry the caller's W3C trace
// context to the server (SEP-414: traceparent, tracestate, baggage), or nil
// when ctx carries no span. Only the context is read: no span is made and
// nothing is exported here.
func traceMeta(ctx context.Context) json.RawMessage {
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
