package gateway

import "errors"

// ErrClosed is returned by ServeStdio when the gateway was closed.
var ErrClosed = errors.New("gateway closed")
