package pipeline

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// What each stage costs a plain tools/call: an echo tool's text result,
// no session, no handlers, no progress, no tracing, no media, no task.
// The server's side is answered at once, with no I/O, so that only the
// pipeline is measured; the root package's BenchmarkHostCall measures a
// call to a real server.

// echoRaw is the CallToolResult of a small echo tool.
const echoRaw = `{"content":[{"type":"text","text":"{\"n\":1}"}]}`

var echoRawJSON = json.RawMessage(echoRaw)

// echoTransport answers every request at once with echoRaw.
type echoTransport struct{ raw json.RawMessage }

func (t echoTransport) Call(context.Context, *Call, json.RawMessage, *actors.CallOptions) (json.RawMessage, error) {
	return t.raw, nil
}

func (t echoTransport) Request(context.Context, string, string, json.RawMessage, *actors.CallOptions) (json.RawMessage, error) {
	return t.raw, nil
}

// idleFlows is the host's Flows for a call with no handlers of its own on
// a host outside a cluster: nothing to attach.
type idleFlows struct{}

func (idleFlows) Attach(ctx context.Context, _ *Call) (context.Context, func()) {
	return ctx, detachNothing
}
func (idleFlows) TaskStarted(context.Context, string) {}
func (idleFlows) Fulfil(context.Context, string, protocol.InputRequest) (json.RawMessage, error) {
	return nil, nil
}

func detachNothing() {}

// answerEcho is a next stage that answers as the send stage does: the raw
// result left in the call, no Result.
func answerEcho(_ context.Context, c *Call) (*Result, error) {
	c.raw = echoRawJSON
	return nil, nil
}

// stageCase is one stage with nothing to do for a plain tools/call.
type stageCase struct {
	name  string
	stage func(p *Pipeline) Func // the stage over answerEcho
	scope Scope
}

func idleStages() []stageCase {
	return []stageCase{
		{name: "trace", stage: func(p *Pipeline) Func { return p.traceStage(answerEcho) }},
		{name: "record", stage: func(p *Pipeline) Func { return p.recordStage(answerEcho) }},
		{name: "grants", stage: func(p *Pipeline) Func { return p.grantStage(answerEcho) }},
		{name: "grants/session", stage: func(p *Pipeline) Func { return p.grantStage(answerEcho) }, scope: Scope{Session: "s"}},
		{name: "arguments", stage: func(p *Pipeline) Func { return p.argumentStage(answerEcho) }},
		{name: "flows", stage: func(p *Pipeline) Func { return p.flowStage(answerEcho) }},
		{name: "tasks", stage: func(p *Pipeline) Func { return p.taskStage(answerEcho) }},
		{name: "input", stage: func(p *Pipeline) Func { return p.inputStage(answerEcho) }},
		{name: "send", stage: func(p *Pipeline) Func { return p.send }},
	}
}

// costPipeline is the host's pipeline for a plain call: no journal, no
// tracing, every session's group granted, arguments not validated.
func costPipeline(t testing.TB, journal *actors.Journal) *Pipeline {
	return newTestPipeline(t, Config{
		Transport: echoTransport{echoRawJSON},
		Flows:     idleFlows{},
		Journal:   journal,
		Granted:   func(Scope, string) bool { return true },
		Validates: func(string) bool { return false },
	})
}

// Every stage with nothing to do for a plain call costs it nothing: no
// allocation (and so no timer, goroutine or subscription made).
func TestIdleStagesAllocateNothing(t *testing.T) {
	p := costPipeline(t, nil)
	ctx := context.Background()
	for _, tc := range idleStages() {
		t.Run(tc.name, func(t *testing.T) {
			run := tc.stage(p)
			c := p.NewCall(tc.scope, "mcp__echo__echo", json.RawMessage(`{"n":1}`), nil)
			if _, err := run(ctx, c); err != nil {
				t.Fatal(err)
			}
			if string(c.raw) != echoRaw {
				t.Fatalf("the call's raw result is %s, want the echo's", c.raw)
			}
			if n := testing.AllocsPerRun(200, func() { run(ctx, c) }); n != 0 {
				t.Errorf("%v allocations per call, want 0", n)
			}
		})
	}
}

// BenchmarkCallStages is the cost of each stage of the pipeline for a
// plain tools/call (ns/op, allocs/op), each over a next that answers at
// once ("answer": that next alone, to subtract); "new-call" is making the
// call, "result" decoding an echo's result, "record/history" journaling
// it, and "pipeline" every stage together, over a transport that answers
// at once.
func BenchmarkCallStages(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"n":1}`)
	p := costPipeline(b, nil)
	bench := func(name string, scope Scope, run Func) {
		b.Run(name, func(b *testing.B) {
			c := p.NewCall(scope, "mcp__echo__echo", args, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := run(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	bench("answer", Scope{}, answerEcho)
	b.Run("new-call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.NewCall(Scope{}, "mcp__echo__echo", args, nil)
		}
	})
	for _, tc := range idleStages() {
		bench(tc.name, tc.scope, tc.stage(p))
	}
	bench("result", Scope{}, p.resultStage(answerEcho))

	store, err := persistence.Open(b.TempDir(), persistence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	j := actors.NewJournal(store, actors.JournalOptions{}, nil)
	b.Cleanup(func() { j.Close(); store.Close() })
	hp := costPipeline(b, j)
	bench("record/history", Scope{}, hp.recordStage(answerEcho))

	b.Run("pipeline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Run(ctx, p.NewCall(Scope{}, "mcp__echo__echo", args, nil)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pipeline/history", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := hp.Run(ctx, hp.NewCall(Scope{}, "mcp__echo__echo", args, nil)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
