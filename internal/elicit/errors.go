package elicit

import (
	"errors"
	"strconv"
)

// Sentinel errors, for errors.Is. The errors returned by this package wrap
// them with the detail (the elicitation id, the field, the reason).
var (
	// ErrInvalid: a request or an answer does not fit the spec or the
	// requested schema. The concrete error is an *InvalidError.
	ErrInvalid = errors.New("invalid elicitation")
	// ErrUnknown: the broker has no pending elicitation with that id; it was
	// never opened, or it was already answered, cancelled or expired.
	ErrUnknown = errors.New("unknown elicitation")
	// ErrInvalidAction: an action other than accept, decline or cancel.
	ErrInvalidAction = errors.New("invalid elicitation action")
)

// InvalidError details ErrInvalid. Its message names the parameter or form
// field at fault and says why, and never quotes a value the person entered,
// so it is safe to log and to send back as the message of a JSON-RPC -32602
// (invalid params) reply.
type InvalidError struct {
	// Field is the form field, or the request parameter ("message", "url",
	// "requestedSchema", ...), at fault. It is empty when the fault is not
	// tied to one.
	Field string
	// Reason says what is wrong, in lower case, e.g. "must be an integer".
	Reason string
}

func (e *InvalidError) Error() string {
	if e.Field == "" {
		return "invalid elicitation: " + e.Reason
	}
	return "invalid elicitation: " + strconv.Quote(e.Field) + " " + e.Reason
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

func invalid(field, reason string) *InvalidError {
	return &InvalidError{Field: field, Reason: reason}
}
