package mcpvisor

import (
	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/pipeline"
)

// Tasks (MCP 2025-11-25, experimental, and the 2026-07-28 tasks extension,
// io.modelcontextprotocol/tasks): a server may run a tools/call as a task
// and answer with its id at once. The host's task poller
// (actors.TaskPoller) polls it to its end; every task in flight is a
// journal record, so a host that restarts resumes polling; a caller that
// asked for Detached is not held, and learns the outcome from an
// mcpvisor/task event and Host.Task.

// Poll bounds: a server's pollInterval is clamped to them.
const (
	MinTaskPoll = actors.MinTaskPoll
	MaxTaskPoll = actors.MaxTaskPoll
	// DefaultTaskDeadline bounds a task whose server gave no ttl.
	DefaultTaskDeadline = actors.DefaultTaskDeadline
)

// Task statuses, the spec's and the host's own.
const (
	TaskWorking       = persistence.TaskWorking
	TaskInputRequired = persistence.TaskInputRequired
	TaskCompleted     = persistence.TaskCompleted
	TaskFailed        = persistence.TaskFailed
	TaskCancelled     = persistence.TaskCancelled
	TaskLost          = persistence.TaskLost    // the server no longer knows it
	TaskExpired       = persistence.TaskExpired // its deadline passed
)

// Task returns the task with id (task ids are unique per server; the first
// match is returned).
func (h *Host) Task(id string) (TaskInfo, error) { return JournalTask(h.journal, id) }

// Tasks lists the journal's tasks, oldest first; unfinished limits them to
// those still running.
func (h *Host) Tasks(unfinished bool) ([]TaskInfo, error) { return JournalTasks(h.journal, unfinished) }

// JournalTask returns the task with id from j (a host's journal, or one
// opened alone); ErrUnknownTask when it has none.
func JournalTask(j *Journal, id string) (TaskInfo, error) { return pipeline.JournalTask(j, id) }

// JournalTasks lists j's tasks, oldest first; unfinished limits them to
// those not ended yet.
func JournalTasks(j *Journal, unfinished bool) ([]TaskInfo, error) {
	return pipeline.JournalTasks(j, unfinished)
}

// TaskFilter selects tasks (Host.TaskPage): one server's, the unfinished
// only, a page of Limit (DefaultPageLimit when 0, at most MaxPageLimit)
// after the cursor After.
type TaskFilter = persistence.TaskFilter

// TaskCursor is a task's place in the order tasks are listed in (oldest
// created first): TaskPage.Next.
type TaskCursor = persistence.TaskCursor

// TaskPage is one page of tasks, oldest created first, and where the next
// page begins.
type TaskPage struct {
	Tasks []TaskInfo
	// Next, when not zero, is the After of the next page; zero when
	// nothing was left when the page was read.
	Next TaskCursor
}

// TaskPage lists one page of the journal's tasks: as Tasks, but at most
// f.Limit of them, and the cursor to go on.
func (h *Host) TaskPage(f TaskFilter) (TaskPage, error) { return JournalTaskPage(h.journal, f) }

// JournalTaskPage is Host.TaskPage of j. It reads every task of the
// journal (they are not stored in the order listed) but holds only about
// a page of them at once.
func JournalTaskPage(j *Journal, f TaskFilter) (TaskPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultPageLimit
	}
	limit = min(limit, MaxPageLimit)
	f.Limit = limit + 1 // one more says whether there is a next page
	recs, err := j.Store().Tasks(f)
	if err != nil {
		return TaskPage{}, err
	}
	var page TaskPage
	if len(recs) > limit {
		recs = recs[:limit]
		page.Next = persistence.CursorOf(recs[limit-1])
	}
	page.Tasks = make([]TaskInfo, 0, len(recs))
	for _, r := range recs {
		page.Tasks = append(page.Tasks, pipeline.TaskInfoOf(r))
	}
	return page, nil
}

// newTaskPoller makes the host's task poller: its requests go to the
// server wherever it runs; an extension task's input requests are answered
// as a modern server's input_required result's are: by the waiting call's
// own handlers, else the host's.
func (h *Host) newTaskPoller() *actors.TaskPoller {
	return actors.NewTaskPoller(actors.TaskPollerOptions{Request: h.transport().Request, Journal: h.journal, Logger: h.opts.Logger,
		Input: h.flows.Calls(false).Fulfil})
}
