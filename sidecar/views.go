package sidecar

import (
	"encoding/json"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// The JSON forms of the API: snake_case, stable, independent of the Go
// field names of the root package.

type serverView struct {
	Name            string    `json:"name"`
	FriendlyName    string    `json:"friendly_name,omitempty"`
	Description     string    `json:"description,omitempty"`
	Transport       string    `json:"transport"`
	Enabled         bool      `json:"enabled"`
	State           string    `json:"state"`
	Since           time.Time `json:"since"`
	LastError       string    `json:"last_error,omitempty"`
	Restarts        int       `json:"restarts"`
	NextRetry       time.Time `json:"next_retry,omitzero"`
	PID             int       `json:"pid,omitempty"`
	ProtocolVersion string    `json:"protocol_version,omitempty"`
	ServerName      string    `json:"server_name,omitempty"`
	ServerVersion   string    `json:"server_version,omitempty"`
	Tools           int       `json:"tools"`
	Warnings        []string  `json:"warnings,omitempty"`
}

func newServerView(st mcpvisor.ServerStatus) serverView {
	return serverView{
		Name: st.Name, FriendlyName: st.FriendlyName, Description: st.Description,
		Transport: string(st.Transport), Enabled: st.Enabled, State: string(st.State), Since: st.Since,
		LastError: st.LastError, Restarts: st.Restarts, NextRetry: st.NextRetry, PID: st.PID,
		ProtocolVersion: st.ProtocolVersion, ServerName: st.ServerInfo.Name, ServerVersion: st.ServerInfo.Version,
		Tools: st.Tools, Warnings: st.Warnings,
	}
}

type toolView struct {
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	Tool         string          `json:"tool"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Destructive  bool            `json:"destructive"`
	TaskSupport  string          `json:"task_support,omitempty"`
	Available    bool            `json:"available"`
}

func newToolViews(tools []mcpvisor.Tool) []toolView {
	out := make([]toolView, 0, len(tools))
	for _, t := range tools {
		out = append(out, toolView{
			Name: t.Name, Server: t.Server, Tool: t.Tool, Title: t.Title, Description: t.Description,
			InputSchema: rawOrNil(t.InputSchema), OutputSchema: rawOrNil(t.OutputSchema),
			Destructive: t.Destructive, TaskSupport: t.TaskSupport, Available: t.Available,
		})
	}
	return out
}

// rawOrNil keeps a schema only when it is valid JSON, so one bad catalog
// entry cannot break the whole response.
func rawOrNil(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return b
}

// MediaView is a media file of a result, as the API shows it.
type MediaView struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	URL      string `json:"url"`
	MimeType string `json:"mime_type"`
	Size     int64  `json:"size"`
}

// ResultView is a tool result as POST /v1/call returns it.
type ResultView struct {
	ResultType string          `json:"result_type"`
	IsError    bool            `json:"is_error"`
	Result     string          `json:"result"`
	Structured json.RawMessage `json:"structured,omitempty"`
	Media      []MediaView     `json:"media"`
	Task       *TaskView       `json:"task,omitempty"`
}

// NewResultView renders r; nil for nil.
func NewResultView(r *mcpvisor.Result) *ResultView {
	if r == nil {
		return nil
	}
	v := &ResultView{ResultType: string(r.Type), IsError: r.IsError, Result: r.Wire(),
		Structured: rawOrNil(r.JSON), Media: []MediaView{}}
	for _, m := range r.Media {
		v.Media = append(v.Media, MediaView{Kind: m.Kind, Name: m.Name, URL: m.URL, MimeType: m.MimeType, Size: m.Size})
	}
	if r.Task != nil {
		tv := NewTaskView(*r.Task)
		v.Task = &tv
	}
	return v
}

// TaskView is a task as GET /v1/tasks returns it (and mcpvisor tasks --json).
type TaskView struct {
	ID            string      `json:"id"`
	Server        string      `json:"server"`
	Tool          string      `json:"tool"`
	Status        string      `json:"status"`
	StatusMessage string      `json:"status_message,omitempty"`
	Created       time.Time   `json:"created"`
	Updated       time.Time   `json:"updated"`
	Deadline      time.Time   `json:"deadline,omitzero"`
	Detached      bool        `json:"detached"`
	Done          bool        `json:"done"`
	Result        *ResultView `json:"result,omitempty"`
	Error         string      `json:"error,omitempty"`
}

// NewTaskView renders t.
func NewTaskView(t mcpvisor.TaskInfo) TaskView {
	return TaskView{
		ID: t.ID, Server: t.Server, Tool: t.Tool, Status: t.Status, StatusMessage: t.StatusMessage,
		Created: t.Created, Updated: t.Updated, Deadline: t.Deadline, Detached: t.Detached, Done: t.Done,
		Result: NewResultView(t.Result), Error: t.Error,
	}
}

// EventView is a journal event as GET /v1/events returns it.
type EventView struct {
	ID          uint64          `json:"id"`
	Server      string          `json:"server"`
	Method      string          `json:"method"`
	Params      json.RawMessage `json:"params,omitempty"`
	Received    time.Time       `json:"received"`
	Status      string          `json:"status"`
	ProcessedAt time.Time       `json:"processed_at,omitzero"`
}

// NewEventView renders e.
func NewEventView(e mcpvisor.JournalEvent) EventView {
	return EventView{ID: e.Seq, Server: e.Server, Method: e.Method, Params: rawOrNil(e.Params),
		Received: e.Received, Status: e.Status, ProcessedAt: e.ProcessedAt}
}

type optionView struct {
	Value string `json:"value"`
	Title string `json:"title"`
}

type fieldView struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Type        string          `json:"type"`
	Format      string          `json:"format,omitempty"`
	Required    bool            `json:"required"`
	Sensitive   bool            `json:"sensitive"`
	Multi       bool            `json:"multi,omitempty"`
	Options     []optionView    `json:"options,omitempty"`
	Default     json.RawMessage `json:"default,omitempty"`
}

// elicitationView is a pending request: its form, never a value entered.
type elicitationView struct {
	ID          string      `json:"id"`
	Server      string      `json:"server"`
	Mode        string      `json:"mode"`
	Message     string      `json:"message"`
	URL         string      `json:"url,omitempty"`
	Fields      []fieldView `json:"fields"`
	RelatedTask string      `json:"related_task,omitempty"`
	Created     time.Time   `json:"created"`
	Deadline    time.Time   `json:"deadline"`
}

func newElicitationView(r mcpvisor.ElicitationRequest) elicitationView {
	v := elicitationView{ID: r.ID, Server: r.Server, Mode: string(r.Mode), Message: r.Message, URL: r.URL,
		Fields: []fieldView{}, RelatedTask: r.RelatedTask, Created: r.Created, Deadline: r.Deadline}
	for _, f := range r.Fields {
		fv := fieldView{Name: f.Name, Title: f.Title, Description: f.Description, Type: f.Type, Format: f.Format,
			Required: f.Required, Sensitive: f.Sensitive, Multi: f.Multi}
		if !f.Sensitive { // a secret's default is still a secret
			fv.Default = rawOrNil(f.Default)
		}
		for _, o := range f.Options {
			fv.Options = append(fv.Options, optionView{Value: o.Value, Title: o.Title})
		}
		v.Fields = append(v.Fields, fv)
	}
	return v
}

// approvalView is a host-tool call waiting for a person's decision: what
// it would do, never the model's arguments (which may hold secrets).
// Command is the exact command line of a stdio registration, every
// argument as it will be run; empty for other calls.
type approvalView struct {
	ID          string    `json:"id"`
	Session     string    `json:"session"`
	Stack       string    `json:"stack"`
	Tool        string    `json:"tool"`
	Server      string    `json:"server"`
	Summary     string    `json:"summary"`
	Command     []string  `json:"command"`
	Destructive bool      `json:"destructive"`
	Created     time.Time `json:"created"`
	Deadline    time.Time `json:"deadline"`
}

func newApprovalView(r mcpvisor.ApprovalRequest) approvalView {
	cmd := r.Command
	if cmd == nil {
		cmd = []string{}
	}
	return approvalView{ID: r.ID, Session: r.Scope.Session, Stack: r.Scope.Stack, Tool: r.Tool, Server: r.Server,
		Summary: r.Summary, Command: cmd, Destructive: r.Destructive, Created: r.Created, Deadline: r.Deadline}
}
