package gateway

import (
	"context"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/tracing"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// withTraceOf returns ctx with from's span (the caller's, from the W3C
// headers: mcpvisor.TraceFromHeaders) and baggage, and none of from's
// deadline, cancellation or other values: a request served on a session's
// context, or a call that outlives its request, stays in the caller's
// trace.
func withTraceOf(ctx, from context.Context) context.Context {
	if span := trace.SpanFromContext(from); span.SpanContext().IsValid() {
		ctx = trace.ContextWithSpan(ctx, span) // a remote parent stays remote
	}
	if b := baggage.FromContext(from); b.Len() > 0 {
		ctx = baggage.ContextWithBaggage(ctx, b)
	}
	return ctx
}

// callSpan starts the server span of an inbound tools/call, "tools/call
// <name>" as the client named the tool, a child of the caller's span (W3C
// headers or _meta) and the parent of the host's own call span, when the
// host traces (Host.TracerProvider); otherwise ctx and nil, at no cost.
func (g *Gateway) callSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	tp := tracing.Provider(g.h.TracerProvider())
	if tp == nil {
		return ctx, nil
	}
	ctx, span := g.tracers.Tracer(tp).Start(ctx, protocol.MethodToolsCall+" "+name, trace.WithSpanKind(trace.SpanKindServer))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(tracing.Method.String(protocol.MethodToolsCall), tracing.Operation.String("execute_tool"),
		tracing.Tool.String(name))
	return ctx, span
}

// endCallSpan sets a call's outcome on its server span: ok, tool_error, or
// error (the error itself goes to the client, not to the span: it may
// quote arguments). A nil span is ignored.
func endCallSpan(span trace.Span, res *mcpvisor.Result, err error) {
	if span == nil || !span.IsRecording() {
		return
	}
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
	case res != nil && res.IsError:
		outcome = "tool_error"
	}
	span.SetAttributes(tracing.Outcome.String(outcome))
	if outcome != "ok" {
		tracing.Fail(span, outcome)
	}
}
