package toolpin

import "errors"

// Sentinel errors, for errors.Is.
var (
	// ErrInvalidJSON: CanonicalJSON was given bytes that are not exactly one
	// JSON value.
	ErrInvalidJSON = errors.New("invalid json")
	// ErrPolicy: ParsePolicy or Policy.UnmarshalText was given a value that
	// is not off, warn or hold.
	ErrPolicy = errors.New("unknown tool pinning policy")
)
