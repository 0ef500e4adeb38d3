package config

import "errors"

var (
	// ErrInvalid is wrapped by every error that reports an invalid
	// configuration, including JSON syntax errors.
	ErrInvalid = errors.New("invalid config")
	// ErrInvalidServerName is wrapped by ValidateServerName's errors (and
	// so by the *Error naming such a server, alongside ErrInvalid).
	ErrInvalidServerName = errors.New("invalid server name")
)
