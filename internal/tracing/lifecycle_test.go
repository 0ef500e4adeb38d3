package tracing

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

var testStates = States{Backoff: "backoff", Starting: "starting", Initializing: "initializing", Ready: "ready"}

// TestLifecycle: a start that reaches ready is one trace with its spawn
// and handshake; one that crashes in the handshake fails, and the restart
// after its backoff is "server restart" with the backoff as a phase.
func TestLifecycle(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	lt := NewLifecycle(tp, testStates)

	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	lt.Observe("s", "starting", at(0))
	lt.Observe("s", "initializing", at(1))
	lt.Observe("s", "ready", at(2))
	lt.Observe("s", "starting", at(10))
	lt.Observe("s", "initializing", at(11))
	lt.Observe("s", "backoff", at(12))
	lt.Observe("s", "starting", at(15))
	lt.Observe("s", "crashed", at(16))
	lt.Observe("other", "ready", at(20)) // no attempt under way: nothing

	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	var names []string
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		names = append(names, s.Name)
	}
	slices.Sort(names)
	want := []string{"backoff", "handshake", "handshake", "server restart s", "server start s", "server start s", "spawn", "spawn", "spawn"}
	if !slices.Equal(names, want) {
		t.Fatalf("spans %q, want %q", names, want)
	}
	starts := byName["server start s"]
	if starts[0].Status.Code == codes.Error || !starts[0].StartTime.Equal(at(0)) || !starts[0].EndTime.Equal(at(2)) {
		t.Errorf("first start: %v %v–%v, want ok over 0s–2s", starts[0].Status, starts[0].StartTime, starts[0].EndTime)
	}
	if starts[1].Status.Code != codes.Error || !starts[1].EndTime.Equal(at(12)) {
		t.Errorf("second start: %v ending %v, want failed at 12s", starts[1].Status, starts[1].EndTime)
	}
	restart := byName["server restart s"][0]
	if restart.Status.Code != codes.Error || !restart.StartTime.Equal(at(12)) || !restart.EndTime.Equal(at(16)) {
		t.Errorf("restart: %v %v–%v, want failed over 12s–16s", restart.Status, restart.StartTime, restart.EndTime)
	}
	if b := byName["backoff"][0]; b.Parent.SpanID() != restart.SpanContext.SpanID() || !b.EndTime.Equal(at(15)) {
		t.Errorf("backoff is not the restart's child ending at 15s: %+v", b)
	}
}
