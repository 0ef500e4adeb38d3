package mcpvisor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpvisor/mcpvisor"
)

// spanLog is an in-memory exporter and the provider that fills it.
type spanLog struct {
	exp *tracetest.InMemoryExporter
	tp  *sdktrace.TracerProvider
}

func newSpanLog(t *testing.T) *spanLog {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return &spanLog{exp: exp, tp: tp}
}

// named returns the ended spans called name, in the order they ended.
func (l *spanLog) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range l.exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// one returns the only span called name.
func (l *spanLog) one(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	got := l.named(name)
	if len(got) != 1 {
		t.Fatalf("%d spans %q, want 1 (all: %v)", len(got), name, l.names())
	}
	return got[0]
}

func (l *spanLog) names() []string {
	var out []string
	for _, s := range l.exp.GetSpans() {
		out = append(out, s.Name)
	}
	return out
}

// childOf reports whether s is a child of parent.
func childOf(s, parent tracetest.SpanStub) bool {
	return s.Parent.SpanID() == parent.SpanContext.SpanID() && s.Parent.TraceID() == parent.SpanContext.TraceID()
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == attribute.Key(key) {
			return kv.Value.Emit()
		}
	}
	return ""
}

// A multi round-trip call shows each round of input under the call span,
// between the requests it answers: two rounds, three requests, each with
// its queue wait, send and server time.
func TestTraceInputRounds(t *testing.T) {
	t.Parallel()
	spans := newSpanLog(t)
	ans := &elicitAnswers{answers: map[string]string{"name": "Ada", "color": "green"}}
	h := modernOpen(t, mcpvisor.Options{Elicitation: ans.handle, TracerProvider: spans.tp},
		modernTransports[0].server(t, "g", "modern"))
	if res := modernCall(t, h, "mcp__g__ask", `{}`, mcpvisor.CallOptions{}); res.IsError {
		t.Fatalf("ask: %s", res.Text)
	}
	call := spans.one(t, "tools/call mcp__g__ask")
	for i := 1; i <= 2; i++ {
		round := spans.one(t, fmt.Sprintf("input round %d", i))
		if !childOf(round, call) || round.Status.Code == codes.Error {
			t.Errorf("input round %d: parent %v, status %v", i, round.Parent.SpanID(), round.Status)
		}
	}
	if n := len(spans.named("input round 3")); n != 0 {
		t.Errorf("%d third rounds", n)
	}
	for _, name := range []string{"queue wait", "send", "server time"} {
		got := spans.named(name)
		if len(got) != 3 {
			t.Errorf("%d %q spans, want one per request (3)", len(got), name)
		}
		for _, s := range got {
			if !childOf(s, call) {
				t.Errorf("%s is not the call's", name)
			}
		}
	}
}

// A call the server runs as a task shows its polling under the call span:
// a "task" span with the task's id and final status, and each tasks/get
// and the tasks/result under it.
func TestTraceTaskPolling(t *testing.T) {
	spans := newSpanLog(t)
	h := openHost(t, mcpvisor.Options{TracerProvider: spans.tp}, taskServer("t"))
	waitReady(t, h, "t")
	var id string
	res, err := h.CallWith(context.Background(), "mcp__t__sleep_task", json.RawMessage(`{"ms":200}`),
		mcpvisor.CallOptions{OnTask: func(ti mcpvisor.TaskInfo) { id = ti.ID }})
	if err != nil || res.IsError {
		t.Fatalf("sleep_task: %v %v", res, err)
	}
	call := spans.one(t, "tools/call mcp__t__sleep_task")
	task := spans.one(t, "task")
	if !childOf(task, call) || attr(task, "mcpvisor.task.id") != id || attr(task, "mcpvisor.task.status") != string(mcpvisor.TaskCompleted) {
		t.Errorf("task span: parent %v, attributes %v", task.Parent.SpanID(), task.Attributes)
	}
	gets := spans.named("tasks/get")
	if len(gets) == 0 {
		t.Error("no tasks/get span")
	}
	for _, s := range append(gets, spans.one(t, "tasks/result")) {
		if !childOf(s, task) {
			t.Errorf("%s is not the task's", s.Name)
		}
	}
}

// A server's starts are traces of their own: the first "server start",
// one after a crash "server restart" with its backoff, each with its spawn
// and handshake; Host.Restart starts it afresh.
func TestTraceServerLifecycle(t *testing.T) {
	spans := newSpanLog(t)
	h := openHost(t, mcpvisor.Options{TracerProvider: spans.tp}, mcptest("s"))
	waitReady(t, h, "s")
	// Subscribed after the host's tracer, so an event reaches the test
	// once the tracer has handled it.
	onEvent, events := eventSink()
	defer h.Subscribe(onEvent)()
	first := status(t, h, "s").PID
	if _, err := h.Call(context.Background(), "mcp__s__crash", json.RawMessage(`{}`)); err == nil {
		t.Fatal("crash answered")
	}
	waitState(t, events, "s", mcpvisor.StateBackoff)
	waitState(t, events, "s", mcpvisor.StateReady)
	if err := h.Restart(context.Background(), "s"); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	waitState(t, events, "s", mcpvisor.StateReady)
	if st := status(t, h, "s"); st.PID == first || st.Restarts != 0 {
		t.Errorf("after Restart: pid %d (first %d), restarts %d", st.PID, first, st.Restarts)
	}
	starts, restarts := spans.named("server start s"), spans.named("server restart s")
	if len(starts) != 2 || len(restarts) != 1 {
		t.Fatalf("%d starts and %d restarts, want 2 and 1 (all: %v)", len(starts), len(restarts), spans.names())
	}
	for _, root := range append(starts, restarts...) {
		if root.Parent.IsValid() || attr(root, "mcpvisor.state") != "ready" || attr(root, "mcpvisor.server") != "s" {
			t.Errorf("%s: parent %v, attributes %v", root.Name, root.Parent.SpanID(), root.Attributes)
		}
		phases := map[string]bool{}
		for _, s := range spans.exp.GetSpans() {
			if childOf(s, root) {
				phases[s.Name] = true
			}
		}
		want := "spawn handshake"
		if strings.Contains(root.Name, "restart") {
			want = "backoff spawn handshake"
		}
		for _, p := range strings.Fields(want) {
			if !phases[p] {
				t.Errorf("%s lacks its %s phase (has %v)", root.Name, p, phases)
			}
		}
	}
}

// Restart refuses a disabled server and an unknown one.
func TestRestartRefuses(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcptest("s"))
	waitReady(t, h, "s")
	if err := h.Restart(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Restart(unknown) = %v", err)
	}
	if err := h.SetEnabled(context.Background(), "s", false); err != nil {
		t.Fatal(err)
	}
	if err := h.Restart(context.Background(), "s"); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("Restart(disabled) = %v", err)
	}
}
