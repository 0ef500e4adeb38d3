package pipeline

import (
	"context"

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
		if caps := c.Options.ClientCapabilities; len(caps) > 0 && c.ToolCall() && !protocol.DeclaresExtension(caps, protocol.TasksExtension) {
			if withTasks, err := protocol.WithExtension(caps, protocol.TasksExtension); err == nil {
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
