package sse

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// ErrAbandoned is what Reader.Next returns after a *TooLargeError: the
// Reader stopped reading the stream at the oversized event. It does not
// match protocol.ErrFrameTooLarge, so a loop that skips oversized events
// ends on it.
var ErrAbandoned = errors.New("sse: stream abandoned after an oversized event")

// TooLargeError reports an event that passed the Reader's limit: its data,
// one of its lines, or the stream it took without its blank line. The
// Reader stopped reading there; errors.Is(err, protocol.ErrFrameTooLarge) is
// true.
//
// The fields of the event read before it passed the limit are kept, so
// that a caller can advance its Last-Event-ID past the dropped event and
// honour its retry.
type TooLargeError struct {
	// Size is a lower bound of the event's size, above Limit: its data as
	// far as it was read, or Limit+1 when a line passed the limit (the
	// rest of the line was not read), whichever is larger; with Stream,
	// the bytes of stream the event took.
	Size int64
	// Stream reports an event cut for what it took of the stream, more
	// than twice Limit plus 64 KiB of lines (comments and other fields
	// included) without its blank line, rather than for its data or one
	// line.
	Stream bool
	// Limit is the Reader's maxEvent.
	Limit int
	// EventID and HasEventID are the dropped event's "id" field, as in Event.
	EventID    string
	HasEventID bool
	// Retry and HasRetry are the dropped event's "retry" field, as in Event.
	Retry    time.Duration
	HasRetry bool
	// Prefix is a copy of the first bytes of the event's data, up to 4 KiB,
	// for ID.
	Prefix []byte
}

func (e *TooLargeError) Error() string {
	if e.Stream {
		return fmt.Sprintf("sse event too large: %d bytes of stream without its end, limit %d", e.Size, e.Limit)
	}
	return fmt.Sprintf("sse event too large: at least %d bytes, limit %d", e.Size, e.Limit)
}

// Unwrap makes errors.Is(err, protocol.ErrFrameTooLarge) true.
func (e *TooLargeError) Unwrap() error { return protocol.ErrFrameTooLarge }

// ID returns the top-level JSON-RPC "id" of the dropped message when its
// Prefix holds one, so that the caller can fail the call it answered; nil
// otherwise.
func (e *TooLargeError) ID() json.RawMessage { return protocol.SniffID(e.Prefix) }
