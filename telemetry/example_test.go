package telemetry_test

import (
	"context"
	"fmt"

	"github.com/mcpvisor/mcpvisor/telemetry"
)

func ExampleStart() {
	// An environment with no OTLP endpoint: tracing is off, the provider
	// nil, and the host takes the global no-op one.
	env := map[string]string{"OTEL_SERVICE_NAME": "agent-tools"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tracing, err := telemetry.Start(context.Background(), lookup)
	if err != nil {
		panic(err)
	}
	defer tracing.Shutdown(context.Background())
	fmt.Println(tracing.TracerProvider() == nil)
	// Output: true
}
