package telemetry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the service.name of mcpvisor's spans unless
// OTEL_SERVICE_NAME names another.
const ServiceName = "mcpvisor"

// shutdownTimeout bounds the flush of the last spans on exit, so an
// unreachable collector cannot hold the process.
const shutdownTimeout = 5 * time.Second

// Tracing is the tracing a command runs with: an SDK provider, or none.
// Its methods are safe on a nil *Tracing and may be called more than once.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// Enabled reports whether the environment (read through lookup) asks for
// traces: an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), OTEL_SDK_DISABLED is not true and
// OTEL_TRACES_EXPORTER is not "none".
func Enabled(lookup func(string) (string, bool)) bool {
	if v, _ := lookup("OTEL_SDK_DISABLED"); strings.EqualFold(strings.TrimSpace(v), "true") {
		return false
	}
	if v, _ := lookup("OTEL_TRACES_EXPORTER"); strings.EqualFold(strings.TrimSpace(v), "none") {
		return false
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		if v, _ := lookup(k); strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// Start returns the tracing the environment asks for (see Enabled): an
// SDK provider with a batch span processor and the OTLP HTTP/protobuf
// exporter, which reads the rest of the OTEL_EXPORTER_OTLP_* variables
// itself; its resource has service.name mcpvisor, or OTEL_SERVICE_NAME,
// and what OTEL_RESOURCE_ATTRIBUTES adds. lookup decides whether; the
// exporter and the resource read the process's environment. Off, it returns a Tracing with
// no provider. It does not block on the collector: spans are sent in the
// background.
func Start(ctx context.Context, lookup func(string) (string, bool)) (*Tracing, error) {
	if !Enabled(lookup) {
		return &Tracing{}, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: otlp exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", ServiceName)),
		resource.Environment(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{tp: tp}, nil
}

// TracerProvider is the provider for mcpvisor.Options.TracerProvider: nil
// when tracing is off, so the host takes the global one (a no-op).
func (t *Tracing) TracerProvider() trace.TracerProvider {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp
}

// Shutdown flushes the spans not yet sent and stops the exporter, waiting
// at most a few seconds whatever ctx allows. A no-op when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}
