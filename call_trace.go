package mcpvisor

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpvisor/mcpvisor/internal/tracing"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// traceStage makes a span of every call, the pipeline's outermost stage:
// "tools/call <tool>", a client span whose context flows down the stages,
// so the server's _meta traceparent names it as the parent (traceMeta),
// and the later stages hang their phases under it: "queue wait", "send"
// and "server time" (send), "input round N" (input), "task" with its
// polls (tasks). With a no-op provider (Options.TracerProvider nil and no
// global set) the call passes through untouched, at no cost.
func (h *Host) traceStage(next CallFunc) CallFunc {
	tp := h.opts.TracerProvider
	if _, off := tp.(noop.TracerProvider); off {
		return next
	}
	var tc tracing.Tracers
	return func(ctx context.Context, c *Call) (*Result, error) {
		p := tracing.Provider(tp)
		if p == nil {
			return next(ctx, c)
		}
		ctx, span := tc.Tracer(p).Start(ctx, protocol.MethodToolsCall+" "+c.Tool,
			trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(c.Start))
		defer span.End()
		if !span.IsRecording() {
			return next(ctx, c)
		}
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs, tracing.Method.String(protocol.MethodToolsCall), tracing.Operation.String("execute_tool"),
			tracing.Tool.String(c.Name))
		if c.Server != "" {
			attrs = append(attrs, tracing.Server.String(c.Server))
		}
		if c.CalledAs != "" {
			attrs = append(attrs, tracing.CalledAs.String(c.CalledAs))
		}
		if c.Scope.Session != "" {
			attrs = append(attrs, tracing.Session.String(c.Scope.Session))
		}
		span.SetAttributes(attrs...)
		res, err := next(ctx, c)
		outcome := callOutcome(res, err)
		span.SetAttributes(tracing.Outcome.String(outcome))
		if err != nil || res != nil && res.IsError {
			tracing.Fail(span, outcome) // not the message: it may quote arguments
		}
		return res, err
	}
}

// errorType is the error.type of a failed phase: the call outcome's word
// for err, "" for none.
func errorType(err error) string {
	if err == nil {
		return ""
	}
	return callOutcome(nil, err)
}
