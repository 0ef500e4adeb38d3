package actors

import (
	"encoding/json"
	"time"
)

// EventKind tells what an Event reports.
type EventKind string

const (
	// EventNotification: a notification from a server that is not logging
	// and not handled by the runtime itself (e.g. "event/new_email").
	EventNotification EventKind = "notification"
	// EventState: a server changed state.
	EventState EventKind = "state"
	// EventTools: a server's tool catalog was (re)listed.
	EventTools EventKind = "tools"
)

// Event is one entry of the runtime's single typed event stream, which feeds
// logs, metrics and (in a later layer) the journal.
type Event struct {
	Time   time.Time `json:"time"`
	Server string    `json:"server"`
	Kind   EventKind `json:"kind"`

	// EventNotification
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`

	// EventState
	State State  `json:"state,omitempty"`
	Err   string `json:"error,omitempty"`
}

// lineLog is a server's log file as the actor sees it.
type lineLog interface {
	Write(tag, text string)
	Close() error
}

type discardLog struct{}

func (discardLog) Write(string, string) {}
func (discardLog) Close() error         { return nil }
