// Package telemetry sets up OpenTelemetry tracing from the standard OTEL_*
// environment, as the mcpvisor commands run it: an SDK tracer provider
// exporting over OTLP HTTP/protobuf, or nothing when the environment does
// not ask for it (see Enabled). The host itself needs only a provider
// (mcpvisor.Options.TracerProvider); an embedder with its own SDK setup
// passes that instead and does not need this package.
//
//	tracing, err := telemetry.Start(ctx, os.LookupEnv)
//	if err != nil {
//		return err
//	}
//	defer tracing.Shutdown(ctx) // after the host's Close: flushes the last spans
//	h, err := mcpvisor.Open(ctx, mcpvisor.Options{TracerProvider: tracing.TracerProvider()})
package telemetry
