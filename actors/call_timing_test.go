package actors

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A call made while its server starts is held by the actor, and its
// timing says from when until the server took it: the server's start,
// which the caller leaves out of the call's duration. A call to the
// ready server is not held, and is timed when written.
func TestCallTimingHeldWhileStarting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		started := make(chan struct{}) // the server's spawn ends when closed
		srv.dialErr = func(int) error {
			<-started
			return nil
		}
		h := startFake(t, srv, ServerSpec{Restart: noJitter})
		var first, second CallTiming
		done := h.callAsync("echo", &CallOptions{Timing: &first})
		synctest.Wait() // the call is in the actor's queue
		if st := h.status(); st.State != StateStarting {
			t.Fatalf("state %s while the spawn is held, want starting", st.State)
		}
		const spawn = 1200 * time.Millisecond
		time.Sleep(spawn)
		close(started)
		if err := <-done; err != nil {
			t.Fatalf("first call: %v", err)
		}
		from, until := first.Held()
		if from.IsZero() || until.IsZero() {
			t.Fatalf("first call: held from %v until %v, want both set", from, until)
		}
		if got := until.Sub(from); got != spawn {
			t.Errorf("first call held for %v, want the spawn's %v", got, spawn)
		}
		// The actor notes the write's end after the write, which the
		// answer may overtake: Sent is whole once the actor is idle.
		synctest.Wait()
		if start, _ := first.Sent(); start.Before(until) {
			t.Errorf("first call written at %v, before it was let go at %v", start, until)
		}

		if _, err := h.call("echo", &CallOptions{Timing: &second}); err != nil {
			t.Fatalf("second call: %v", err)
		}
		if from, _ := second.Held(); !from.IsZero() {
			t.Errorf("second call, to the ready server, held from %v", from)
		}
		if start, _ := second.Sent(); start.IsZero() {
			t.Errorf("second call: no write time")
		}
		// One CallTiming serves successive requests: each starts clear.
		if _, err := h.call("echo", &CallOptions{Timing: &first}); err != nil {
			t.Fatalf("third call: %v", err)
		}
		if from, _ := first.Held(); !from.IsZero() {
			t.Errorf("a CallTiming used again keeps its last request's hold from %v", from)
		}
	})
}

// A call held for a server whose start fails is never let go: its whole
// wait was the server's.
func TestCallTimingHeldStartFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		fail := make(chan struct{})
		srv.dialErr = func(int) error {
			<-fail
			return errors.New("spawn refused")
		}
		h := startFake(t, srv, ServerSpec{Restart: noJitter})
		var timing CallTiming
		done := h.callAsync("echo", &CallOptions{Timing: &timing})
		synctest.Wait()
		close(fail)
		if err := <-done; err == nil {
			t.Fatal("a call to a server whose spawn failed succeeded")
		}
		if from, until := timing.Held(); from.IsZero() || !until.IsZero() {
			t.Errorf("held from %v until %v, want from set and never let go", from, until)
		}
	})
}
