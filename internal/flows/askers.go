package flows

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/pipeline"
)

// Asker is a call in flight with its own elicitation or sampling handler,
// or, for a call another member of the cluster forwarded, the member to
// ask. Set its fields before Askers.Add; only Task changes afterwards.
type Asker struct {
	Ctx    context.Context // the call's: a question ends with it
	Call   *pipeline.Call  // the call, nil for one another member forwarded
	Server string
	Scope  persistence.Scope
	Client string // the caller's client, within Scope (CallOptions.Client)
	// Legacy: the call was made for a legacy client
	// (pipeline.CallOptions.LegacyClient), so a modern server's legacy
	// incarnation serves it and the requests that incarnation sends are
	// its (actors.ServerRequest.Legacy).
	Legacy bool
	Elicit ElicitFunc
	Sample SampleFunc
	Roots  RootsFunc
	// Awaiting reports whether the call waits on its client for answers
	// it was already asked (pipeline.CallOptions.AwaitingClient); nil:
	// never.
	Awaiting func() bool
	// Delegate, for a call another member forwarded here, asks that
	// member, where the call's handlers are.
	Delegate func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Task is the call's task id, once it runs as one.
	Task atomic.Pointer[string]
}

func (a *Asker) elicits() bool { return a.Elicit != nil || a.Delegate != nil }
func (a *Asker) samples() bool { return a.Sample != nil || a.Delegate != nil }

// listsRoots: a forwarded call's roots are the host's (Ask does not carry
// roots/list to the calling member).
func (a *Asker) listsRoots() bool { return a.Roots != nil }

// delegated asks a question of the member a forwarded call came from,
// until the call ends.
func (a *Asker) delegated(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(a.Ctx, cancel)()
	return a.Delegate(ctx, method, params)
}

// Askers tracks the calls in flight that have their own handlers, by
// server, to attribute a server's request to one of them. The zero value
// is ready; safe for concurrent use.
type Askers struct {
	mu       sync.Mutex
	byServer map[string][]*Asker
}

// Add registers a call in flight; Remove it once the call ends.
func (as *Askers) Add(a *Asker) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.byServer == nil {
		as.byServer = map[string][]*Asker{}
	}
	as.byServer[a.Server] = append(as.byServer[a.Server], a)
}

// Remove forgets a call Add registered.
func (as *Askers) Remove(a *Asker) {
	as.mu.Lock()
	defer as.mu.Unlock()
	list := slices.DeleteFunc(as.byServer[a.Server], func(x *Asker) bool { return x == a })
	if len(list) == 0 {
		delete(as.byServer, a.Server)
		return
	}
	as.byServer[a.Server] = list
}

// OfTask returns the call in flight from server that runs as task, among
// those with handlers of their own, or nil.
func (as *Askers) OfTask(server, task string) *Asker {
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, a := range as.byServer[server] {
		if t := a.Task.Load(); t != nil && *t == task {
			return a
		}
	}
	return nil
}

// Pick returns the call a request from server belongs to, or nil, among
// the calls that can answer it (can). A request naming a task belongs to
// the call of that task. Otherwise it belongs to the first call only when
// every call in flight on the server's connection is one of these, and
// they all share one session and client: no other session's person is
// ever asked. pending counts the requests in flight on the server's
// connection; it is asked only when the request names no task. A request
// the server's legacy incarnation sent (legacy) belongs to one of the
// calls made for legacy clients, which alone go there, and pending then
// counts that incarnation's connection.
func (as *Askers) Pick(server string, legacy bool, task string, can func(*Asker) bool, pending func() int) *Asker {
	as.mu.Lock()
	all := slices.Clone(as.byServer[server])
	as.mu.Unlock()
	if legacy {
		all = slices.DeleteFunc(all, func(a *Asker) bool { return !a.Legacy })
	}
	list := slices.DeleteFunc(slices.Clone(all), func(a *Asker) bool { return !can(a) })
	if len(list) == 0 {
		return nil
	}
	if task != "" {
		for _, a := range list {
			if t := a.Task.Load(); t != nil && *t == task {
				return a
			}
		}
		return nil // another caller's task, or one resumed after a restart
	}
	// A call whose client holds its questions asks nothing new until
	// answered: the request is one of the others', when there are others,
	// and such calls, whatever they could ask, are not requests of
	// someone else in flight.
	// Each call's state is read once: it may change meanwhile.
	awaiting := map[*Asker]bool{}
	for _, a := range all {
		if a.Awaiting != nil && a.Awaiting() {
			awaiting[a] = true
		}
	}
	if active := slices.DeleteFunc(slices.Clone(list), func(a *Asker) bool { return awaiting[a] }); len(active) > 0 {
		list = active
	}
	held := len(awaiting)
	for _, a := range list {
		if awaiting[a] {
			held-- // all of them await: they are the candidates
		}
	}
	first := list[0]
	for _, a := range list[1:] {
		if a.Scope != first.Scope || a.Client != first.Client || first.Scope.Session == "" {
			return nil // two sessions or clients, or two of the embedder's own calls
		}
	}
	if pending()-held > len(list) {
		return nil // some request in flight is not one of these calls
	}
	return first
}
