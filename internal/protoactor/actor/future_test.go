package actor

import (
	"errors"
	"testing"
	"time"
)

// mcpvisor patch 17: a reply that reaches the future's process after the
// timeout settled it must change nothing. Before the patch the reply was
// written without the lock: a data race with the timeout's Stop, and the
// caller who had seen ErrTimeout then read the late reply as the result.
func TestFutureLateReplyAfterTimeout(t *testing.T) {
	system := NewActorSystem()
	defer system.Shutdown()

	f := NewFuture(system, time.Millisecond)
	// The sender of a reply holds the process, not the PID: the registry
	// entry is gone once the future stops.
	proc, ok := system.ProcessRegistry.Get(f.PID())
	if !ok {
		t.Fatal("future's process is not registered")
	}
	if err := f.Wait(); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Wait = %v, want ErrTimeout", err)
	}

	proc.SendUserMessage(f.PID(), "late reply")
	proc.SendSystemMessage(f.PID(), &Stop{})

	res, err := f.Result()
	if res != nil || !errors.Is(err, ErrTimeout) {
		t.Fatalf("Result = %v, %v; want <nil>, ErrTimeout", res, err)
	}
}
