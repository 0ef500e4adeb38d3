package pipeline

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/tracing"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// traceStage makes a span of every request, the pipeline's outermost stage:
// "tools/call <tool>" ("resources/read <uri>", "prompts/get <name>"…), a
// client span whose context flows down the stages,
// so the server's _meta traceparent names it as the parent (traceMeta),
// and the later stages hang their phases under it: "queue wait", "send"
// and "server time" (send), "input round N" (input), "task" with its
// polls (tasks). With a no-op provider (Options.TracerProvider nil and no
// global set) the call passes through untouched, at no cost.
func (p *Pipeline) traceStage(next Func) Func {
	tp := p.cfg.TracerProvider
	if _, off := tp.(noop.TracerProvider); off {
		return next
	}
	var tc tracing.Tracers
	return func(ctx context.Context, c *Call) (*Result, error) {
		p := tracing.Provider(tp)
		if p == nil {
			return next(ctx, c)
		}
		method, name := c.Method, protocol.MethodToolsCall+" "+c.Tool
		if c.ToolCall() {
			method = protocol.MethodToolsCall
		} else {
			name = strings.TrimSuffix(c.Method+" "+c.Name, " ")
		}
		ctx, span := tc.Tracer(p).Start(ctx, name,
			trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(c.Start))
		defer span.End()
		if !span.IsRecording() {
			return next(ctx, c)
		}
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs, tracing.Method.String(method))
		if c.ToolCall() {
			attrs = append(attrs, tracing.Operation.String("execute_tool"), tracing.Tool.String(c.Name))
		}
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

// TraceRequest opens the server span of an inbound MCP request that a
// server in front of the host (the gateway, or an embedder's own) answers
// by calling it: "<method> <target>", tools/call and the tool as the
// client named it, say. The span is a child of ctx's (the caller's, from
// TraceFromHeaders or TraceFromMeta) and the parent of the host's own call
// span. end records the outcome (ok, tool_error or error; never the error
// text) and ends the span; call it once. With tracing off it returns ctx
// and a no-op end, at no cost.
func (p *Pipeline) TraceRequest(ctx context.Context, method, target string) (_ context.Context, end func(*Result, error)) {
	tp := tracing.Provider(p.cfg.TracerProvider)
	if tp == nil {
		return ctx, endNothing
	}
	ctx, span := p.inbound.Tracer(tp).Start(ctx, method+" "+target, trace.WithSpanKind(trace.SpanKindServer))
	if !span.IsRecording() {
		return ctx, func(*Result, error) { span.End() }
	}
	attrs := []attribute.KeyValue{tracing.Method.String(method)}
	if method == protocol.MethodToolsCall {
		attrs = append(attrs, tracing.Operation.String("execute_tool"), tracing.Tool.String(target))
	}
	span.SetAttributes(attrs...)
	return ctx, func(res *Result, err error) {
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
		span.End()
	}
}

func endNothing(*Result, error) {}

// errorType is the error.type of a failed phase: the call outcome's word
// for err, "" for none.
func errorType(err error) string {
	return actors.Outcome(err)
}
