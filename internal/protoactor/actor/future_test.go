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

	// The sender of a reply holds the process, not the PID: the registry
	// entry is gone once the future stops. A loaded machine may time out
	// a short future before we look it up: try longer ones.
	var (
		f          *Future
		proc       Process
		registered bool
	)
	for d := time.Millisecond; !registered; d *= 2 {
		if d > 10*time.Second {
			t.Fatal("no future stayed registered long enough to look it up")
		}
		f = NewFuture(system, d)
		proc, registered = system.ProcessRegistry.Get(f.PID())
	}
	if _, ok := proc.(*futureProcess); !ok {
		t.Fatalf("registered process is a %T", proc)
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
