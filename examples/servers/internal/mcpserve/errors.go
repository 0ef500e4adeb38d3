package mcpserve

import (
	"errors"
	"fmt"
)

// JSON-RPC error codes used by the server.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Sentinel errors.
var (
	// ErrNoResponse, returned by a handler, tells the server not to answer the
	// request (the handler has answered it itself, or means never to).
	ErrNoResponse = errors.New("mcpserve: no response")
	// ErrStopReading, returned by a notification handler, makes Serve stop
	// reading its input. Serve then waits for its context to end.
	ErrStopReading = errors.New("mcpserve: stop reading")
	// ErrClosed is returned by Call when Serve has returned.
	ErrClosed = errors.New("mcpserve: server closed")
	// ErrNotServing is returned when writing before Serve has started.
	ErrNotServing = errors.New("mcpserve: not serving")
	// ErrIDInUse is returned by CallWithID when a request with the same id is
	// still waiting for its response.
	ErrIDInUse = errors.New("mcpserve: request id in use")
	// ErrInputRequired is returned by ToolCall.Call in a modern request
	// when the client has not answered the request yet: the handler must
	// return, and the client is asked through an input_required result.
	ErrInputRequired = errors.New("mcpserve: input required")
	// ErrMissingClientCapability is returned by ToolCall.Call in a modern
	// request when the client did not declare the capability the request
	// needs (elicitation for elicitation/create, ...).
	ErrMissingClientCapability = errors.New("mcpserve: client capability missing")
	// ErrNotInputRequest is returned by ToolCall.Call in a modern request
	// for a method an input_required result cannot carry.
	ErrNotInputRequest = errors.New("mcpserve: not an input request")
)

// Error is a JSON-RPC error object. A handler returning an *Error (possibly
// wrapped) gets it sent as the error response; Call returns the client's
// error responses as *Error.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
