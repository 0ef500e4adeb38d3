// Package tracing is the OpenTelemetry machinery the host and the gateway
// share: which provider is in force (at no cost when none is), the span
// attributes they set, and child spans that exist only under a recording
// parent, so a call with tracing off allocates nothing for it.
package tracing

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of mcpvisor's spans.
const Scope = "github.com/mcpvisor/mcpvisor"

// unsetGlobal is the global provider as it is before a program sets one:
// a no-op that delegates later. Compared with otel.GetTracerProvider(), it
// tells, without an allocation, that nobody has set a provider.
var unsetGlobal = otel.GetTracerProvider()

// Span attributes, after OpenTelemetry's MCP semantic conventions where
// they name one. Only names and outcomes: never arguments, results, error
// text or anything from a server's environment.
const (
	Method    = attribute.Key("mcp.method.name")
	Operation = attribute.Key("gen_ai.operation.name")
	Tool      = attribute.Key("gen_ai.tool.name")
	Server    = attribute.Key("mcpvisor.server")
	Session   = attribute.Key("mcpvisor.session")
	CalledAs  = attribute.Key("mcpvisor.called_as")
	Outcome   = attribute.Key("mcpvisor.outcome")
	ErrorType = attribute.Key("error.type")
	Round     = attribute.Key("mcpvisor.input.round")
	TaskID    = attribute.Key("mcpvisor.task.id")
	TaskState = attribute.Key("mcpvisor.task.status")
	Restart   = attribute.Key("mcpvisor.restart")
	Transport = attribute.Key("mcpvisor.transport")
	State     = attribute.Key("mcpvisor.state")
)

// Off reports whether tp makes no spans: a no-op provider, or nil with no
// global provider set.
func Off(tp trace.TracerProvider) bool {
	if tp == nil {
		tp = otel.GetTracerProvider()
		if tp == unsetGlobal {
			return true
		}
	}
	_, off := tp.(noop.TracerProvider)
	return off
}

// Provider is tp, or the global provider when tp is nil; nil when that
// makes no spans (Off).
func Provider(tp trace.TracerProvider) trace.TracerProvider {
	if Off(tp) {
		return nil
	}
	if tp == nil {
		return otel.GetTracerProvider()
	}
	return tp
}

// Tracers holds the tracer of the provider last seen, so a span asks the
// provider for one only when the provider changes. The zero value is
// ready.
type Tracers struct {
	p atomic.Pointer[providerTracer]
}

type providerTracer struct {
	tp trace.TracerProvider
	t  trace.Tracer
}

// Tracer returns tp's tracer for Scope.
func (tc *Tracers) Tracer(tp trace.TracerProvider) trace.Tracer {
	if pt := tc.p.Load(); pt != nil && pt.tp == tp {
		return pt.t
	}
	pt := &providerTracer{tp: tp, t: tp.Tracer(Scope)}
	tc.p.Store(pt)
	return pt.t
}

// Recording reports whether ctx's span records: only then are child spans
// made.
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// Child starts a span named name under ctx's span, when that records;
// otherwise it returns ctx and nil, at no cost. End it with End.
func Child(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, opts...)
}

// Interval records a child span of ctx's span that has already happened,
// from start to end, when ctx's span records: a phase measured while the
// call ran (a queue wait, a server's time). errType, when not "", marks it
// failed with that error type.
func Interval(ctx context.Context, name string, start, end time.Time, errType string) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() || start.IsZero() || end.Before(start) {
		return
	}
	_, span := parent.TracerProvider().Tracer(Scope).Start(ctx, name, trace.WithTimestamp(start))
	Fail(span, errType)
	span.End(trace.WithTimestamp(end))
}

// Fail marks span failed with errType (error.type and the status
// description: a class of error, never its text, which may quote
// arguments), when errType is not "". A nil span is ignored.
func Fail(span trace.Span, errType string) {
	if span == nil || errType == "" {
		return
	}
	span.SetAttributes(ErrorType.String(errType))
	span.SetStatus(codes.Error, errType)
}

// End ends a span from Child, marking it failed with errType; nil is
// ignored.
func End(span trace.Span, errType string) {
	if span == nil {
		return
	}
	Fail(span, errType)
	span.End()
}
