// Package telemetry sets up OpenTelemetry from the standard OTEL_*
// environment, as the mcpvisor commands run it: an SDK tracer provider
// exporting over OTLP HTTP/protobuf (Start), and an SDK meter provider
// pushing a sidecar's Prometheus registry over OTLP under the same metric
// names (StartMetrics), or nothing when the environment does not ask for
// them (see Enabled and MetricsEnabled). The host itself needs only a provider
// (mcpvisor.Options.TracerProvider); an embedder with its own SDK setup
// passes that instead and does not need this package.
//
//	tracing, err := telemetry.Start(ctx, os.LookupEnv)
//	if err != nil {
//		return err
//	}
//	defer tracing.Shutdown(ctx) // after the host's Close: flushes the last spans
//	h, err := mcpvisor.Open(ctx, mcpvisor.Options{TracerProvider: tracing.TracerProvider()})
//
// With a sidecar.Metrics m (its CallMiddleware in the host's Options):
//
//	metrics, err := telemetry.StartMetrics(ctx, os.LookupEnv, m.Gatherer())
//	defer metrics.Shutdown(ctx) // a last export
package telemetry
