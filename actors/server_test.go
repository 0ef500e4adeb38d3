package actors

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// The server actor's state machine, driven through the dial seam by a
// fakeServer inside a synctest bubble: protoactor's mailboxes, the actor's
// timers (time.AfterFunc), the call timeout and the restart backoff all run
// on the bubble's fake clock, and synctest.Wait returns once every one of
// them is durably blocked, so no test sleeps. The bubble's end also checks
// that Runtime.Close left no goroutine behind.

// eventLog collects a runtime's events.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) add(ev Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

// states lists the state changes, with their time from t0.
func (l *eventLog) states(t0 time.Time) []stateAt {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []stateAt
	for _, ev := range l.events {
		if ev.Kind == EventState {
			out = append(out, stateAt{ev.State, ev.Time.Sub(t0)})
		}
	}
	return out
}

func (l *eventLog) count(kind EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.events {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

type stateAt struct {
	State State
	At    time.Duration
}

// noJitter is a restart policy whose delays are exact: 1s, 2s, 4s…
var noJitter = supervision.RestartPolicy{
	InitialInterval:     time.Second,
	Multiplier:          2,
	RandomizationFactor: -1,
	MaxInterval:         time.Minute,
	MaxRestarts:         10,
	Window:              5 * time.Minute,
}

// harness is one runtime over one fake server named "fake".
type harness struct {
	t   *testing.T
	rt  *Runtime
	srv *fakeServer
	ev  *eventLog
	t0  time.Time
}

// startFake registers the fake server. It must run inside a synctest bubble;
// the runtime is closed when the test ends.
func startFake(t *testing.T, srv *fakeServer, spec ServerSpec) *harness {
	t.Helper()
	h := &harness{t: t, srv: srv, ev: &eventLog{}, t0: time.Now()}
	h.rt = New(Options{dial: srv.dial, OnEvent: h.ev.add})
	t.Cleanup(func() {
		if err := h.rt.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	spec.Name, spec.Command, spec.Enabled = "fake", "fake-server", true
	if err := h.rt.Register(context.Background(), spec); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return h
}

func (h *harness) status() ServerStatus {
	h.t.Helper()
	st, ok := h.rt.ServerStatus("fake")
	if !ok {
		h.t.Fatal("no status for fake")
	}
	return st
}

func (h *harness) call(tool string, opts *CallOptions) (json.RawMessage, error) {
	return h.rt.Call(context.Background(), "mcp__fake__"+tool, json.RawMessage(`{}`), nil, opts)
}

// callAsync starts a call on its own goroutine.
func (h *harness) callAsync(tool string, opts *CallOptions) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := h.call(tool, opts)
		done <- err
	}()
	return done
}

func TestServerHandshakeToReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, newFakeServer(t, "echo", "hang"), ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitReady: %v", err)
		}
		synctest.Wait()
		c := h.srv.last()
		// The fake answers server/discover as a legacy server does (-32601).
		want := []string{protocol.MethodServerDiscover, protocol.MethodInitialize, protocol.MethodInitialized, protocol.MethodToolsList}
		if diff := cmp.Diff(want, c.methods()); diff != "" {
			t.Errorf("handshake (-want +got):\n%s", diff)
		}
		if ready, _, _ := c.state(); !ready {
			t.Error("the connection was not told the handshake is complete")
		}
		st := h.status()
		if st.State != StateReady || st.Tools != 2 || st.PID != 1001 || st.ServerInfo.Name != "fake" || st.ProtocolVersion != protocol.ProtocolVersion {
			t.Errorf("status = %+v", st)
		}
		wantStates := []stateAt{{StateStarting, 0}, {StateInitializing, 0}, {StateReady, 0}}
		if diff := cmp.Diff(wantStates, h.ev.states(h.t0)); diff != "" {
			t.Errorf("states (-want +got):\n%s", diff)
		}
		res, err := h.call("echo", nil)
		if err != nil || !strings.Contains(string(res), "ok echo") {
			t.Errorf("call = %s, %v", res, err)
		}
		if _, err := h.call("missing", nil); !errors.Is(err, ErrUnknownTool) {
			t.Errorf("call of an unknown tool: %v, want ErrUnknownTool", err)
		}
	})
}

// Calls made while the server starts wait in the actor and go out once it
// is ready, after the handshake.
func TestServerCallQueuedUntilReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		srv.dialErr = func(n int) error {
			if n == 1 {
				return errors.New("spawn refused")
			}
			return nil
		}
		h := startFake(t, srv, ServerSpec{Restart: noJitter})
		synctest.Wait()
		if st := h.status(); st.State != StateBackoff {
			t.Fatalf("state = %s, want backoff", st.State)
		}
		// In backoff a call fails at once, saying when to retry.
		_, err := h.call("echo", nil)
		var un *UnavailableError
		if !errors.As(err, &un) || un.State != StateBackoff || un.RetryAfter != time.Second {
			t.Fatalf("call in backoff: %v, want UnavailableError in backoff, retry after 1s", err)
		}
		time.Sleep(time.Second) // the fake clock: the retry fires
		synctest.Wait()
		if got := h.srv.dials(); got != 2 {
			t.Fatalf("%d dials after the backoff, want 2", got)
		}
		if _, err := h.call("echo", nil); err != nil {
			t.Errorf("call after the restart: %v", err)
		}
	})
}

// A failed handshake restarts the server after the policy's backoff: 1s,
// then 2s, then 4s, measured on the fake clock.
func TestServerFailedHandshakeBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		srv.initErr = func(n int) *protocol.Error {
			if n <= 3 {
				return &protocol.Error{Code: protocol.CodeInternalError, Message: "not today"}
			}
			return nil
		}
		h := startFake(t, srv, ServerSpec{Restart: noJitter})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitReady: %v", err)
		}
		synctest.Wait()
		s := time.Second
		want := []stateAt{
			{StateStarting, 0}, {StateInitializing, 0}, {StateBackoff, 0},
			{StateStarting, 1 * s}, {StateInitializing, 1 * s}, {StateBackoff, 1 * s},
			{StateStarting, 3 * s}, {StateInitializing, 3 * s}, {StateBackoff, 3 * s},
			{StateStarting, 7 * s}, {StateInitializing, 7 * s}, {StateReady, 7 * s},
		}
		if diff := cmp.Diff(want, h.ev.states(h.t0)); diff != "" {
			t.Errorf("states (-want +got):\n%s", diff)
		}
		if st := h.status(); st.Restarts != 3 || st.LastError != "" {
			t.Errorf("status = %+v, want 3 restarts and no error", st)
		}
		srv.mu.Lock()
		first := slices.Clone(srv.conns[:3])
		srv.mu.Unlock()
		for i, c := range first {
			if _, closed, _ := c.state(); !closed {
				t.Errorf("connection %d was not closed after its failed handshake", i+1)
			}
		}
	})
}

// More than MaxRestarts failures within Window: the server goes to failed
// and stays there; re-enabling it starts afresh.
func TestServerRestartIntensityExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		var failing atomic.Bool
		failing.Store(true)
		srv.initErr = func(int) *protocol.Error {
			if failing.Load() {
				return &protocol.Error{Code: protocol.CodeInternalError, Message: "broken"}
			}
			return nil
		}
		p := noJitter
		p.MaxRestarts = 2
		h := startFake(t, srv, ServerSpec{Restart: p})
		err := h.rt.WaitReady(context.Background(), "fake")
		var un *UnavailableError
		if !errors.As(err, &un) || un.State != StateFailed {
			t.Fatalf("WaitReady: %v, want UnavailableError in failed", err)
		}
		synctest.Wait()
		if got := srv.dials(); got != 3 {
			t.Errorf("%d dials, want 3 (the start and 2 restarts)", got)
		}
		st := h.status()
		if st.State != StateFailed || !strings.Contains(st.LastError, "gave up: more than 2 restarts within 5m0s") {
			t.Errorf("status = %s %q", st.State, st.LastError)
		}
		elapsed := time.Since(h.t0)
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := srv.dials(); got != 3 {
			t.Errorf("a failed server restarted by itself: %d dials after an hour", got)
		}
		if elapsed != 3*time.Second {
			t.Errorf("gave up after %s, want 3s (backoffs of 1s and 2s)", elapsed)
		}
		if _, err := h.call("echo", nil); !errors.Is(err, ErrUnavailable) {
			t.Errorf("call to a failed server: %v, want ErrUnavailable", err)
		}

		failing.Store(false)
		if err := h.rt.SetEnabled(context.Background(), "fake", true); err != nil {
			t.Fatal(err)
		}
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitReady after re-enabling: %v", err)
		}
		if st := h.status(); st.Restarts != 0 {
			t.Errorf("restarts after re-enabling = %d, want 0", st.Restarts)
		}
	})
}

// A call in flight fails with ErrConnectionLost, naming the exit, when the
// process dies; the server restarts.
func TestServerCallFailsWhenConnectionDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, newFakeServer(t, "hang"), ServerSpec{Restart: noJitter})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatal(err)
		}
		done := h.callAsync("hang", nil)
		synctest.Wait()
		if got := h.rt.PendingCalls()["fake"]; got != 1 {
			t.Fatalf("pending calls = %d, want 1", got)
		}
		c := h.srv.last()
		c.die(3)
		err := <-done
		if !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "exit status 3") {
			t.Errorf("call: %v, want ErrConnectionLost with the exit status", err)
		}
		synctest.Wait()
		if st := h.status(); st.State != StateBackoff || st.LastError != "exit status 3" {
			t.Errorf("status = %s %q, want backoff after exit status 3", st.State, st.LastError)
		}
		if _, closed, _ := c.state(); !closed {
			t.Error("the dead connection was not closed")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if st := h.status(); st.State != StateReady || h.srv.dials() != 2 {
			t.Errorf("after the backoff: %s with %d dials, want ready with 2", st.State, h.srv.dials())
		}
	})
}

// A call that outlives its timeout fails with ErrTimeout, is cancelled at
// the server, and its late response is dropped.
func TestServerCallTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, newFakeServer(t, "hang", "echo"), ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		_, err := h.call("hang", &CallOptions{Timeout: 5 * time.Second})
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("call: %v, want ErrTimeout", err)
		}
		if d := time.Since(t0); d != 5*time.Second {
			t.Errorf("timed out after %s, want 5s", d)
		}
		synctest.Wait()
		c := h.srv.last()
		calls := c.sent(protocol.MethodToolsCall)
		cancels := c.sent(protocol.MethodCancelled)
		if len(calls) != 1 || len(cancels) != 1 {
			t.Fatalf("sent %d calls and %d cancellations, want 1 and 1", len(calls), len(cancels))
		}
		var p protocol.CancelledParams
		if err := json.Unmarshal(cancels[0].Params, &p); err != nil || string(p.RequestID) != string(calls[0].ID) || p.Reason != "timeout" {
			t.Errorf("notifications/cancelled %s for call id %s", cancels[0].Params, calls[0].ID)
		}
		id, _ := calls[0].IntID()
		if _, _, abandoned := c.state(); !slices.Equal(abandoned, []int64{id}) {
			t.Errorf("abandoned %v, want [%d]", abandoned, id)
		}
		if got := h.rt.PendingCalls()["fake"]; got != 0 {
			t.Errorf("pending calls after the timeout = %d", got)
		}

		// The late response matches nothing and goes no further; the next
		// call gets its own answer.
		c.write(protocol.AppendResult(nil, calls[0].ID, json.RawMessage(`{"content":[{"type":"text","text":"late"}]}`)))
		synctest.Wait()
		res, err := h.call("echo", nil)
		if err != nil || !strings.Contains(string(res), "ok echo") {
			t.Errorf("next call = %s, %v", res, err)
		}
		if st := h.status(); st.State != StateReady {
			t.Errorf("state after the late response = %s", st.State)
		}
	})
}

// notifications/tools/list_changed relists the tools and emits EventTools.
func TestServerToolsListChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		h := startFake(t, srv, ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := h.ev.count(EventTools); n != 1 {
			t.Fatalf("%d EventTools after the handshake, want 1", n)
		}
		srv.setTools("echo", "added")
		c := srv.last()
		c.notify(protocol.MethodToolsListChanged)
		synctest.Wait()
		if n := len(c.sent(protocol.MethodToolsList)); n != 2 {
			t.Errorf("tools/list sent %d times, want 2", n)
		}
		if n := h.ev.count(EventTools); n != 2 {
			t.Errorf("%d EventTools, want 2", n)
		}
		var names []string
		for _, tool := range h.rt.Tools() {
			names = append(names, tool.Name)
		}
		if diff := cmp.Diff([]string{"mcp__fake__echo", "mcp__fake__added"}, names); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if _, err := h.call("added", nil); err != nil {
			t.Errorf("call of the added tool: %v", err)
		}
	})
}

// SetEnabled(false) closes the connection and fails calls; Unregister
// stops the server for good.
func TestServerDisableAndUnregister(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, newFakeServer(t, "hang"), ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatal(err)
		}
		done := h.callAsync("hang", nil)
		synctest.Wait()
		c := h.srv.last()
		if err := h.rt.SetEnabled(context.Background(), "fake", false); err != nil {
			t.Fatal(err)
		}
		if _, closed, _ := c.state(); !closed {
			t.Error("SetEnabled(false) returned before the connection was closed")
		}
		if err := <-done; !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "was disabled") {
			t.Errorf("call in flight: %v, want ErrUnavailable: disabled", err)
		}
		if st := h.status(); st.State != StateDisabled || st.Enabled {
			t.Errorf("status = %s enabled=%v, want disabled", st.State, st.Enabled)
		}
		if _, err := h.call("hang", nil); !errors.Is(err, ErrUnavailable) {
			t.Errorf("call to a disabled server: %v", err)
		}
		if len(h.rt.Tools()) != 0 {
			t.Error("a disabled server's tools are listed")
		}

		if err := h.rt.Unregister(context.Background(), "fake"); err != nil {
			t.Fatal(err)
		}
		if _, ok := h.rt.ServerStatus("fake"); ok {
			t.Error("an unregistered server has a status")
		}
		if err := h.rt.Unregister(context.Background(), "fake"); !errors.Is(err, ErrUnknownServer) {
			t.Errorf("second Unregister: %v, want ErrUnknownServer", err)
		}
		synctest.Wait()
		states := h.ev.states(h.t0)
		if last := states[len(states)-1]; last.State != StateStopped {
			t.Errorf("last state %s, want stopped", last.State)
		}
		if got := h.srv.dials(); got != 1 {
			t.Errorf("%d dials, want 1", got)
		}
	})
}
