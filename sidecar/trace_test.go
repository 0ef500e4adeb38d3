package sidecar_test

import (
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// POST /v1/call takes the caller's W3C traceparent: the call's span joins
// that trace, and the server sees the call's span as its parent.
func TestCallJoinsTheCallersTrace(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	a := openAPIHost(t, mcpvisor.Options{TracerProvider: tp}, sidecar.Options{}, mcptest("t"))

	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	hdr := http.Header{"Traceparent": {"00-" + traceID + "-" + parent + "-01"}}
	r := a.doHost("POST", "/v1/call", map[string]any{"tool": "mcp__t__meta", "arguments": map[string]any{}}, hdr)
	if r.status != http.StatusOK {
		t.Fatalf("call: %d %s", r.status, r.body)
	}
	var res struct{ Text string }
	r.json(t, &res)

	var call *tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == "tools/call mcp__t__meta" {
			call = &s
		}
	}
	if call == nil {
		t.Fatalf("no call span among %d", len(spans.GetSpans()))
	}
	if got := call.SpanContext.TraceID().String(); got != traceID {
		t.Errorf("the call span's trace = %s, want the caller's %s", got, traceID)
	}
	if got := call.Parent.SpanID().String(); got != parent || !call.Parent.IsRemote() {
		t.Errorf("the call span's parent = %s (remote %v), want the caller's %s", got, call.Parent.IsRemote(), parent)
	}
	want := `"traceparent":"00-` + traceID + "-" + call.SpanContext.SpanID().String() + `-01"`
	if !strings.Contains(res.Text, want) {
		t.Errorf("the server's _meta = %s, want %s", res.Text, want)
	}
}
