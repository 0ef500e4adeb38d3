package flows

import (
	"context"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/elicit"

	"github.com/mcpvisor/mcpvisor/pipeline"
)

// A call with no handlers of its own, on a host outside a cluster, has
// nothing to attach: the pipeline's flows stage costs it no allocation, and
// its context is passed on as it came. With handlers, the call is an asker
// until it detaches.
func TestCallsAttachIdle(t *testing.T) {
	f := New(Options{})
	calls := f.Calls(false)
	c := &pipeline.Call{Server: "s", Options: &pipeline.CallOptions{}}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		got, detach := calls.Attach(ctx, c)
		if got != ctx {
			t.Fatal("the context was replaced")
		}
		detach()
	}); n != 0 {
		t.Errorf("%v allocations per call with no handlers, want 0", n)
	}

	c.Options.Elicitation = func(context.Context, *elicit.Request) (elicit.Response, error) {
		return elicit.Response{}, nil
	}
	got, detach := calls.Attach(ctx, c)
	if own, _, _ := Of(got); own == nil || len(f.askers.byServer["s"]) != 1 {
		t.Fatalf("a call with a handler: asker %v, %d askers", own, len(f.askers.byServer["s"]))
	}
	detach()
	if n := len(f.askers.byServer["s"]); n != 0 {
		t.Errorf("%d askers after detach, want 0", n)
	}
}
