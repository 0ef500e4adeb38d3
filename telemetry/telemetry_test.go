package telemetry

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/mcpvisor/mcpvisor/internal/otlptest"
)

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "TRUE"}, false},
		{"sdk not disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "false"}, true},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{"exporter otlp", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"blank endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			if got := Enabled(lookup); got != tc.want {
				t.Errorf("Enabled = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStartOffHasNoProvider(t *testing.T) {
	tr, err := Start(context.Background(), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if tp := tr.TracerProvider(); tp != nil {
		t.Errorf("tracing off, yet a provider %T", tp)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestStartOnMakesAProvider(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1") // never reached: no span is made
	tr, err := Start(context.Background(), func(k string) (string, bool) {
		return "http://127.0.0.1:1", k == "OTEL_EXPORTER_OTLP_ENDPOINT"
	})
	if err != nil {
		t.Fatal(err)
	}
	if tr.TracerProvider() == nil {
		t.Fatal("tracing on, yet no provider")
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// StartMetrics pushes what a Prometheus registry gathers over OTLP, under
// the same names; Shutdown sends the last export.
func TestStartMetricsExportsTheRegistry(t *testing.T) {
	rc := otlptest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL())
	reg := prometheus.NewRegistry()
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcpvisor_calls_total", Help: "calls"},
		[]string{"server", "tool", "outcome"})
	reg.MustRegister(calls)
	calls.WithLabelValues("a", "echo", "ok").Add(3)
	m, err := StartMetrics(context.Background(), func(k string) (string, bool) {
		return rc.URL(), k == "OTEL_EXPORTER_OTLP_ENDPOINT"
	}, reg)
	if err != nil {
		t.Fatal(err)
	}
	if m.MeterProvider() == nil {
		t.Fatal("metrics on, yet no provider")
	}
	if err := m.Shutdown(context.Background()); err != nil { // the last export
		t.Fatal(err)
	}
	got := rc.WaitMetric(t, func(mt *metricpb.Metric) bool { return mt.Name == "mcpvisor_calls_total" })
	pts := got.GetSum().GetDataPoints()
	if len(pts) != 1 || pts[0].GetAsDouble() != 3 {
		t.Fatalf("mcpvisor_calls_total exported as %v", got)
	}
	labels := map[string]string{}
	for _, kv := range pts[0].Attributes {
		labels[kv.Key] = kv.Value.GetStringValue()
	}
	if labels["server"] != "a" || labels["tool"] != "echo" || labels["outcome"] != "ok" {
		t.Errorf("labels %v", labels)
	}
}

func TestStartMetricsOff(t *testing.T) {
	m, err := StartMetrics(context.Background(), func(k string) (string, bool) {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_METRICS_EXPORTER": "none"}[k], true
	}, prometheus.NewRegistry())
	if err != nil || m.MeterProvider() != nil || m.Shutdown(context.Background()) != nil {
		t.Fatalf("metrics off: %v, provider %v", err, m.MeterProvider())
	}
}
