package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// The journal commands read the data directory's journal without starting
// any server, or ask the sidecar that holds it.

func openJournal(f flags, logger *slog.Logger) (*mcpvisor.Journal, error) {
	j, err := mcpvisor.OpenJournal(f.data, mcpvisor.JournalOptions{}, logger)
	return j, lockHint(err)
}

// eventsFlags are the filters of events, and --follow.
func eventsFlags(fs *flag.FlagSet, f *flags) {
	configFlag(fs, f)
	fs.BoolVar(&f.follow, "follow", false, "print the events as they are journaled, until interrupted: the running sidecar's, else those of the servers of --config, which it runs")
	fs.BoolVar(&f.pending, "pending", false, "only the events not yet marked processed")
	fs.StringVar(&f.server, "server", "", "only the events of server `NAME`")
	fs.StringVar(&f.method, "method", "", "only the events of notification `METHOD`")
	fs.Uint64Var(&f.after, "after", 0, "only the events after event `ID`")
	fs.IntVar(&f.limit, "limit", mcpvisor.DefaultPageLimit, "at most `N` events; with --follow, the newest N before following")
	fs.BoolVar(&f.all, "all", false, "every event, read a page at a time (--limit is ignored)")
}

func cmdEvents(ctx context.Context, e *env) error {
	f := e.f
	if len(e.args) > 0 {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("events: unexpected argument %q (want events [flags] or events ack ID...)", e.args[0])}
	}
	filter := mcpvisor.EventFilter{Server: f.server, Method: f.method, After: f.after}
	if f.pending {
		filter.Status = mcpvisor.EventPending
	}
	var page func(mcpvisor.EventFilter) (mcpvisor.EventPage, error)
	var follow func(ctx context.Context, after uint64, each func(mcpvisor.JournalEvent)) error
	if r := e.sidecar; r != nil {
		page = func(pf mcpvisor.EventFilter) (mcpvisor.EventPage, error) { return r.events(ctx, pf) }
		follow = func(ctx context.Context, after uint64, each func(mcpvisor.JournalEvent)) error {
			return r.followEvents(ctx, f, after, each)
		}
	} else {
		var j *mcpvisor.Journal
		switch {
		case f.follow && len(f.config) > 0:
			// New events come only from running servers, and a journal has one
			// process: follow runs them.
			cfg, err := loadConfig(f, e.logger, e.stderr)
			if err != nil {
				return err
			}
			h, err := open(ctx, f, cfg, e.logger)
			if err != nil {
				return err
			}
			defer h.Close()
			j = h.Journal()
		case f.follow:
			return &exitError{code: exitUsage, msg: "events --follow: needs a sidecar running on --data, or --config FILE: it runs the servers whose events it follows (a journal is held by one process)"}
		default:
			var err error
			if j, err = openJournal(f, e.logger); err != nil {
				return err
			}
			defer j.Close()
		}
		page = j.EventsPage
		follow = func(ctx context.Context, after uint64, each func(mcpvisor.JournalEvent)) error {
			sf := filter
			sf.After = after
			for ev := range j.Subscribe(ctx, sf) {
				each(ev)
			}
			return nil
		}
	}
	p := newEventPrinter(e.stdout, f.json, !f.follow)
	after, err := listEvents(filter, f, page, p, e.stderr)
	if err == nil {
		err = p.end()
	}
	if err != nil || !f.follow {
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	return follow(ctx, after, func(ev mcpvisor.JournalEvent) {
		p.print(ev)
		p.flush()
	})
}

// listEvents prints the events filter selects a page at a time: --limit
// of them (with --follow and no --after, the newest), or with --all every
// one. Listing stops at the limit with a note on stderr of how to see
// more. It returns the last event's id, or where following starts.
func listEvents(filter mcpvisor.EventFilter, f flags, page func(mcpvisor.EventFilter) (mcpvisor.EventPage, error), p *eventPrinter, stderr io.Writer) (uint64, error) {
	left := f.limit
	if left <= 0 {
		left = mcpvisor.DefaultPageLimit
	}
	if f.follow && !f.all && f.after == 0 {
		filter.Newest = true // a tail: the newest, then what comes
	}
	after := filter.After
	for {
		filter.Limit = min(left, mcpvisor.MaxPageLimit)
		if f.all {
			filter.Limit = mcpvisor.MaxPageLimit
		}
		pg, err := page(filter)
		if err != nil {
			return after, err
		}
		for _, ev := range pg.Events {
			p.print(ev)
			after = max(after, ev.Seq)
		}
		p.flush()
		left -= len(pg.Events)
		if filter.Newest {
			// Following goes on from the newest event when the page was
			// read, whether the filter matched it or not.
			return max(after, pg.Next), nil
		}
		if pg.Next == 0 {
			return after, nil
		}
		filter.After = pg.Next
		if !f.all && left <= 0 {
			if !f.follow {
				fmt.Fprintf(stderr, "more events: mcpvisor events --after %d (or --all for every one)\n", pg.Next)
			}
			return pg.Next, nil
		}
	}
}

type eventPrinter struct {
	json bool
	list *jsonList // a listing's --json: one array; nil when following
	enc  *json.Encoder
	tw   *tabwriter.Writer
}

// newEventPrinter prints events as a table, or with asJSON as one JSON
// array (a listing) or a JSON object per line (a stream, following).
func newEventPrinter(w io.Writer, asJSON, listing bool) *eventPrinter {
	p := &eventPrinter{json: asJSON, enc: json.NewEncoder(w), tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	if asJSON && listing {
		p.list = &jsonList{w: w}
	}
	return p
}

// print writes one event: with --json as GET /v1/events shows it, else a
// row.
func (p *eventPrinter) print(ev mcpvisor.JournalEvent) {
	switch {
	case p.list != nil:
		_ = p.list.add(ev)
		return
	case p.json:
		_ = p.enc.Encode(ev)
		return
	}
	fmt.Fprintf(p.tw, "%d\t%s\t%s\t%s\t%s\t%s\n", ev.Seq, ev.Received.Local().Format(time.DateTime),
		printable(ev.Server), printable(ev.Method), ev.Status, printable(string(ev.Params)))
}

func (p *eventPrinter) flush() { _ = p.tw.Flush() }

// end ends a listing: the JSON array's close.
func (p *eventPrinter) end() error {
	if p.list != nil {
		return p.list.close()
	}
	return nil
}

func cmdAck(ctx context.Context, e *env) error {
	if len(e.args) == 0 {
		return &exitError{code: exitUsage, msg: "events ack: want one or more event IDs"}
	}
	ids := make([]uint64, 0, len(e.args))
	for _, a := range e.args {
		id, err := strconv.ParseUint(a, 10, 64)
		if err != nil || id == 0 {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("events ack: %q is not an event ID", a)}
		}
		ids = append(ids, id)
	}
	if r := e.sidecar; r != nil {
		if err := r.do(ctx, http.MethodPost, "/v1/events/ack", map[string]any{"ids": ids}, nil); err != nil {
			return err
		}
	} else {
		j, err := openJournal(e.f, e.logger)
		if err != nil {
			return err
		}
		defer j.Close()
		if err := j.Ack(ctx, ids...); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "%d event(s) marked processed\n", len(ids))
	return nil
}

// historyFlags are the flags of history alone.
func historyFlags(fs *flag.FlagSet, f *flags) {
	fs.BoolVar(&f.calls, "calls", false, "the tool calls instead of the server transitions")
	fs.IntVar(&f.limit, "limit", 50, "the newest `N` records (at most 1,000)")
}

func cmdHistory(ctx context.Context, e *env) error {
	f, stdout := e.f, e.stdout
	filter := mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryLifecycle, Server: f.server, Limit: f.limit, Newest: true}
	if f.calls {
		filter.Kind = mcpvisor.HistoryCall
	}
	if filter.Limit <= 0 {
		filter.Limit = 50
	}
	var recs []mcpvisor.HistoryRecord
	if r := e.sidecar; r != nil {
		var err error
		if recs, err = r.history(ctx, filter); err != nil {
			return err
		}
	} else {
		j, err := openJournal(f, e.logger)
		if err != nil {
			return err
		}
		page, err := j.HistoryPage(filter)
		recs = page.Records
		j.Close()
		if err != nil {
			return err
		}
	}
	// The newest first, as git log and the help say: the page comes
	// oldest first.
	slices.Reverse(recs)
	return printHistory(stdout, recs, f.json, f.calls)
}

// tasksFlags are the flags of tasks.
func tasksFlags(fs *flag.FlagSet, f *flags) {
	fs.IntVar(&f.limit, "limit", mcpvisor.DefaultPageLimit, "the oldest `N` tasks")
	fs.BoolVar(&f.all, "all", false, "every task, read a page at a time (--limit is ignored)")
}

// taskPager reads the tasks a page at a time: at most limit of them, each
// as GET /v1/tasks shows it (a TaskView), and decoded; more reports
// whether there are more after them, where the next call goes on.
type taskPager func(limit int) (raws []json.RawMessage, views []sidecar.TaskView, more bool, err error)

func cmdTasks(ctx context.Context, e *env) error {
	f, pos, stdout := e.f, e.args, e.stdout
	if len(pos) > 1 {
		return &exitError{code: exitUsage, msg: "tasks: want at most one task ID" + seeHelp("tasks")}
	}
	if len(pos) == 1 {
		return showTask(ctx, e, pos[0])
	}
	var page taskPager
	if r := e.sidecar; r != nil {
		page = r.taskPager(ctx, f.pending)
	} else {
		j, err := openJournal(f, e.logger)
		if err != nil {
			return err
		}
		defer j.Close()
		page = journalTaskPager(j, f.pending)
	}
	left := f.limit
	if left <= 0 {
		left = mcpvisor.DefaultPageLimit
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	list := &jsonList{w: stdout}
	if !f.json {
		fmt.Fprintln(tw, "CREATED\tSERVER\tTASK\tTOOL\tSTATUS\tDONE")
	} else {
		defer list.close()
	}
	for {
		limit := min(left, mcpvisor.MaxPageLimit)
		if f.all {
			limit = mcpvisor.MaxPageLimit
		}
		raws, tasks, more, err := page(limit)
		if err != nil {
			tw.Flush()
			return err
		}
		for i, ti := range tasks {
			if f.json {
				_ = list.add(raws[i])
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", ti.Created.Local().Format("2006-01-02 15:04:05"), ti.Server, ti.ID, ti.Tool, ti.Status, ti.Done)
		}
		tw.Flush()
		left -= len(tasks)
		if !more {
			return nil
		}
		if !f.all && left <= 0 {
			fmt.Fprintf(e.stderr, "more tasks: mcpvisor tasks --all (or a larger --limit)\n")
			return nil
		}
	}
}

// showTask prints the task id with its outcome.
func showTask(ctx context.Context, e *env, id string) error {
	var raw json.RawMessage // the task as GET /v1/tasks/ID shows it
	var ti sidecar.TaskView
	if r := e.sidecar; r != nil {
		var err error
		if raw, ti, err = r.task(ctx, id); err != nil {
			return err
		}
	} else {
		j, err := openJournal(e.f, e.logger)
		if err != nil {
			return err
		}
		info, err := mcpvisor.JournalTask(j, id)
		j.Close()
		if err != nil {
			return err
		}
		ti = sidecar.NewTaskView(info)
		if raw, err = json.Marshal(ti); err != nil {
			return err
		}
	}
	stdout := e.stdout
	if e.f.json {
		fmt.Fprintf(stdout, "%s\n", raw)
		return nil
	}
	fmt.Fprintf(stdout, "task %s on %s (%s): %s", ti.ID, ti.Server, ti.Tool, ti.Status)
	if ti.StatusMessage != "" {
		fmt.Fprintf(stdout, " (%s)", ti.StatusMessage)
	}
	fmt.Fprintln(stdout)
	if ti.Error != "" {
		fmt.Fprintln(stdout, "error:", ti.Error)
	}
	if ti.Result != nil {
		writeResult(stdout, ti.Result.Wire)
	}
	return nil
}

// journalTaskPager pages j's tasks (pending: the unfinished ones).
func journalTaskPager(j *mcpvisor.Journal, pending bool) taskPager {
	filter := mcpvisor.TaskFilter{Unfinished: pending}
	return func(limit int) ([]json.RawMessage, []sidecar.TaskView, bool, error) {
		filter.Limit = limit
		pg, err := mcpvisor.JournalTaskPage(j, filter)
		if err != nil {
			return nil, nil, false, err
		}
		raws := make([]json.RawMessage, 0, len(pg.Tasks))
		views := make([]sidecar.TaskView, 0, len(pg.Tasks))
		for _, ti := range pg.Tasks {
			tv := sidecar.NewTaskView(ti)
			raw, err := json.Marshal(tv)
			if err != nil {
				return nil, nil, false, err
			}
			raws, views = append(raws, raw), append(views, tv)
		}
		filter.After = pg.Next
		return raws, views, !pg.Next.IsZero(), nil
	}
}

// printHistory writes history records: a JSON array with asJSON, else a table of calls (calls) or of servers' lifecycles, with
// every server-controlled text escaped (printable).
func printHistory(stdout io.Writer, recs []mcpvisor.HistoryRecord, asJSON, calls bool) error {
	if asJSON {
		list := &jsonList{w: stdout}
		for _, r := range recs {
			if err := list.add(r); err != nil {
				return err
			}
		}
		return list.close()
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	if calls {
		fmt.Fprintln(tw, "TIME\tSESSION\tTOOL\tDURATION\tOUTCOME\tBYTES\tERROR")
		for _, r := range recs {
			session := printable(r.Scope.Session)
			if r.Scope.Stack != "" {
				session += "/" + printable(r.Scope.Stack)
			}
			if session == "" {
				session = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.Time.Local().Format("2006-01-02 15:04:05.000"), session,
				printable(r.Tool), r.Duration.Round(time.Microsecond), r.Outcome, r.ResultSize, printable(r.Error))
		}
		return nil
	}
	fmt.Fprintln(tw, "TIME\tSERVER\tTRANSITION\tPID\tDETAIL")
	for _, r := range recs {
		pid := "-"
		if r.PID > 0 {
			pid = strconv.Itoa(r.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format("2006-01-02 15:04:05.000"), printable(r.Server), r.Transition, pid, printable(r.Detail))
		for _, line := range r.Stderr {
			fmt.Fprintf(tw, "\t\t\t\t  stderr: %s\n", printable(line))
		}
	}
	return nil
}
