package sse

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// TooLargeError reports an event whose data, or one of whose lines, was
// longer than the Reader's limit. The reader discarded the event while
// reading it; errors.Is(err, protocol.ErrFrameTooLarge) is true.
//
// The event's other fields were still parsed, so that a caller can advance
// its Last-Event-ID past the dropped event and honour its retry.
type TooLargeError struct {
	// Size is a lower bound of the event's size: its data as far as it was
	// counted, or its longest line, whichever is larger. It is above Limit.
	Size int64
	// Limit is the Reader's maxEvent.
	Limit int
	// EventID and HasEventID are the dropped event's "id" field, as in Event.
	EventID    string
	HasEventID bool
	// Retry and HasRetry are the dropped event's "retry" field, as in Event.
	Retry    time.Duration
	HasRetry bool
	// Prefix is a copy of the first bytes of the event's data, up to 4 KiB,
	// for ID. It may be shorter when a data line was itself too long.
	Prefix []byte
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("sse event too large: at least %d bytes, limit %d", e.Size, e.Limit)
}

// Unwrap makes errors.Is(err, protocol.ErrFrameTooLarge) true.
func (e *TooLargeError) Unwrap() error { return protocol.ErrFrameTooLarge }

// ID returns the top-level JSON-RPC "id" of the dropped message when its
// Prefix holds one, so that the caller can fail the call it answered; nil
// otherwise.
func (e *TooLargeError) ID() json.RawMessage { return protocol.SniffID(e.Prefix) }
