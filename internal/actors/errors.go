package actors

import "errors"

// Sentinel errors. Callers test them with errors.Is; the runtime wraps them
// with the server, tool and reason.
var (
	ErrInvalidServerName = errors.New("invalid server name")
	ErrUnknownTool       = errors.New("unknown tool")
	ErrUnknownServer     = errors.New("unknown server")
	ErrUnavailable       = errors.New("server unavailable")
	ErrTimeout           = errors.New("call timed out")
	ErrCancelled         = errors.New("call cancelled")
	ErrNotReading        = errors.New("server is not reading its input")
	ErrConnectionLost    = errors.New("connection lost")
	ErrClosed            = errors.New("host closed")
	ErrDuplicateServer   = errors.New("server already exists")
	ErrSessionExpired    = errors.New("session expired")
)
