package inbox

import "errors"

// Sentinel errors, for errors.Is.
var (
	// ErrUnknown: no pending entry has that id; it was never opened, or it
	// was already answered, expired, withdrawn or closed.
	ErrUnknown = errors.New("unknown inbox entry")
	// ErrClosed: the inbox is closed. Open reports it, and Options.Left
	// gets it for the entries that Close answered.
	ErrClosed = errors.New("inbox closed")
	// ErrExpired: an entry's deadline passed. Options.Left gets it for the
	// entries that their deadline or Expire answered.
	ErrExpired = errors.New("inbox entry expired")
)
