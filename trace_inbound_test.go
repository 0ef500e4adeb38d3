package mcpvisor

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"
)

const (
	testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	testTraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
)

func TestTraceFromHeaders(t *testing.T) {
	ctx := context.Background()
	if got := TraceFromHeaders(ctx, http.Header{}); got != ctx {
		t.Error("no trace headers, yet a new context")
	}
	h := http.Header{}
	h.Set("traceparent", testTraceparent)
	h.Set("tracestate", "congo=t61rcWkgMzE")
	h.Set("baggage", "userId=alice")
	got := TraceFromHeaders(ctx, h)
	sc := trace.SpanContextFromContext(got)
	if sc.TraceID().String() != testTraceID || !sc.IsRemote() || sc.TraceState().String() != "congo=t61rcWkgMzE" {
		t.Errorf("span context %+v", sc)
	}
	if b := baggage.FromContext(got).Member("userId").Value(); b != "alice" {
		t.Errorf("baggage userId = %q", b)
	}
}

func TestTraceFromMeta(t *testing.T) {
	ctx := context.Background()
	for _, meta := range []string{``, `null`, `{}`, `{"progressToken":1}`, `{"traceparent":"junk"}`, `[1]`} {
		got := TraceFromMeta(ctx, json.RawMessage(meta))
		if trace.SpanContextFromContext(got).IsValid() {
			t.Errorf("_meta %s gave a span context", meta)
		}
	}
	// _meta names the request: it wins over the connection's header.
	other := trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}}))
	got := TraceFromMeta(other, json.RawMessage(`{"traceparent":"`+testTraceparent+`","baggage":"k=v"}`))
	if sc := trace.SpanContextFromContext(got); sc.TraceID().String() != testTraceID {
		t.Errorf("trace %s, want %s", sc.TraceID(), testTraceID)
	}
	if v := baggage.FromContext(got).Member("k").Value(); v != "v" {
		t.Errorf("baggage k = %q", v)
	}
}
