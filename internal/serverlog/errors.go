package serverlog

import "errors"

// ErrClosed is returned by Sync and Tail after Close.
var ErrClosed = errors.New("serverlog: file closed")
