package mcpvisor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// What a server asks and tells while a call forwarded to its member runs
// comes back to the member the call came from, where the caller is:
//
//   - its elicitation/create and sampling/createMessage requests that
//     belong to the call (askers.pick, as for a local call) are answered
//     by the calling member, through the call's own handlers, else that
//     member's embedder hooks or inbox: the person who made the call is
//     asked, on the member they reach;
//   - its progress reaches the call's OnProgress, on the caller's
//     goroutine, before the result.
//
// The calling member sends, with the call, its session and client (for
// the attribution) and whether it wants progress; the member that runs
// the server registers an asker for the forwarded request that asks the
// caller (cluster.Caller) and sends it each progress notification as a
// note.

// callFlows is a call's own handlers, carried in its context to the
// cluster's forward.
type callFlows struct {
	asker  *asker // nil: the call has none of its own
	scope  Scope
	client string
}

type flowsKey struct{}

// withFlows notes a call's own handlers in ctx, for a request to a server
// on another member of the cluster.
func (h *Host) withFlows(ctx context.Context, a *asker, scope Scope, client string) context.Context {
	if h.cluster == nil {
		return ctx
	}
	return context.WithValue(ctx, flowsKey{}, &callFlows{asker: a, scope: scope, client: client})
}

// question is a server's request, asked of the member the call came from.
type question struct {
	Method string          `json:"method"`
	Server string          `json:"server"`
	Params json.RawMessage `json:"params,omitempty"`
}

// reverse is what this member answers while a request it forwarded runs:
// the server's questions, through the call's own handlers (ctx) or this
// member's, and its progress, to onProgress.
func (hc *hostCluster) reverse(ctx context.Context, f *forwarded, onProgress func(Progress)) *member.Reverse {
	fl, _ := ctx.Value(flowsKey{}).(*callFlows)
	var own *asker
	if fl != nil {
		own = fl.asker
		f.Session, f.Stack, f.Client = fl.scope.Session, fl.scope.Stack, fl.client
	}
	h := hc.h
	rev := &member.Reverse{Ask: func(ctx context.Context, body []byte) ([]byte, error) {
		var q question
		if err := json.Unmarshal(body, &q); err != nil {
			return nil, err
		}
		var raw json.RawMessage
		var err error
		switch q.Method {
		case protocol.MethodElicitationCreate:
			raw, err = h.elicit(ctx, q.Server, q.Params, func(*ElicitationRequest) *asker { return own })
		case protocol.MethodSamplingCreateMessage:
			raw, err = h.sample(ctx, q.Server, q.Params, func(json.RawMessage) *asker { return own })
		default:
			err = fmt.Errorf("cluster: %s is not asked of the calling member", q.Method)
		}
		if err != nil {
			return nil, crossing(err)
		}
		return raw, nil
	}}
	if onProgress != nil {
		f.Progress = true
		rev.OnNote = func(b []byte) {
			var p Progress
			if json.Unmarshal(b, &p) == nil {
				onProgress(p)
			}
		}
	}
	return rev
}

// askCaller registers, for a request forwarded to this member, the asker
// that sends the server's questions back to its caller, and has opts send
// it the progress it wants.
func (hc *hostCluster) askCaller(ctx context.Context, caller member.Caller, f *forwarded, opts *actors.CallOptions) *asker {
	a := &asker{ctx: ctx, server: f.Server, scope: Scope{Session: f.Session, Stack: f.Stack}, client: f.Client,
		delegate: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			body, err := json.Marshal(question{Method: method, Server: f.Server, Params: params})
			if err != nil {
				return nil, err
			}
			raw, err := caller.Ask(ctx, body)
			if err != nil {
				return nil, fromRemote(err, f.Server, caller.Addr())
			}
			return raw, nil
		}}
	if f.Method == protocol.MethodTasksGet || f.Method == protocol.MethodTasksResult {
		// The task's questions, asked while its caller polls it.
		var p struct {
			TaskID string `json:"taskId"`
		}
		if json.Unmarshal(f.Params, &p) == nil && p.TaskID != "" {
			a.task.Store(&p.TaskID)
		}
	}
	hc.h.askers.add(a)
	if f.Progress {
		opts.OnProgress = func(p Progress) {
			if b, err := json.Marshal(p); err == nil {
				caller.Note(b)
			}
		}
	}
	return a
}

// A task's progress: the call that starts a task on another member
// carries the caller's token that outlives the call (its task's). The
// member that runs the server keeps its own subscription open after the
// call when the call started a task, and tells the calling member each
// notification (cluster.Node.Tell), which hands it to the caller's token
// (Runtime.DeliverProgress), where the task's polling reads it, until the
// task's result is fetched or it is cancelled, its TTL passes (an hour at
// most), or the member closes.

// tell is what one member tells another (cluster.Node.Tell): one of
// these.
type tell struct {
	Task   *taskTell   `json:"task,omitempty"`
	Event  *Event      `json:"event,omitempty"`
	Shared *sharedView `json:"shared,omitempty"` // a change made there (push)
}

// taskTell is one progress notification of a task, relayed.
type taskTell struct {
	Server   string   `json:"server"`
	Token    string   `json:"token"`
	Progress Progress `json:"progress"`
}

// maxTaskRelay bounds how long a task's progress is relayed.
const maxTaskRelay = time.Hour

// relayTaskProgress relays, if the call started a task, the progress sub
// receives to the caller at addr; it closes sub when done.
func (hc *hostCluster) relayTaskProgress(addr string, f *forwarded, sub *actors.ProgressSub, raw json.RawMessage, err error) {
	task, ok := protocol.ParseCreateTaskResult(raw)
	if err != nil || !ok {
		sub.Close()
		return
	}
	life := maxTaskRelay
	if task.TTL != nil {
		life = min(life, time.Duration(*task.TTL)*time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(hc.h.bg, life)
	key := f.Server + "\x00" + task.TaskID
	hc.mu.Lock()
	hc.relays[key] = cancel
	hc.mu.Unlock()
	done := func() {
		hc.mu.Lock()
		delete(hc.relays, key)
		hc.mu.Unlock()
		cancel()
		sub.Close()
	}
	started := hc.spawn(func() {
		defer done()
		for {
			select {
			case p := <-sub.C():
				n := hc.n()
				if !slices.Contains(n.Members(), addr) {
					return // the caller's member left: nobody polls the task here
				}
				if b, err := json.Marshal(tell{Task: &taskTell{Server: f.Server, Token: f.ProgressToken, Progress: p}}); err == nil {
					n.Tell(addr, b)
				}
			case <-ctx.Done():
				return
			}
		}
	})
	if !started {
		done() // the host is closing
	}
}

// taskPolled ends the relay of a task's progress once its caller has
// fetched its result or cancelled it.
func (hc *hostCluster) taskPolled(server, method string, params json.RawMessage) {
	if method != protocol.MethodTasksResult && method != protocol.MethodTasksCancel {
		return
	}
	var p protocol.TaskIDParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	hc.mu.Lock()
	cancel := hc.relays[server+"\x00"+p.TaskID]
	hc.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// onTell takes what another member relays: a task's progress, a
// server's notification, or a change to the shared state. It runs on the
// node actor's goroutine and must not block.
func (hc *hostCluster) onTell(body []byte) {
	var t tell
	if json.Unmarshal(body, &t) != nil {
		return
	}
	switch {
	case t.Task != nil && t.Task.Token != "":
		hc.h.rt.DeliverProgress(t.Task.Server, t.Task.Token, t.Task.Progress)
	case t.Event != nil && hc.placement(t.Event.Server, hc.h.rt.NodeLabel(t.Event.Server)) != "":
		hc.h.rt.EmitRelayed(*t.Event)
	case t.Shared != nil:
		select {
		case hc.merges <- *t.Shared:
		default: // behind: the gossip brings it
		}
	}
}

// A server's notifications that a client of any member may be waiting
// for live are relayed by the member that runs it to every other, which
// hands them to its own subscribers (the gateway's sessions, OnEvent,
// /v1/events/stream) as if the server ran there: a resource a session
// subscribed to through another member was updated, a list changed, a
// log message, a URL elicitation completed. They are journaled only where
// the server runs; other notifications (a server's own events) are
// journaled there and listed cluster-wide (ClusterEvents), not streamed
// to the other members.
var relayedMethods = map[string]bool{
	protocol.MethodResourcesUpdated:     true,
	protocol.MethodResourcesListChanged: true,
	protocol.MethodPromptsListChanged:   true,
	protocol.MethodLoggingMessage:       true,
	protocol.MethodElicitationComplete:  true,
}

// relayEvents relays the notifications of the servers this member runs
// to the other members, until the host closes.
func (hc *hostCluster) relayEvents() {
	hc.h.Subscribe(func(ev Event) {
		if ev.Kind != EventNotification || !relayedMethods[ev.Method] || hc.placement(ev.Server, hc.h.rt.NodeLabel(ev.Server)) != "" {
			return
		}
		b, err := json.Marshal(tell{Event: &ev})
		if err != nil {
			return
		}
		n := hc.n()
		for _, m := range n.Members() {
			if m != n.Self() {
				n.Tell(m, b)
			}
		}
	})
}
