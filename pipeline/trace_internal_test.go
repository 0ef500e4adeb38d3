package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpvisor/mcpvisor/actors"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestTraceMetaCarriesTheCallersSpan(t *testing.T) {
	if m := TraceMeta(context.Background()); m != nil {
		t.Fatalf("no span, yet _meta %s", m)
	}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("congo=t61rcWkgMzE")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	member, _ := baggage.NewMember("userId", "alice")
	bag, _ := baggage.New(member)
	ctx = baggage.ContextWithBaggage(ctx, bag)

	var got map[string]string
	if err := json.Unmarshal(TraceMeta(ctx), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate":  "congo=t61rcWkgMzE",
		"baggage":     "userId=alice",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// With no provider set, the trace stage costs a call nothing: no span, no
// allocation, the caller's context passed on as it came.
func TestTraceStageOffAllocatesNothing(t *testing.T) {
	p := &Pipeline{}
	var seen context.Context
	res := &Result{}
	next := func(ctx context.Context, c *Call) (*Result, error) { seen = ctx; return res, nil }
	stage := p.traceStage(next)
	c := &Call{Tool: "mcp__s__t", Server: "s", Name: "t"}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { stage(ctx, c) }); n != 0 {
		t.Errorf("%v allocations per call with tracing off, want 0", n)
	}
	if seen != ctx {
		t.Error("the stage replaced the context with tracing off")
	}
}

// A failed call's span says so: status error, the outcome as error.type;
// and the span is the parent the server is told of.
func TestTraceStageSpan(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	p := &Pipeline{cfg: Config{TracerProvider: tp}}
	for _, tc := range []struct {
		name    string
		res     *Result
		err     error
		outcome string
	}{
		{"ok", &Result{}, nil, "ok"},
		{"tool error", &Result{IsError: true}, nil, "tool_error"},
		{"timeout", nil, fmt.Errorf("mcp__s__t: %w", actors.ErrTimeout), "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans.Reset()
			var meta json.RawMessage
			stage := p.traceStage(func(ctx context.Context, c *Call) (*Result, error) {
				meta = TraceMeta(ctx)
				return tc.res, tc.err
			})
			stage(context.Background(), &Call{Tool: "mcp__s__t", Server: "s", Name: "t", Scope: Scope{Session: "chat"}})
			got := spans.GetSpans()
			if len(got) != 1 {
				t.Fatalf("%d spans, want 1", len(got))
			}
			s := got[0]
			if s.Name != "tools/call mcp__s__t" {
				t.Errorf("span name %q", s.Name)
			}
			attrs := map[string]string{}
			for _, kv := range s.Attributes {
				attrs[string(kv.Key)] = kv.Value.Emit()
			}
			want := map[string]string{"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
				"gen_ai.tool.name": "t", "mcpvisor.server": "s", "mcpvisor.session": "chat", "mcpvisor.outcome": tc.outcome}
			if tc.outcome != "ok" {
				want["error.type"] = tc.outcome
			}
			if diff := cmp.Diff(want, attrs); diff != "" {
				t.Errorf("attributes (-want +got):\n%s", diff)
			}
			if wantErr := tc.outcome != "ok"; (s.Status.Code == codes.Error) != wantErr {
				t.Errorf("status %v, want error %v", s.Status, wantErr)
			}
			tp := "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
			if !strings.Contains(string(meta), tp) {
				t.Errorf("the server's _meta %s, want traceparent %s", meta, tp)
			}
		})
	}
}

// With no provider set, TraceRequest costs an inbound request nothing.
func TestTraceRequestOffAllocatesNothing(t *testing.T) {
	p := &Pipeline{}
	ctx := context.Background()
	res := &Result{}
	if n := testing.AllocsPerRun(100, func() {
		got, end := p.TraceRequest(ctx, "tools/call", "mcp__s__t")
		end(res, nil)
		if got != ctx {
			t.Fatal("the context was replaced with tracing off")
		}
	}); n != 0 {
		t.Errorf("%v allocations per request with tracing off, want 0", n)
	}
}
