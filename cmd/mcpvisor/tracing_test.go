package main

import (
	"net/http"
	"os"
	"strings"
	"testing"

	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

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

// With an OTLP endpoint, mcpvisor serve pushes its /metrics over OTLP under
// the same names, the per-tool latency among them, and a call made through
// the API is in them.
func TestServeExportsMetrics(t *testing.T) {
	rc := otlptest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL())
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "100") // milliseconds
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	cfg := writeConfig(t, `{"mcpServers":{"a":{"command":"MCPTEST","args":["-name","a"]}}}`)
	s := startServe(t, "--config", cfg, "--data", t.TempDir())
	tok, err := os.ReadFile(s.tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/call", strings.NewReader(`{"tool":"mcp__a__echo","arguments":{"text":"hi"}}`))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/call: %s", resp.Status)
	}
	m := rc.WaitMetric(t, func(m *metricpb.Metric) bool {
		if m.Name != "mcpvisor_tool_call_duration_seconds" {
			return false
		}
		for _, p := range m.GetHistogram().GetDataPoints() {
			for _, kv := range p.Attributes {
				if kv.Key == "tool" && kv.Value.GetStringValue() == "echo" && p.GetCount() == 1 {
					return true
				}
			}
		}
		return false
	})
	if m.GetHistogram() == nil {
		t.Fatalf("tool latency exported as %v", m)
	}
	rc.WaitMetric(t, func(m *metricpb.Metric) bool { return m.Name == "mcpvisor_server_state" })
}
