package mcpvisor

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// tracerName is the instrumentation scope of the host's spans.
const tracerName = "github.com/mcpvisor/mcpvisor"

// unsetGlobal is the global provider as it is before a program sets one:
// a no-op that delegates later. Compared with otel.GetTracerProvider(), it
// tells, without an allocation, that nobody has set a provider.
var unsetGlobal = otel.GetTracerProvider()

// Span attributes of a call, after OpenTelemetry's MCP semantic
// conventions where they name one. Only names and outcomes: never the
// arguments, the result or anything from a server's environment.
const (
	attrMethod    = attribute.Key("mcp.method.name")
	attrOperation = attribute.Key("gen_ai.operation.name")
	attrTool      = attribute.Key("gen_ai.tool.name")
	attrServer    = attribute.Key("mcpvisor.server")
	attrSession   = attribute.Key("mcpvisor.session")
	attrCalledAs  = attribute.Key("mcpvisor.called_as")
	attrOutcome   = attribute.Key("mcpvisor.outcome")
	attrErrorType = attribute.Key("error.type")
)

// tracerCache holds the tracer of the provider last seen, so a call asks
// the provider for one only when the provider changes.
type tracerCache struct {
	p atomic.Pointer[providerTracer]
}

type providerTracer struct {
	tp trace.TracerProvider
	t  trace.Tracer
}

func (tc *tracerCache) tracer(tp trace.TracerProvider) trace.Tracer {
	if pt := tc.p.Load(); pt != nil && pt.tp == tp {
		return pt.t
	}
	pt := &providerTracer{tp: tp, t: tp.Tracer(tracerName)}
	tc.p.Store(pt)
	return pt.t
}

// traceStage makes a span of every call, the pipeline's outermost stage:
// "tools/call <tool>", a client span whose context flows down to send, so
// the server's _meta traceparent names it as the parent (traceMeta). With
// a no-op provider (Options.TracerProvider nil and no global set) the call
// passes through untouched, at no cost.
func (h *Host) traceStage(next CallFunc) CallFunc {
	tp := h.opts.TracerProvider
	if _, off := tp.(noop.TracerProvider); off {
		return next
	}
	var tc tracerCache
	return func(ctx context.Context, c *Call) (*Result, error) {
		p := tp
		if p == nil {
			if p = otel.GetTracerProvider(); p == unsetGlobal {
				return next(ctx, c)
			}
		}
		if _, off := p.(noop.TracerProvider); off {
			return next(ctx, c)
		}
		ctx, span := tc.tracer(p).Start(ctx, protocol.MethodToolsCall+" "+c.Tool,
			trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(c.Start))
		defer span.End()
		if !span.IsRecording() {
			return next(ctx, c)
		}
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs, attrMethod.String(protocol.MethodToolsCall), attrOperation.String("execute_tool"),
			attrTool.String(c.Name))
		if c.Server != "" {
			attrs = append(attrs, attrServer.String(c.Server))
		}
		if c.CalledAs != "" {
			attrs = append(attrs, attrCalledAs.String(c.CalledAs))
		}
		if c.Scope.Session != "" {
			attrs = append(attrs, attrSession.String(c.Scope.Session))
		}
		span.SetAttributes(attrs...)
		res, err := next(ctx, c)
		outcome := callOutcome(res, err)
		span.SetAttributes(attrOutcome.String(outcome))
		if err != nil || res != nil && res.IsError {
			span.SetAttributes(attrErrorType.String(outcome))
			span.SetStatus(codes.Error, outcome) // not the message: it may quote arguments
		}
		return res, err
	}
}
