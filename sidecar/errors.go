package sidecar

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// Stable error codes of the API's JSON errors.
const (
	CodeUnauthorized        = "unauthorized"
	CodeForbidden           = "forbidden"      // Host or Origin refused (DNS rebinding, another site's page)
	CodeAdminRequired       = "admin_required" // the route changes state and needs the admin token, not the gateway token
	CodeSelfApproval        = "self_approval"  // an approval answered with the token whose request raised it
	CodeNotFound            = "not_found"
	CodeInvalidRequest      = "invalid_request"
	CodeInvalidConfig       = "invalid_config"
	CodeInvalidArguments    = "invalid_arguments"
	CodeInvalidResult       = "invalid_result"
	CodeUnknownTool         = "unknown_tool"
	CodeUnknownServer       = "unknown_server"
	CodeUnknownGroup        = "unknown_group"
	CodeUnknownElicitation  = "unknown_elicitation"
	CodeUnknownApproval     = "unknown_approval"
	CodeUnknownTask         = "unknown_task"
	CodeUnknownEvent        = "unknown_event"
	CodeUnavailable         = "unavailable"
	CodeTimeout             = "timeout"
	CodeCancelled           = "cancelled"
	CodeNotGranted          = "not_granted"
	CodeToolWithheld        = "tool_withheld" // the tool's definition awaits a person's approval, or was rejected
	CodeStaleReview         = "stale_review"  // a tool decision named a definition the server no longer lists
	CodeConnectionLost      = "connection_lost"
	CodeClosed              = "closed"
	CodeURLElicitationFirst = "url_elicitation_required"
	CodeNoSignIn            = "no_sign_in"        // the server does not use OAuth, or signs in by itself
	CodeSignInFailed        = "sign_in_failed"    // discovery or client registration failed
	CodeNoDeviceSignIn      = "no_device_sign_in" // ?method=device, and the authorization server offers no sign-in with a code
	CodeInternal            = "internal"
)

// ErrShuttingDown is the cause with which Serve cancels the contexts of
// requests in flight when its context ends: a call cut short says so.
var ErrShuttingDown = errors.New("the sidecar is shutting down")

// ErrorView is an API error: a stable code (one of the Code* constants),
// a message for people, and for a retryable one how long to wait.
type ErrorView struct {
	status     int
	Code       string `json:"code"`
	Message    string `json:"message"`
	RetryAfter int64  `json:"retryAfterMs,omitempty"`
}

// ErrorBody is the body of every error response, and the SSE "error"
// event of a streamed call.
type ErrorBody struct {
	Error ErrorView `json:"error"`
}

// classify maps an error of the mcpvisor API to its HTTP status and code.
func classify(err error) ErrorView {
	e := ErrorView{status: http.StatusInternalServerError, Code: CodeInternal, Message: err.Error()}
	var unavail *mcpvisor.UnavailableError
	var schema *mcpvisor.SchemaError
	var urlReq *mcpvisor.URLElicitationRequiredError
	switch {
	case errors.As(err, &unavail):
		e.status, e.Code = http.StatusServiceUnavailable, CodeUnavailable
		if unavail.RetryAfter > 0 {
			e.RetryAfter = max(unavail.RetryAfter.Milliseconds(), 1)
		}
	case errors.Is(err, mcpvisor.ErrUnavailable):
		e.status, e.Code = http.StatusServiceUnavailable, CodeUnavailable
	case errors.As(err, &urlReq):
		e.status, e.Code = http.StatusConflict, CodeURLElicitationFirst
	case errors.As(err, &schema):
		if schema.Kind == "arguments" {
			e.status, e.Code = http.StatusBadRequest, CodeInvalidArguments
		} else {
			e.status, e.Code = http.StatusBadGateway, CodeInvalidResult
		}
	case errors.Is(err, mcpvisor.ErrConfig):
		e.status, e.Code = http.StatusBadRequest, CodeInvalidConfig
	case errors.Is(err, mcpvisor.ErrUnknownTool):
		e.status, e.Code = http.StatusNotFound, CodeUnknownTool
	case errors.Is(err, mcpvisor.ErrUnknownServer):
		e.status, e.Code = http.StatusNotFound, CodeUnknownServer
	case errors.Is(err, mcpvisor.ErrUnknownGroup):
		e.status, e.Code = http.StatusNotFound, CodeUnknownGroup
	case errors.Is(err, mcpvisor.ErrUnknownElicitation):
		e.status, e.Code = http.StatusNotFound, CodeUnknownElicitation
	case errors.Is(err, mcpvisor.ErrUnknownApproval):
		e.status, e.Code = http.StatusNotFound, CodeUnknownApproval
	case errors.Is(err, mcpvisor.ErrUnknownTask):
		e.status, e.Code = http.StatusNotFound, CodeUnknownTask
	case errors.Is(err, mcpvisor.ErrUnknownEvent):
		e.status, e.Code = http.StatusNotFound, CodeUnknownEvent
	case errors.Is(err, mcpvisor.ErrSelfApproval):
		e.status, e.Code = http.StatusForbidden, CodeSelfApproval
	case errors.Is(err, mcpvisor.ErrNotGranted):
		e.status, e.Code = http.StatusForbidden, CodeNotGranted
	case errors.Is(err, mcpvisor.ErrToolWithheld):
		e.status, e.Code = http.StatusConflict, CodeToolWithheld
	case errors.Is(err, mcpvisor.ErrStaleReview):
		e.status, e.Code = http.StatusConflict, CodeStaleReview
	case errors.Is(err, mcpvisor.ErrInvalidScope), errors.Is(err, mcpvisor.ErrInvalidAnswer), errors.Is(err, mcpvisor.ErrInvalidAction), errors.Is(err, mcpvisor.ErrNoUser):
		e.status, e.Code = http.StatusBadRequest, CodeInvalidRequest
	case errors.Is(err, mcpvisor.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		e.status, e.Code = http.StatusGatewayTimeout, CodeTimeout
	case errors.Is(err, mcpvisor.ErrCancelled), errors.Is(err, context.Canceled):
		e.status, e.Code = http.StatusServiceUnavailable, CodeCancelled
	case errors.Is(err, mcpvisor.ErrConnectionLost), errors.Is(err, mcpvisor.ErrNotReading), errors.Is(err, mcpvisor.ErrFrameTooLarge):
		e.status, e.Code = http.StatusBadGateway, CodeConnectionLost
	case errors.Is(err, mcpvisor.ErrClosed):
		e.status, e.Code = http.StatusServiceUnavailable, CodeClosed
	}
	return e
}

func writeError(w http.ResponseWriter, e ErrorView) {
	if e.RetryAfter > 0 {
		secs := (time.Duration(e.RetryAfter)*time.Millisecond + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
	}
	writeJSON(w, e.status, ErrorBody{Error: e})
}

func writeErr(w http.ResponseWriter, err error) { writeError(w, classify(err)) }

func badRequest(w http.ResponseWriter, format string) {
	writeError(w, ErrorView{status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: format})
}

func notFound(w http.ResponseWriter, msg string) {
	writeError(w, ErrorView{status: http.StatusNotFound, Code: CodeNotFound, Message: msg})
}
