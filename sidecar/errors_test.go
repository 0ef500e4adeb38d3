package sidecar

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

func TestErrorShape(t *testing.T) {
	restarting := fmt.Errorf("call mcp__x__echo: %w", &mcpvisor.UnavailableError{
		Server: "x", State: mcpvisor.StateBackoff, Reason: "exited with status 3", RetryAfter: 1500 * time.Millisecond})
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		code       string
		retryAfter string // header
		retryMS    int64
	}{
		{"restarting", restarting, 503, CodeUnavailable, "2", 1500},
		{"disabled", &mcpvisor.UnavailableError{Server: "x", State: mcpvisor.StateDisabled}, 503, CodeUnavailable, "", 0},
		{"timeout", fmt.Errorf("x: %w", mcpvisor.ErrTimeout), 504, CodeTimeout, "", 0},
		{"not granted", fmt.Errorf("x: %w", mcpvisor.ErrNotGranted), 403, CodeNotGranted, "", 0},
		{"unknown tool", fmt.Errorf("x: %w", mcpvisor.ErrUnknownTool), 404, CodeUnknownTool, "", 0},
		{"unknown approval", fmt.Errorf("x: %w", mcpvisor.ErrUnknownApproval), 404, CodeUnknownApproval, "", 0},
		{"tool withheld", fmt.Errorf("x: %w", mcpvisor.ErrToolWithheld), 409, CodeToolWithheld, "", 0},
		{"stale review", fmt.Errorf("x: %w", mcpvisor.ErrStaleReview), 409, CodeStaleReview, "", 0},
		{"config", fmt.Errorf("x: %w", mcpvisor.ErrConfig), 400, CodeInvalidConfig, "", 0},
		{"other", errors.New("boom"), 500, CodeInternal, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeErr(rec, tc.err)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d", rec.Code, tc.status)
			}
			if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var body struct {
				Error struct {
					Code       string `json:"code"`
					Message    string `json:"message"`
					RetryAfter *int64 `json:"retryAfterMs"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if body.Error.Code != tc.code || body.Error.Message != tc.err.Error() {
				t.Errorf("body %s", rec.Body)
			}
			if tc.retryMS == 0 && body.Error.RetryAfter != nil || tc.retryMS != 0 && (body.Error.RetryAfter == nil || *body.Error.RetryAfter != tc.retryMS) {
				t.Errorf("retryAfterMs in %s, want %d", rec.Body, tc.retryMS)
			}
		})
	}
}
