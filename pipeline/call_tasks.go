package pipeline

import (
	"context"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// taskStage takes over a call the server chose to run as a task (it
// answered with a CreateTaskResult): the task is journaled, then polled to
// its end, and its tasks/result becomes the call's raw answer; a detached
// call gets the task's handle at once.
func (p *Pipeline) taskStage(next Func) Func {
	return func(ctx context.Context, c *Call) (*Result, error) {
		res, err := next(ctx, c)
		if err != nil || res != nil || !c.ToolCall() {
			return res, err
		}
		task, ok := protocol.ParseCreateTaskResult(c.raw)
		if !ok {
			return nil, nil
		}
		return p.runTask(ctx, c, task)
	}
}
