package telemetry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
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
func Enabled(lookup func(string) (string, bool)) bool { return enabled(lookup, "TRACES") }

// MetricsEnabled is Enabled for metrics: OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, and OTEL_METRICS_EXPORTER not
// "none".
func MetricsEnabled(lookup func(string) (string, bool)) bool { return enabled(lookup, "METRICS") }

// enabled reports whether the environment asks for signal (TRACES,
// METRICS) over OTLP.
func enabled(lookup func(string) (string, bool), signal string) bool {
	if v, _ := lookup("OTEL_SDK_DISABLED"); strings.EqualFold(strings.TrimSpace(v), "true") {
		return false
	}
	if v, _ := lookup("OTEL_" + signal + "_EXPORTER"); strings.EqualFold(strings.TrimSpace(v), "none") {
		return false
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT"} {
		if v, _ := lookup(k); strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// serviceResource is the resource of everything exported: service.name
// mcpvisor, unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say
// otherwise.
func serviceResource() (*resource.Resource, error) {
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", ServiceName)),
		resource.Environment(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
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
	res, err := serviceResource()
	if err != nil {
		return nil, err
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

// Metrics is the metrics export a command runs with: an SDK meter
// provider that pushes a Prometheus registry over OTLP, or none. Its
// methods are safe on a nil *Metrics and may be called more than once.
type Metrics struct {
	mp *sdkmetric.MeterProvider
}

// StartMetrics returns the metrics export the environment asks for (see
// MetricsEnabled): every metric g gathers (a sidecar.Metrics' Gatherer:
// the same names as its /metrics), read through the OpenTelemetry
// Prometheus bridge at each export and pushed by a periodic reader
// (OTEL_METRIC_EXPORT_INTERVAL, 60 s by default) to the OTLP HTTP/protobuf
// exporter, which reads the rest of the OTEL_EXPORTER_OTLP_* variables
// itself. Its meter provider serves an embedder's own instruments too. Off,
// it returns a Metrics with no provider.
func StartMetrics(ctx context.Context, lookup func(string) (string, bool), g prometheus.Gatherer) (*Metrics, error) {
	if !MetricsEnabled(lookup) {
		return &Metrics{}, nil
	}
	exp, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: otlp metric exporter: %w", err)
	}
	res, err := serviceResource()
	if err != nil {
		return nil, err
	}
	var readerOpts []sdkmetric.PeriodicReaderOption
	if g != nil {
		readerOpts = append(readerOpts, sdkmetric.WithProducer(otelprom.NewMetricProducer(otelprom.WithGatherer(g))))
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, readerOpts...)),
		sdkmetric.WithResource(res))
	return &Metrics{mp: mp}, nil
}

// MeterProvider is the SDK provider, for an embedder's own instruments;
// nil when metrics are off.
func (m *Metrics) MeterProvider() metric.MeterProvider {
	if m == nil || m.mp == nil {
		return nil
	}
	return m.mp
}

// Shutdown exports the metrics a last time and stops the exporter, waiting
// at most a few seconds whatever ctx allows. A no-op when metrics are off.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil || m.mp == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := m.mp.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: metrics shutdown: %w", err)
	}
	return nil
}
