package elicit

import (
	"encoding/json"
	"net/url"
	"strings"
	"time"
)

// Mode is how an elicitation collects its answer.
type Mode string

const (
	// ModeForm: the host shows a form built from the requested schema and
	// returns what the person entered. The default when a request has no mode.
	ModeForm Mode = "form"
	// ModeURL: the person visits a URL in their own browser; nothing they
	// enter there passes through the host.
	ModeURL Mode = "url"
)

// Action is the person's answer to an elicitation.
type Action string

const (
	// ActionAccept: the person submitted the form, or consented to open the URL.
	ActionAccept Action = "accept"
	// ActionDecline: the person explicitly refused.
	ActionDecline Action = "decline"
	// ActionCancel: the person dismissed the request without choosing, or it
	// expired, or the host shut down.
	ActionCancel Action = "cancel"
)

// Valid reports whether a is one of accept, decline and cancel.
func (a Action) Valid() bool {
	switch a {
	case ActionAccept, ActionDecline, ActionCancel:
		return true
	}
	return false
}

// Field types, the values of Field.Type.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
	TypeArray   = "array" // a multi-select of string choices
)

// Field is one property of a form's requested schema, flattened for display.
type Field struct {
	Name        string
	Title       string
	Description string
	// Type is one of TypeString, TypeNumber, TypeInteger, TypeBoolean and
	// TypeArray. An array is always a multi-select (Multi is true).
	Type string
	// Format is the string format as given: "email", "uri", "date",
	// "date-time", "password" or another the host does not check.
	Format string
	// MinLength and MaxLength bound a string, in Unicode code points.
	MinLength, MaxLength *int
	// Minimum and Maximum bound a number or an integer, inclusively.
	Minimum, Maximum *float64
	// Options are the allowed values of a single- or multi-select, in the
	// schema's order. Empty for a free field.
	Options []Option
	// Multi marks a multi-select: the answer is a list of Option values.
	Multi bool
	// MinItems and MaxItems bound how many options a multi-select takes.
	MinItems, MaxItems *int
	// Default is the schema's default, as sent (SEP-1034). UIs pre-fill the
	// field with it; Complete applies it when the field is omitted.
	Default json.RawMessage
	// Required is true when the schema's required list names the field.
	Required bool
	// Sensitive is true for secrets (passwords, tokens): a UI masks the input
	// and nothing stores or logs the value. See Parse for the rules.
	Sensitive bool
}

// Option is one choice of a select.
type Option struct {
	// Value is what the answer carries.
	Value string
	// Title is what the person sees; it equals Value when the schema gave
	// no title.
	Title string
}

// Request is one elicitation/create request, decoded by Parse.
type Request struct {
	// ID names the request in a Broker; Broker.Open assigns it. It is not
	// the JSON-RPC id.
	ID string
	// Server is the name of the MCP server asking; a UI must show it.
	Server  string
	Mode    Mode
	Message string
	// Fields are the form's properties in the schema's order (form mode).
	Fields []Field
	// Schema is the requestedSchema as sent (form mode).
	Schema json.RawMessage
	// URL is the page to open (url mode). It passed ValidateURL; it has not
	// been fetched, and must not be before the person consents.
	URL string
	// ElicitationID is the server's id for a url-mode elicitation, matched
	// by notifications/elicitation/complete.
	ElicitationID string
	// RelatedTask is the task id from _meta "io.modelcontextprotocol/related-task",
	// when the request belongs to a task.
	RelatedTask string
	// Created and Deadline are set by Broker.Open; the broker answers cancel
	// at Deadline.
	Created, Deadline time.Time
	// Caller is the call the request belongs to, when the host can tell:
	// the call a modern server's input request or a task's request is
	// for, or the only call in flight on the server's connection. Zero
	// when it cannot. A UI shows it beside Server.
	Caller Caller
}

// Caller names the call an elicitation belongs to.
type Caller struct {
	// Tool is the call's namespaced tool (mcp__<server>__<tool>), or for
	// another request its method and subject ("resources/read <uri>").
	Tool string
	// CallID is the host's id of the call (pipeline.Call.ID), as its
	// history record keeps it.
	CallID string
	// Session and Stack are the calling session and stack frame, ""
	// for an embedder's own call; Client the client within the session,
	// when the gateway tells them apart.
	Session, Stack, Client string
}

// Sensitive returns the names of the sensitive fields, in form order.
func (r *Request) Sensitive() []string {
	var names []string
	for _, f := range r.Fields {
		if f.Sensitive {
			names = append(names, f.Name)
		}
	}
	return names
}

// Host returns the host of a url-mode request's URL, with the port if any,
// for display beside the full URL before the person consents. It is empty in
// form mode.
func (r *Request) Host() string {
	if r.URL == "" {
		return ""
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host)
}

// Field returns the field with that name.
func (r *Request) Field(name string) (Field, bool) {
	for _, f := range r.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// clone copies r deeply enough that the copy's slices can be changed without
// touching r.
func (r *Request) clone() Request {
	c := *r
	c.Schema = append(json.RawMessage(nil), r.Schema...)
	c.Fields = make([]Field, len(r.Fields))
	for i, f := range r.Fields {
		f.Options = append([]Option(nil), f.Options...)
		f.Default = append(json.RawMessage(nil), f.Default...)
		f.MinLength, f.MaxLength = cloneInt(f.MinLength), cloneInt(f.MaxLength)
		f.MinItems, f.MaxItems = cloneInt(f.MinItems), cloneInt(f.MaxItems)
		f.Minimum, f.Maximum = cloneFloat(f.Minimum), cloneFloat(f.Maximum)
		c.Fields[i] = f
	}
	if r.Fields == nil {
		c.Fields = nil
	}
	if r.Schema == nil {
		c.Schema = nil
	}
	return c
}

func cloneInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneFloat(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
