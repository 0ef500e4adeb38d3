package flows

import (
	"context"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/elicit"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

func TestAskersPick(t *testing.T) {
	handle := func(context.Context, *elicit.Request) (elicit.Response, error) {
		return elicit.Response{}, nil
	}
	newAsker := func(server, session string) *Asker {
		return &Asker{Ctx: context.Background(), Server: server, Scope: persistence.Scope{Session: session}, Elicit: handle}
	}
	pending := func(n int) func() int { return func() int { return n } }
	var as Askers

	if a := as.Pick("s", false, "", (*Asker).elicits, pending(0)); a != nil {
		t.Fatal("picked a call with none in flight")
	}
	a1 := newAsker("s", "one")
	as.Add(a1)
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(1)); a != a1 {
		t.Fatal("the only call in flight was not picked")
	}
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(2)); a != nil {
		t.Fatal("picked a call while a request of someone else is in flight")
	}
	if a := as.Pick("other", false, "", (*Asker).elicits, pending(1)); a != nil {
		t.Fatal("picked a call to another server")
	}
	a2 := newAsker("s", "one")
	as.Add(a2)
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(2)); a != a1 {
		t.Fatal("two calls of one session: want the oldest")
	}
	a3 := newAsker("s", "two")
	as.Add(a3)
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(3)); a != nil {
		t.Fatal("picked a call while two sessions have calls in flight")
	}
	// A task id settles it, whoever else is in flight.
	task := "task-9"
	a3.Task.Store(&task)
	if a := as.Pick("s", false, "task-9", (*Asker).elicits, pending(10)); a != a3 {
		t.Fatal("the call running the named task was not picked")
	}
	if a := as.Pick("s", false, "task-other", (*Asker).elicits, pending(1)); a != nil {
		t.Fatal("picked a call for a task it does not run")
	}
	as.Remove(a3)
	as.Remove(a2)
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(1)); a != a1 {
		t.Fatal("after removals the remaining call was not picked")
	}
	as.Remove(a1)
	if len(as.byServer) != 0 {
		t.Fatalf("left %v", as.byServer)
	}
	// The embedder's own calls (no session) never share a question.
	e1, e2 := newAsker("s", ""), newAsker("s", "")
	as.Add(e1)
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(1)); a != e1 {
		t.Fatal("a lone embedder call was not picked")
	}
	as.Add(e2)
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(2)); a != nil {
		t.Fatal("picked one of two embedder calls")
	}
	as.Remove(e1)
	as.Remove(e2)

	// Two clients of one scope (a gateway's modern clients) never share a
	// question either.
	c1, c2 := newAsker("s", "modern"), newAsker("s", "modern")
	c1.Client, c2.Client = "client-1", "client-2"
	as.Add(c1)
	as.Add(c2)
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(2)); a != nil {
		t.Fatal("picked one of two clients' calls in one scope")
	}
	as.Remove(c1)
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(1)); a != c2 {
		t.Fatal("the remaining client's call was not picked")
	}
	as.Remove(c2)

	// A call that can only elicit is never picked for sampling, and counts
	// as someone else's request in flight.
	sampler := newAsker("s", "one")
	sampler.Elicit, sampler.Sample = nil, func(context.Context, string, *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
		return nil, nil
	}
	as.Add(sampler)
	if a := as.Pick("s", false, "", (*Asker).samples, pending(1)); a != sampler {
		t.Fatal("the sampling call was not picked for sampling")
	}
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(1)); a != nil {
		t.Fatal("a call without an elicitation handler was picked to elicit")
	}
	elicitor := newAsker("s", "one")
	as.Add(elicitor)
	if a := as.Pick("s", false, "", (*Asker).samples, pending(2)); a != nil {
		t.Fatal("picked for sampling while a call that cannot sample is in flight")
	}
	as.Remove(sampler)
	as.Remove(elicitor)

	// A call whose client holds its questions (Awaiting) asks nothing new:
	// the request is the other call's, even of another client; when every
	// call awaits, the rule is as before.
	held, next := newAsker("s", "modern"), newAsker("s", "modern")
	held.Client, next.Client = "client-1", "client-2"
	awaiting := true
	held.Awaiting = func() bool { return awaiting }
	as.Add(held)
	as.Add(next)
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(2)); a != next {
		t.Fatal("the call not awaiting its client was not picked")
	}
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(3)); a != nil {
		t.Fatal("picked a call while a request of someone else is in flight")
	}
	awaiting = false
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(2)); a != nil {
		t.Fatal("picked one of two clients' calls once the first was answered")
	}
	// One that awaits and could not have asked this anyway (it only
	// samples) is not someone else's request in flight either.
	awaiting = true
	sampleOnly := newAsker("s", "modern")
	sampleOnly.Client, sampleOnly.Elicit = "client-3", nil
	sampleOnly.Sample = func(context.Context, string, *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
		return nil, nil
	}
	sampleOnly.Awaiting = func() bool { return true }
	as.Add(sampleOnly)
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(3)); a != next {
		t.Fatal("a sampling call awaiting its client kept the question from the one that can ask")
	}
	as.Remove(sampleOnly)
	next.Awaiting = func() bool { return true }
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(2)); a != nil {
		t.Fatal("picked one of two clients' calls that both await")
	}

	as.Remove(next)
	as.Remove(held)

	// A server's legacy incarnation serves the calls of legacy clients
	// alone: its request is theirs, counted on its own connection, whatever
	// calls of modern clients the server runs meanwhile.
	modern := newAsker("s", "modern")
	modern.Client = "client-m"
	legacy := newAsker("s", "legacy")
	legacy.Legacy = true
	as.Add(modern)
	as.Add(legacy)
	if a := as.Pick("s", true, "", (*Asker).elicits, pending(1)); a != legacy {
		t.Fatal("the legacy incarnation's request did not reach the one call that went there")
	}
	if a := as.Pick("s", true, "", (*Asker).elicits, pending(2)); a != nil {
		t.Fatal("picked a call while the legacy incarnation serves another request")
	}
	if a := as.Pick("s", false, "", (*Asker).elicits, pending(1)); a != nil {
		t.Fatal("the server's own request went to one of two sessions' calls")
	}
	as.Remove(legacy)
	if a := as.Pick("s", true, "", (*Asker).elicits, pending(1)); a != nil {
		t.Fatal("a modern client's call answered the legacy incarnation's request")
	}
}
