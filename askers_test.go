package mcpvisor

import (
	"context"
	"testing"

	"github.com/mcpvisor/mcpvisor/protocol"
)

func TestAskersPick(t *testing.T) {
	handle := func(context.Context, *ElicitationRequest) (ElicitationResponse, error) {
		return ElicitationResponse{}, nil
	}
	newAsker := func(server, session string) *asker {
		return &asker{ctx: context.Background(), server: server, scope: Scope{Session: session}, handle: handle}
	}
	pending := func(n int) func() int { return func() int { return n } }
	var as askers

	if a := as.pick("s", "", askerElicits, pending(0)); a != nil {
		t.Fatal("picked a call with none in flight")
	}
	a1 := newAsker("s", "one")
	as.add(a1)
	if a := as.pick("s", "", askerElicits, pending(1)); a != a1 {
		t.Fatal("the only call in flight was not picked")
	}
	if a := as.pick("s", "", askerElicits, pending(2)); a != nil {
		t.Fatal("picked a call while a request of someone else is in flight")
	}
	if a := as.pick("other", "", askerElicits, pending(1)); a != nil {
		t.Fatal("picked a call to another server")
	}
	a2 := newAsker("s", "one")
	as.add(a2)
	if a := as.pick("s", "", askerElicits, pending(2)); a != a1 {
		t.Fatal("two calls of one session: want the oldest")
	}
	a3 := newAsker("s", "two")
	as.add(a3)
	if a := as.pick("s", "", askerElicits, pending(3)); a != nil {
		t.Fatal("picked a call while two sessions have calls in flight")
	}
	// A task id settles it, whoever else is in flight.
	task := "task-9"
	a3.task.Store(&task)
	if a := as.pick("s", "task-9", askerElicits, pending(10)); a != a3 {
		t.Fatal("the call running the named task was not picked")
	}
	if a := as.pick("s", "task-other", askerElicits, pending(1)); a != nil {
		t.Fatal("picked a call for a task it does not run")
	}
	as.remove(a3)
	as.remove(a2)
	if a := as.pick("s", "", askerElicits, pending(1)); a != a1 {
		t.Fatal("after removals the remaining call was not picked")
	}
	as.remove(a1)
	if len(as.byServer) != 0 {
		t.Fatalf("left %v", as.byServer)
	}
	// The embedder's own calls (no session) never share a question.
	e1, e2 := newAsker("s", ""), newAsker("s", "")
	as.add(e1)
	if a := as.pick("s", "", askerElicits, pending(1)); a != e1 {
		t.Fatal("a lone embedder call was not picked")
	}
	as.add(e2)
	if a := as.pick("s", "", askerElicits, pending(2)); a != nil {
		t.Fatal("picked one of two embedder calls")
	}
	as.remove(e1)
	as.remove(e2)

	// Two clients of one scope (a gateway's modern clients) never share a
	// question either.
	c1, c2 := newAsker("s", "modern"), newAsker("s", "modern")
	c1.client, c2.client = "client-1", "client-2"
	as.add(c1)
	as.add(c2)
	if a := as.pick("s", "", askerElicits, pending(2)); a != nil {
		t.Fatal("picked one of two clients' calls in one scope")
	}
	as.remove(c1)
	if a := as.pick("s", "", askerElicits, pending(1)); a != c2 {
		t.Fatal("the remaining client's call was not picked")
	}
	as.remove(c2)

	// A call that can only elicit is never picked for sampling, and counts
	// as someone else's request in flight.
	sampler := newAsker("s", "one")
	sampler.handle, sampler.sample = nil, func(context.Context, string, *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
		return nil, nil
	}
	as.add(sampler)
	if a := as.pick("s", "", askerSamples, pending(1)); a != sampler {
		t.Fatal("the sampling call was not picked for sampling")
	}
	if a := as.pick("s", "", askerElicits, pending(1)); a != nil {
		t.Fatal("a call without an elicitation handler was picked to elicit")
	}
	elicitor := newAsker("s", "one")
	as.add(elicitor)
	if a := as.pick("s", "", askerSamples, pending(2)); a != nil {
		t.Fatal("picked for sampling while a call that cannot sample is in flight")
	}
}
