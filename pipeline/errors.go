package pipeline

import "errors"

// Errors of the pipeline's own stages.
var (
	// ErrNoResult: a stage returned neither a result nor an error.
	ErrNoResult = errors.New("a call pipeline stage returned neither a result nor an error")
	// ErrInputRounds: the server still asked for input after the most
	// rounds the host allows (Config.MaxInputRounds).
	ErrInputRounds = errors.New("too many input rounds")
	// ErrNotGranted: a session's call to a tool whose group it does not
	// hold.
	ErrNotGranted = errors.New("tool not granted to this session")
)
