package sidecar

import (
	"encoding/json"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// The JSON forms of the API, camelCase throughout as MCP spells it.
// Servers, tools, results, tasks and journal events are the root package's
// own types: the API shows what json.Marshal of h.Status(), h.Tools(), a
// *Result, a TaskInfo and a JournalEvent gives an embedder. The views below
// add what an HTTP client cannot compute (a result's wire string) or keep
// out what it must not see (an elicitation's secret defaults, an approval's
// arguments).

// ResultView is a tool result as POST /v1/call returns it: the Result's
// own JSON, plus Wire, the string Result.Wire gives to hand a model (an
// HTTP client cannot call the method, and it is not in the Result's JSON).
type ResultView struct {
	mcpvisor.Result
	Wire string `json:"wire"`
}

// NewResultView renders r; nil for nil.
func NewResultView(r *mcpvisor.Result) *ResultView {
	if r == nil {
		return nil
	}
	return &ResultView{Result: *r, Wire: r.Wire()}
}

// rawOrNil keeps a JSON value only when it is valid, so one bad entry
// cannot break the whole response.
func rawOrNil(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return b
}

// TaskView is a task as GET /v1/tasks returns it (and mcpvisor tasks
// --json): the TaskInfo's own JSON, its result a ResultView, with "wire".
// Result shadows TaskInfo.Result, which decoding a TaskView leaves nil.
type TaskView struct {
	mcpvisor.TaskInfo
	Result *ResultView `json:"result,omitempty"`
}

// NewTaskView renders t.
func NewTaskView(t mcpvisor.TaskInfo) TaskView {
	return TaskView{TaskInfo: t, Result: NewResultView(t.Result)}
}

// OptionView is one choice of an enum field.
type OptionView struct {
	Value string `json:"value"`
	Title string `json:"title"`
}

// FieldView is one field of an elicitation's form.
type FieldView struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Type        string          `json:"type"`
	Format      string          `json:"format,omitempty"`
	Required    bool            `json:"required"`
	Sensitive   bool            `json:"sensitive"`
	Multi       bool            `json:"multi,omitempty"`
	Options     []OptionView    `json:"options,omitempty"`
	Default     json.RawMessage `json:"default,omitempty"`
}

// ElicitationView is a pending elicitation as GET /v1/elicitations lists
// it: its form, never a value entered, and who asks: the server and, when
// the host can tell, the call it belongs to (its namespaced tool, its id
// as the history keeps it, the calling session, stack frame and client).
type ElicitationView struct {
	ID          string      `json:"id"`
	Server      string      `json:"server"`
	Tool        string      `json:"tool,omitempty"`
	CallID      string      `json:"callId,omitempty"`
	Session     string      `json:"session,omitempty"`
	Stack       string      `json:"stack,omitempty"`
	Client      string      `json:"client,omitempty"`
	Mode        string      `json:"mode"`
	Message     string      `json:"message"`
	URL         string      `json:"url,omitempty"`
	Fields      []FieldView `json:"fields"`
	RelatedTask string      `json:"relatedTask,omitempty"`
	Created     time.Time   `json:"created"`
	Deadline    time.Time   `json:"deadline"`
}

// NewElicitationView renders r.
func NewElicitationView(r mcpvisor.ElicitationRequest) ElicitationView {
	c := r.Caller
	v := ElicitationView{ID: r.ID, Server: r.Server, Tool: c.Tool, CallID: c.CallID, Session: c.Session, Stack: c.Stack,
		Client: c.Client, Mode: string(r.Mode), Message: r.Message, URL: r.URL,
		Fields: []FieldView{}, RelatedTask: r.RelatedTask, Created: r.Created, Deadline: r.Deadline}
	for _, f := range r.Fields {
		fv := FieldView{Name: f.Name, Title: f.Title, Description: f.Description, Type: f.Type, Format: f.Format,
			Required: f.Required, Sensitive: f.Sensitive, Multi: f.Multi}
		if !f.Sensitive { // a secret's default is still a secret
			fv.Default = rawOrNil(f.Default)
		}
		for _, o := range f.Options {
			fv.Options = append(fv.Options, OptionView{Value: o.Value, Title: o.Title})
		}
		v.Fields = append(v.Fields, fv)
	}
	return v
}

// ApprovalView is a host-tool call waiting for a person's decision, as GET
// /v1/approvals lists it: what it would do, never the model's arguments
// (which may hold secrets).
// Command is the exact command line of a stdio registration, every
// argument as it will be run; empty for other calls.
type ApprovalView struct {
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

// NewApprovalView renders r.
func NewApprovalView(r mcpvisor.ApprovalRequest) ApprovalView {
	cmd := r.Command
	if cmd == nil {
		cmd = []string{}
	}
	return ApprovalView{ID: r.ID, Session: r.Scope.Session, Stack: r.Scope.Stack, Tool: r.Tool, Server: r.Server,
		Summary: r.Summary, Command: cmd, Destructive: r.Destructive, Created: r.Created, Deadline: r.Deadline}
}
