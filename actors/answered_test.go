package actors

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// A call's answer that races its caller's cancellation reads as cancelled
// whichever came first; an error answer is kept as it is.
func TestAnsweredAfterCancel(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(live)
	cancel()
	ok := callReply{result: json.RawMessage(`{"content":[]}`)}
	failed := callReply{err: ErrUnavailable}

	if res, err := answered(live, "t", ok); err != nil || string(res) != `{"content":[]}` {
		t.Errorf("a live caller's answer: %s, %v", res, err)
	}
	if res, err := answered(gone, "t", ok); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) || res != nil {
		t.Errorf("an answer after the caller cancelled: %s, %v", res, err)
	}
	if _, err := answered(gone, "t", failed); !errors.Is(err, ErrUnavailable) {
		t.Errorf("an error after the caller cancelled: %v", err)
	}
}
