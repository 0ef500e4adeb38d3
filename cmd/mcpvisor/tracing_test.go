package main

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/otlptest"
)

// With an OTLP endpoint in the environment, mcpvisor stdio exports a span
// per call, as service mcpvisor, and flushes it when it exits.
func TestStdioExportsSpans(t *testing.T) {
	rc := otlptest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL())
	for _, k := range []string{"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	cfg := writeConfig(t, `{"mcpServers":{"a":{"command":"MCPTEST","args":["-name","a"]}}}`)
	c := startStdioCLI(t, "--config", cfg, "--data", t.TempDir(), "--activate", "all")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.answer("1", nil)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp__a__meta","arguments":{},"_meta":{"traceparent":"00-` + traceID + `-00f067aa0ba902b7-01"}}}`)
	if a := c.answer("2", nil); !strings.Contains(a, traceID) {
		t.Fatalf("the server did not see the caller's trace: %s", a)
	}
	c.in.Close() // mcpvisor exits, flushing its spans
	span := rc.Wait(t, func(s otlptest.Span) bool { return s.Name == "tools/call mcp__a__meta" })
	if span.Service != "mcpvisor" {
		t.Errorf("service.name %q, want mcpvisor", span.Service)
	}
	if got := span.Attr("mcpvisor.server"); got != "a" {
		t.Errorf("mcpvisor.server = %q", got)
	}
}
