package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// What a server asks and tells while a call forwarded to its member runs
// comes back to the member the call came from, where the caller is:
//
//   - its elicitation/create and sampling/createMessage requests that
//     belong to the call (told as a local call's would be) are answered
//     by the calling member, through the call's own handlers, else that
//     member's embedder hooks or inbox: the person who made the call is
//     asked, on the member they reach;
//   - its progress reaches the call's OnProgress, on the caller's
//     goroutine, before the result.
//
// The calling member sends, with the call, its session and client (for
// the attribution) and whether it wants progress; the member that runs
// the server runs the request (member.Host.Run) with an Ask that asks the
// caller (member.Caller), and sends it each progress notification as a
// note.

// question is a server's request, asked of the member the call came from.
type question struct {
	Method string          `json:"method"`
	Server string          `json:"server"`
	Params json.RawMessage `json:"params,omitempty"`
}

// reverse is what this member answers while a request it forwarded runs:
// the server's questions, through the call's flows (ctx), and its
// progress, to onProgress.
func (r *Replica) reverse(ctx context.Context, f *forwarded, onProgress func(actors.Progress)) *member.Reverse {
	fl := r.host.Flows(ctx)
	f.Session, f.Stack, f.Client = fl.Scope.Session, fl.Scope.Stack, fl.Client
	rev := &member.Reverse{Ask: func(ctx context.Context, body []byte) ([]byte, error) {
		var q question
		if err := json.Unmarshal(body, &q); err != nil {
			return nil, err
		}
		if q.Method != protocol.MethodElicitationCreate && q.Method != protocol.MethodSamplingCreateMessage || fl.Ask == nil {
			return nil, fmt.Errorf("cluster: %s is not asked of the calling member", q.Method)
		}
		raw, err := fl.Ask(ctx, q.Method, q.Server, q.Params)
		if err != nil {
			return nil, crossing(err)
		}
		return raw, nil
	}}
	if onProgress != nil {
		f.Progress = true
		rev.OnNote = func(b []byte) {
			var p actors.Progress
			if json.Unmarshal(b, &p) == nil {
				onProgress(p)
			}
		}
	}
	return rev
}

// askCaller has run, a request forwarded to this member, send the
// server's questions back to its caller, attributed to the caller's
// session and client, and the progress it wants.
func (r *Replica) askCaller(caller member.Caller, f *forwarded, run *member.Run) {
	run.Scope, run.Client = persistence.Scope{Session: f.Session, Stack: f.Stack}, f.Client
	run.Ask = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		body, err := json.Marshal(question{Method: method, Server: f.Server, Params: params})
		if err != nil {
			return nil, err
		}
		raw, err := caller.Ask(ctx, body)
		if err != nil {
			return nil, fromRemote(err, f.Server, caller.Addr())
		}
		return raw, nil
	}
	if f.Method == protocol.MethodTasksGet || f.Method == protocol.MethodTasksResult {
		// The task's questions, asked while its caller polls it.
		var p struct {
			TaskID string `json:"taskId"`
		}
		if json.Unmarshal(f.Params, &p) == nil {
			run.TaskID = p.TaskID
		}
	}
	if f.Progress {
		run.Options.OnProgress = func(p actors.Progress) {
			if b, err := json.Marshal(p); err == nil {
				caller.Note(b)
			}
		}
	}
}

// A task's progress: the call that starts a task on another member
// carries the caller's token that outlives the call (its task's). The
// member that runs the server keeps its own subscription open after the
// call when the call started a task, and tells the calling member each
// notification (member.Node.Tell), which hands it to the caller's token
// (Runtime.DeliverProgress), where the task's polling reads it, until the
// task's result is fetched or it is cancelled, its TTL passes (an hour at
// most), or the member closes.

// tell is what one member tells another (member.Node.Tell): one of
// these.
type tell struct {
	Task   *taskTell     `json:"task,omitempty"`
	Event  *actors.Event `json:"event,omitempty"`
	Shared *sharedView   `json:"shared,omitempty"` // a change made there (push)
}

// taskTell is one progress notification of a task, relayed.
type taskTell struct {
	Server   string          `json:"server"`
	Token    string          `json:"token"`
	Progress actors.Progress `json:"progress"`
}

// maxTaskRelay bounds how long a task's progress is relayed.
const maxTaskRelay = time.Hour

// relayTaskProgress relays, if the call started a task, the progress sub
// receives to the caller at addr; it closes sub when done.
func (r *Replica) relayTaskProgress(addr string, f *forwarded, sub *actors.ProgressSub, raw json.RawMessage, err error) {
	task, ok := protocol.ParseCreateTaskResult(raw)
	if err != nil || !ok {
		sub.Close()
		return
	}
	life := maxTaskRelay
	if task.TTL != nil {
		life = min(life, time.Duration(*task.TTL)*time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(r.bg, life)
	key := f.Server + "\x00" + task.TaskID
	r.mu.Lock()
	r.relays[key] = cancel
	r.mu.Unlock()
	done := func() {
		r.mu.Lock()
		delete(r.relays, key)
		r.mu.Unlock()
		cancel()
		sub.Close()
	}
	started := r.spawn(func() {
		defer done()
		for {
			select {
			case p := <-sub.C():
				n := r.n()
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
func (r *Replica) taskPolled(server, method string, params json.RawMessage) {
	if method != protocol.MethodTasksResult && method != protocol.MethodTasksCancel {
		return
	}
	var p protocol.TaskIDParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	r.mu.Lock()
	cancel := r.relays[server+"\x00"+p.TaskID]
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// onTell takes what another member relays: a task's progress, a
// server's notification, or a change to the shared state. It runs on the
// node actor's goroutine and must not block.
func (r *Replica) onTell(body []byte) {
	var t tell
	if json.Unmarshal(body, &t) != nil {
		return
	}
	switch {
	case t.Task != nil && t.Task.Token != "":
		r.rt.DeliverProgress(t.Task.Server, t.Task.Token, t.Task.Progress)
	case t.Event != nil && r.Placement(t.Event.Server, r.rt.NodeLabel(t.Event.Server)) != "":
		r.rt.EmitRelayed(*t.Event)
	case t.Shared != nil:
		select {
		case r.merges <- *t.Shared:
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
func (r *Replica) relayEvents() {
	r.host.Subscribe(func(ev actors.Event) {
		if ev.Kind != actors.EventNotification || !relayedMethods[ev.Method] || r.Placement(ev.Server, r.rt.NodeLabel(ev.Server)) != "" {
			return
		}
		b, err := json.Marshal(tell{Event: &ev})
		if err != nil {
			return
		}
		n := r.n()
		for _, m := range n.Members() {
			if m != n.Self() {
				n.Tell(m, b)
			}
		}
	})
}
