package pipeline

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// taskStage takes over a call the server chose to run as a task: a
// 2025-11-25 CreateTaskResult, or a handle of the 2026-07-28 tasks
// extension (resultType "task"). The task is journaled, then polled to its
// end, and its outcome becomes the call's raw answer; a detached call gets
// the task's handle at once.
//
// A modern server is told the host speaks the extension on every request
// (the runtime's _meta); a call made for a client whose own capabilities
// replace the host's (a gateway's modern client) declares it too, since
// the host, not that client, drives the server's task.
func (p *Pipeline) taskStage(next Func) Func {
	return func(ctx context.Context, c *Call) (*Result, error) {
		if caps := c.Options.ClientCapabilities; len(caps) > 0 && c.ToolCall() {
			if withTasks := p.taskCaps.withTasks(caps); withTasks != nil {
				o := *c.Options
				o.ClientCapabilities = withTasks
				c.Options = &o
			}
		}
		res, err := next(ctx, c)
		if err != nil || res != nil || !c.ToolCall() {
			return res, err
		}
		if handle, ok := protocol.ParseTaskHandle(c.raw); ok {
			return p.runTask(ctx, c, handle.Task(), true)
		}
		task, ok := protocol.ParseCreateTaskResult(c.raw)
		if !ok {
			return nil, nil
		}
		return p.runTask(ctx, c, task, false)
	}
}

// capsMemo keeps the capabilities objects clients send with the tasks
// extension added: a gateway's modern clients send the same few objects
// request after request, and adding it costs a decode and an encode
// (about 10 µs and 35 allocations) each time.
type capsMemo struct {
	mu sync.Mutex
	m  map[string]json.RawMessage // nil value: they declare it already, or are not an object
}

// maxCapsMemo bounds the objects kept; past it they are forgotten at once.
const maxCapsMemo = 256

// withTasks is caps declaring the tasks extension too, or nil when caps
// need no change (or cannot take one).
func (c *capsMemo) withTasks(caps json.RawMessage) json.RawMessage {
	c.mu.Lock()
	v, ok := c.m[string(caps)]
	c.mu.Unlock()
	if ok {
		return v
	}
	if !protocol.DeclaresExtension(caps, protocol.TasksExtension) {
		if with, err := protocol.WithExtension(caps, protocol.TasksExtension); err == nil {
			v = with
		}
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCapsMemo {
		c.m = make(map[string]json.RawMessage)
	}
	c.m[string(caps)] = v
	c.mu.Unlock()
	return v
}
