package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// pollExtension drives a task of the tasks extension (SEP-2663): tasks/get
// until the task ends, which carries the call's result (completed, a tool
// error included) or its JSON-RPC error (failed); while it is
// input_required, its input requests are fulfilled and answered with
// tasks/update. rec is updated as it goes.
func (p *TaskPoller) pollExtension(ctx context.Context, rec *persistence.TaskRecord, onProgress func(Progress), sub *ProgressSub) (json.RawMessage, error) {
	polls := p.polls(rec, onProgress, sub)
	in := taskInput{answers: map[string]json.RawMessage{}, sent: map[string]bool{}}
	for {
		t, err := nextTask(ctx, polls, func(t *protocol.DetailedTask) string { return t.Status })
		if err != nil {
			return nil, err
		}
		p.note(rec, t.Task())
		switch t.Status {
		case protocol.TaskCompleted:
			if len(t.Result) == 0 || t.Result[0] != '{' {
				rec.Status = persistence.TaskFailed
				return nil, fmt.Errorf("%w: the server reported it completed without its result", ErrTaskFailed)
			}
			rec.Status = persistence.TaskCompleted
			return t.Result, nil
		case protocol.TaskFailed:
			if t.Error == nil {
				return nil, fmt.Errorf("%w%s", ErrTaskFailed, suffix(t.StatusMessage))
			}
			return nil, fmt.Errorf("%w%s: %w", ErrTaskFailed, suffix(t.StatusMessage), t.Error)
		case protocol.TaskCancelled:
			return nil, fmt.Errorf("%w%s", ErrTaskCancelled, suffix(t.StatusMessage))
		case protocol.TaskInputRequired:
			if err := p.answer(ctx, rec, t.InputRequests, &in); err != nil {
				return nil, err
			}
		}
	}
}

// taskInput is what one task's polling answered: the answers by their keys
// (unique over the task's life, SEP-2663), and which of them a tasks/update
// delivered. A request seen again on the next poll is not asked again (the
// server may not have applied the answer yet), and an answer whose
// tasks/update failed is sent again rather than asked again.
type taskInput struct {
	answers map[string]json.RawMessage
	sent    map[string]bool
}

// answer fulfils the input requests of an input_required task that were
// not answered yet (in key order, so a person sees them in a stable
// order), and sends what is not delivered yet with tasks/update. A request
// the host cannot answer (no handler for it) cancels the task: it would
// otherwise wait for an answer until its deadline.
func (p *TaskPoller) answer(ctx context.Context, rec *persistence.TaskRecord, reqs map[string]protocol.InputRequest, in *taskInput) error {
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		if !in.sent[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	actx, cancel := context.WithDeadline(ctx, rec.Deadline)
	defer cancel()
	go func() { // a person's answer is not awaited past the poller's Close
		select {
		case <-p.closing:
			cancel()
		case <-actx.Done():
		}
	}()
	update := protocol.UpdateTaskParams{TaskID: rec.TaskID, InputResponses: make(map[string]json.RawMessage, len(keys))}
	for _, key := range keys {
		if res, ok := in.answers[key]; ok {
			update.InputResponses[key] = res
			continue
		}
		req := reqs[key]
		var res json.RawMessage
		err := errors.New("this host has no handler for a task's input requests")
		if p.o.Input != nil {
			res, err = p.o.Input(actx, rec.Server, req)
		}
		switch {
		case err == nil:
		case p.isClosing():
			return ErrClosed
		case ctx.Err() != nil:
			return fmt.Errorf("%w: %w", ErrCancelled, ctx.Err())
		case actx.Err() != nil:
			return nil // the deadline: the next poll ends the task
		default:
			why := fmt.Sprintf("its input request %q (%s) could not be answered: %v", key, req.Method, err)
			p.Cancel(rec, why)
			return fmt.Errorf("%w by the host: %s", ErrTaskCancelled, why)
		}
		in.answers[key] = res
		update.InputResponses[key] = res
	}
	body, err := json.Marshal(update)
	if err != nil {
		return err
	}
	if _, err := p.request(ctx, rec, protocol.MethodTasksUpdate, body, nil); err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return err
		}
		var perr *protocol.Error
		if errors.As(err, &perr) && perr.Code == protocol.CodeInvalidParams {
			// The task ended or was forgotten meanwhile: tasks/get says which.
			p.o.Logger.Info("tasks/update refused", "server", rec.Server, "task", rec.TaskID, "err", err)
		} else {
			p.o.Logger.Warn("tasks/update failed; sending it again after the next poll", "server", rec.Server, "task", rec.TaskID, "err", err)
			return nil
		}
	}
	for key := range update.InputResponses {
		in.sent[key] = true
	}
	return nil
}

// isClosing reports whether Close was called.
func (p *TaskPoller) isClosing() bool {
	select {
	case <-p.closing:
		return true
	default:
		return false
	}
}
