package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol/sse"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// What tools, status, call, events, history and tasks ask a running
// sidecar, in place of running the servers or opening the journal.

// servers is GET /v1/servers, answered once every enabled server has
// settled or wait has passed.
func (r *remote) servers(ctx context.Context, wait time.Duration) ([]mcpvisor.ServerStatus, error) {
	sts, _, err := r.serversAndJournal(ctx, wait)
	return sts, err
}

// serversAndJournal is servers and what the sidecar found wrong with its
// journal when it opened it ("" when nothing).
func (r *remote) serversAndJournal(ctx context.Context, wait time.Duration) ([]mcpvisor.ServerStatus, string, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+requestTimeout)
	defer cancel()
	var out struct {
		Servers []mcpvisor.ServerStatus `json:"servers"`
		Journal struct {
			Summary string `json:"summary"`
		} `json:"journal"`
	}
	err := r.do(ctx, http.MethodGet, "/v1/servers?wait="+url.QueryEscape(wait.String()), nil, &out)
	return out.Servers, out.Journal.Summary, err
}

// tools is GET /v1/tools: every tool of the sidecar's enabled servers.
func (r *remote) tools(ctx context.Context) ([]mcpvisor.Tool, error) {
	var out struct {
		Tools []mcpvisor.Tool `json:"tools"`
	}
	err := r.do(ctx, http.MethodGet, "/v1/tools", nil, &out)
	return out.Tools, err
}

// call is POST /v1/call, streamed: progress and the task, when the server
// runs one, are reported as they come; it returns the result. The call
// ends with ctx (the sidecar cancels it when the request goes away); a
// detached call's task runs on in the sidecar.
func (r *remote) call(ctx context.Context, tool string, args json.RawMessage, detached bool, rep callReporter) (callOutcome, error) {
	client := callClient()
	body := map[string]any{"tool": tool, "detached": detached, "client": client}
	if args != nil {
		body["arguments"] = args
	}
	// The inbox stream says when the call waits for a person's answer.
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		r.watchElicitations(wctx, client, rep)
	}()
	defer func() {
		stopWatch()
		<-watched
	}()
	resp, err := r.open(ctx, http.MethodPost, "/v1/call", body, "text/event-stream")
	if err != nil {
		return callOutcome{}, err
	}
	defer resp.Body.Close()
	rd := sse.NewReader(resp.Body, 0)
	toldTask := false
	for {
		ev, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return callOutcome{}, fmt.Errorf("sidecar: the call's stream ended without its result: %w", err)
		}
		switch ev.Type {
		case "progress":
			var p struct {
				Progress float64  `json:"progress"`
				Total    *float64 `json:"total"`
				Message  string   `json:"message"`
			}
			if json.Unmarshal(ev.Data, &p) == nil {
				rep.progress(mcpvisor.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
			}
		case "task":
			var tv sidecar.TaskView
			if json.Unmarshal(ev.Data, &tv) == nil {
				rep.task(tv.TaskInfo)
				toldTask = true
			}
		case "result":
			var rv struct {
				Wire    string             `json:"wire"`
				IsError bool               `json:"isError"`
				Task    *mcpvisor.TaskInfo `json:"task"`
			}
			if err := json.Unmarshal(ev.Data, &rv); err != nil {
				return callOutcome{}, fmt.Errorf("sidecar: the call's result: %w", err)
			}
			if rv.Task != nil && !toldTask { // a sidecar that sends no task event
				rep.task(*rv.Task)
			}
			return callOutcome{wire: rv.Wire, isError: rv.IsError, view: ev.Data}, nil
		case "error":
			var e sidecar.ErrorBody
			if json.Unmarshal(ev.Data, &e) != nil || e.Error.Message == "" {
				return callOutcome{}, fmt.Errorf("sidecar: the call failed: %s", ev.Data)
			}
			return callOutcome{}, fmt.Errorf("sidecar: %s (%s)", e.Error.Message, e.Error.Code)
		}
	}
}

// eventQuery is the events filters of f as GET /v1/events/stream takes
// them.
func eventQuery(f flags) url.Values {
	q := url.Values{}
	if f.pending {
		q.Set("pending", "1")
	}
	if f.server != "" {
		q.Set("server", f.server)
	}
	if f.method != "" {
		q.Set("method", f.method)
	}
	return q
}

// events is one page of GET /v1/events with the filter.
func (r *remote) events(ctx context.Context, filter mcpvisor.EventFilter) (mcpvisor.EventPage, error) {
	q := url.Values{}
	if filter.Status == mcpvisor.EventPending {
		q.Set("pending", "1")
	}
	if filter.Server != "" {
		q.Set("server", filter.Server)
	}
	if filter.Method != "" {
		q.Set("method", filter.Method)
	}
	if filter.After > 0 {
		q.Set("after", strconv.FormatUint(filter.After, 10))
	}
	if filter.Limit > 0 {
		q.Set("limit", strconv.Itoa(filter.Limit))
	}
	if filter.Newest {
		q.Set("newest", "1")
	}
	var out struct {
		Events []mcpvisor.JournalEvent `json:"events"`
		Next   uint64                  `json:"next"`
	}
	err := r.do(ctx, http.MethodGet, "/v1/events?"+q.Encode(), nil, &out)
	return mcpvisor.EventPage{Events: out.Events, Next: out.Next}, err
}

// followEvents streams the events journaled after the event after that
// the filters of f select (GET /v1/events/stream), until ctx ends or the
// sidecar stops.
func (r *remote) followEvents(ctx context.Context, f flags, after uint64, each func(mcpvisor.JournalEvent)) error {
	q := eventQuery(f)
	q.Set("after", strconv.FormatUint(after, 10))
	resp, err := r.open(ctx, http.MethodGet, "/v1/events/stream?"+q.Encode(), nil, "text/event-stream")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rd := sse.NewReader(resp.Body, 0)
	for {
		ev, err := rd.Next()
		switch {
		case ctx.Err() != nil:
			return nil // interrupted
		case errors.Is(err, io.EOF):
			return errors.New("sidecar: the event stream ended (the sidecar stopped)")
		case err != nil:
			return fmt.Errorf("sidecar: %w", err)
		case ev.Type != "event":
			continue
		}
		var je mcpvisor.JournalEvent
		if err := json.Unmarshal(ev.Data, &je); err != nil {
			return fmt.Errorf("sidecar: an event: %w", err)
		}
		each(je)
	}
}

// history is GET /v1/history with the filter.
func (r *remote) history(ctx context.Context, filter mcpvisor.HistoryFilter) ([]mcpvisor.HistoryRecord, error) {
	q := url.Values{"kind": {string(filter.Kind)}, "limit": {strconv.Itoa(filter.Limit)}}
	if filter.Server != "" {
		q.Set("server", filter.Server)
	}
	if filter.Newest {
		q.Set("newest", "1")
	}
	var out struct {
		History []mcpvisor.HistoryRecord `json:"history"`
	}
	err := r.do(ctx, http.MethodGet, "/v1/history?"+q.Encode(), nil, &out)
	return out.History, err
}

// task is GET /v1/tasks/ID: the task's JSON as the API sends it (a
// TaskView), and decoded.
func (r *remote) task(ctx context.Context, id string) (json.RawMessage, sidecar.TaskView, error) {
	var raw json.RawMessage
	var view sidecar.TaskView
	if err := r.do(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(id), nil, &raw); err != nil {
		return nil, view, err
	}
	if err := json.Unmarshal(raw, &view); err != nil {
		return nil, view, fmt.Errorf("sidecar: a task: %w", err)
	}
	return raw, view, nil
}

// taskPager pages GET /v1/tasks (pending: the unfinished), following the
// sidecar's next.
func (r *remote) taskPager(ctx context.Context, pending bool) taskPager {
	after := ""
	return func(limit int) ([]json.RawMessage, []sidecar.TaskView, bool, error) {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if pending {
			q.Set("pending", "1")
		}
		if after != "" {
			q.Set("after", after)
		}
		var out struct {
			Tasks []json.RawMessage `json:"tasks"`
			Next  string            `json:"next"`
		}
		if err := r.do(ctx, http.MethodGet, "/v1/tasks?"+q.Encode(), nil, &out); err != nil {
			return nil, nil, false, err
		}
		views := make([]sidecar.TaskView, len(out.Tasks))
		for i, raw := range out.Tasks {
			if err := json.Unmarshal(raw, &views[i]); err != nil {
				return nil, nil, false, fmt.Errorf("sidecar: a task: %w", err)
			}
		}
		after = out.Next
		return out.Tasks, views, out.Next != "", nil
	}
}
