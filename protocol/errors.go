package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Sentinel errors. Callers test them with errors.Is; the errors returned by
// this package wrap them with the detail (a reason, a value, a size).
var (
	// ErrFrameTooLarge: a frame exceeded the FrameReader's limit. The concrete
	// error is a *FrameTooLargeError.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrInvalidMessage: a frame is not a JSON-RPC 2.0 request, notification
	// or response. Classify wraps it with a short reason.
	ErrInvalidMessage = errors.New("invalid json-rpc message")
	// ErrUnsupportedVersion: the server negotiated a protocol revision we do
	// not speak; the spec says the client must then disconnect.
	ErrUnsupportedVersion = errors.New("unsupported protocol version")
	// ErrMissingVersion: an initialize result without protocolVersion.
	ErrMissingVersion = errors.New("initialize result has no protocolVersion")
	// ErrInvalidMeta: MergeMeta was given a _meta that is not a JSON object,
	// or a value that is not JSON.
	ErrInvalidMeta = errors.New("invalid _meta")
	// ErrInvalidResult: a result lacks a member the schema requires or holds
	// a value it forbids. The Validate methods wrap it with the member.
	ErrInvalidResult = errors.New("invalid result")
)

// JSON-RPC and MCP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602 // also: unknown tool, bad cursor, unsupported protocol version
	CodeInternalError  = -32603
	// CodeResourceNotFound is 2025-11-25's resource-not-found; data carries the uri.
	CodeResourceNotFound = -32002
	// CodeURLElicitationRequired carries data.elicitations, the URLs the user must visit.
	CodeURLElicitationRequired = -32042
)

// Error is a JSON-RPC error object, the "error" member of an error response.
// A tool's own failure is not an Error: it is a CallToolResult with IsError.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error formats the error as "code N: message".
func (e *Error) Error() string {
	return "code " + strconv.FormatInt(e.Code, 10) + ": " + e.Message
}

// FrameTooLargeError reports a frame longer than the FrameReader's limit. The
// reader kept only Prefix and Suffix of it; the rest was discarded unread.
type FrameTooLargeError struct {
	// Size is the length of the line without its "\n". If the underlying
	// reader failed before the line ended, it is the bytes seen so far.
	Size int64
	// Limit is the reader's maxFrame.
	Limit int
	// Prefix is a copy of the first bytes of the frame, up to 4 KiB, for
	// SniffID.
	Prefix []byte
	// Suffix is a copy of the last bytes of the line, up to 4 KiB, for
	// SniffTrailingID. It is nil when the line did not end (read error).
	Suffix []byte
	// Unterminated: the line ran past the reader's discard limit
	// (FrameReader.SetDiscardLimit) with no newline, and the reader gave it
	// up there; Size is how far it had run.
	Unterminated bool
}

func (e *FrameTooLargeError) Error() string {
	if e.Unterminated {
		return fmt.Sprintf("frame too large: %d bytes without a newline, limit %d", e.Size, e.Limit)
	}
	return fmt.Sprintf("frame too large: %d bytes, limit %d", e.Size, e.Limit)
}

// Unwrap makes errors.Is(err, ErrFrameTooLarge) true.
func (e *FrameTooLargeError) Unwrap() error { return ErrFrameTooLarge }

// ID returns the top-level "id" of the oversized frame, found in its prefix
// or, when a server writes the id last (the TypeScript SDK does:
// {"result":…,"jsonrpc":"2.0","id":7}), in its suffix. It returns nil when
// neither holds a complete string or number id.
func (e *FrameTooLargeError) ID() json.RawMessage {
	if id := SniffID(e.Prefix); id != nil {
		return id
	}
	return SniffTrailingID(e.Suffix)
}

// Reasons Classify gives, prebuilt so that rejecting a non-JSON banner line
// costs no allocation.
var (
	errEmpty          = invalid("empty frame")
	errBatch          = invalid("batch arrays are not supported")
	errNotObject      = invalid("not a json object")
	errTrailing       = invalid("data after the object")
	errDuplicate      = invalid("duplicate member")
	errNoVersion      = invalid(`missing "jsonrpc"`)
	errBadVersion     = invalid(`"jsonrpc" is not "2.0"`)
	errMethodType     = invalid(`"method" is not a string`)
	errIDType         = invalid(`"id" is not a string or number`)
	errNullRequestID  = invalid(`request with "id": null`)
	errRequestAnswer  = invalid(`"method" with "result" or "error"`)
	errResultAndError = invalid(`both "result" and "error"`)
	errNoOutcome      = invalid(`"id" without "method", "result" or "error"`)
	errNoID           = invalid(`no "method" and no "id"`)
	errResultNoID     = invalid(`"result" without a non-null "id"`)
	errErrorType      = invalid(`"error" is not an object`)
)

func invalid(reason string) error {
	return fmt.Errorf("%w: %s", ErrInvalidMessage, reason)
}

// syntaxError reports a frame that is not JSON, saying what is wrong where
// the scanner stopped (offset), so that an error a call fails with names the
// cause: a frame cut short, invalid UTF-8, nesting past the limit.
func syntaxError(frame []byte, offset int) error {
	return fmt.Errorf("%w: malformed json: %s", ErrInvalidMessage, syntaxReason(frame, offset))
}

func syntaxReason(b []byte, off int) string {
	if off >= len(b) {
		return fmt.Sprintf("truncated: the frame ends inside a value after %d bytes", len(b))
	}
	switch c := b[off]; {
	case c >= utf8.RuneSelf:
		if r, _ := utf8.DecodeRune(b[off:]); r == utf8.RuneError {
			return fmt.Sprintf("invalid utf-8 at offset %d", off)
		}
		return fmt.Sprintf("unexpected character at offset %d", off)
	case (c == '{' || c == '[') && nestingAt(b, off) >= maxDepth:
		return fmt.Sprintf("nested deeper than %d levels at offset %d", maxDepth, off)
	case c < 0x20:
		return fmt.Sprintf("control character %#02x at offset %d", c, off)
	default:
		return fmt.Sprintf("unexpected %q at offset %d", c, off)
	}
}

// ErrInvalidParamHeader: a tool's inputSchema holds an x-mcp-header
// annotation that breaks a constraint of 2026-07-28 (SEP-2243), so a client
// on Streamable HTTP must leave the tool out of tools/list. ParamHeaders
// wraps it with the annotation, the property and the reason.
var ErrInvalidParamHeader = errors.New("invalid x-mcp-header")
