package actors

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// WaitSettled returns at the outcome of the attempt under way, measured on
// the bubble's fake clock: at once for a server that cannot be spawned or
// comes up, at StartupTimeout for one that never answers; WaitReady would
// wait through the restarts.
func TestWaitSettled(t *testing.T) {
	const startup = 10 * time.Second
	for _, tc := range []struct {
		name     string
		script   func(*fakeServer)
		spec     ServerSpec
		after    time.Duration // when WaitSettled returns
		state    State
		lastErr  string
		restarts int // 1: the first attempt failed, no restart yet
	}{
		{"ready", func(*fakeServer) {}, ServerSpec{}, 0, StateReady, "", 0},
		{"spawn fails", func(s *fakeServer) {
			s.dialErr = func(int) error { return errors.New(`exec: "nope": executable file not found in $PATH`) }
		}, ServerSpec{Restart: noJitter}, 0, StateBackoff, "executable file not found", 1},
		{"handshake refused", func(s *fakeServer) {
			s.initErr = func(int) *protocol.Error {
				return &protocol.Error{Code: protocol.CodeInternalError, Message: "not today"}
			}
		}, ServerSpec{Restart: noJitter}, 0, StateBackoff, "not today", 1},
		{"never answers", func(s *fakeServer) {
			s.discover = func(int, json.RawMessage) []byte { return nil }
		}, ServerSpec{ProtocolVersion: protocol.ModernVersion, StartupTimeout: startup, Restart: noJitter}, startup, StateBackoff, "startup timeout", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(t, "echo")
				tc.script(srv)
				h := startFake(t, srv, tc.spec)
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				if err := h.rt.WaitSettled(ctx); err != nil {
					t.Fatalf("WaitSettled: %v", err)
				}
				if d := time.Since(h.t0); d != tc.after {
					t.Errorf("WaitSettled returned after %v, want %v", d, tc.after)
				}
				st := h.status()
				if st.State != tc.state || !strings.Contains(st.LastError, tc.lastErr) || st.Restarts != tc.restarts {
					t.Errorf("status %s (%q, %d restarts), want %s with %q and %d restarts", st.State, st.LastError, st.Restarts, tc.state, tc.lastErr, tc.restarts)
				}
				if got := srv.dials(); got != 1 {
					t.Errorf("%d dials, want the first attempt only", got)
				}
			})
		})
	}
}

// A server restarting after a backoff is waited for: the outcome of that
// attempt, not the backoff before it, is what settles it again.
func TestWaitSettledWaitsForTheAttemptUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		srv.dialErr = func(n int) error {
			if n == 1 {
				return errors.New("spawn refused")
			}
			return nil
		}
		srv.discover = func(int, json.RawMessage) []byte { return nil } // the restart hangs in its handshake
		h := startFake(t, srv, ServerSpec{Restart: noJitter, ProtocolVersion: protocol.ModernVersion, StartupTimeout: 5 * time.Second})
		synctest.Wait()
		if st := h.status(); st.State != StateBackoff {
			t.Fatalf("state %s, want backoff", st.State)
		}
		time.Sleep(time.Second) // the backoff ends: the restart begins
		synctest.Wait()
		if st := h.status(); st.State == StateBackoff || st.State == StateReady {
			t.Fatalf("state %s after the backoff, want the restart under way", st.State)
		}
		start := time.Now()
		if err := h.rt.WaitSettled(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitSettled: %v", err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("WaitSettled returned after %v, want the restart's 5s startup timeout", d)
		}
		if st := h.status(); st.State != StateBackoff || st.Restarts != 2 || !strings.Contains(st.LastError, "startup timeout") {
			t.Errorf("status %s (%q) with %d restarts, want backoff after a startup timeout, 2 failures", st.State, st.LastError, st.Restarts)
		}
	})
}

func TestWaitSettledErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		srv.discover = func(int, json.RawMessage) []byte { return nil }
		h := startFake(t, srv, ServerSpec{ProtocolVersion: protocol.ModernVersion, StartupTimeout: time.Minute})
		if err := h.rt.WaitSettled(context.Background(), "fake", "nope"); !errors.Is(err, ErrUnknownServer) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("an unknown name: %v, want ErrUnknownServer naming it", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := h.rt.WaitSettled(ctx)
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "fake: initializing") {
			t.Errorf("ctx ended first: %v, want ErrUnavailable and DeadlineExceeded naming fake's state", err)
		}
		if d := time.Since(h.t0); d != time.Second {
			t.Errorf("returned after %v, want ctx's 1s", d)
		}
	})
}

// A server that needs a sign-in is settled, for WaitReady and WaitSettled,
// only when no sign-in is under way and none has just brought a token its
// actor has not started on yet.
func TestNeedsAuthSettlesOnlyWithoutASignIn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		auth    *oauth.Status
		settled bool
	}{
		{"no authorizer", nil, true},
		{"nothing under way", &oauth.Status{NeedsAuth: true}, true},
		{"sign-in pending", &oauth.Status{Pending: true}, false},
		{"token just obtained", &oauth.Status{SignedIn: true}, false},
	} {
		st := &ServerStatus{Name: "s", State: StateNeedsAuth, Auth: tc.auth}
		if got := hasSettled(st); got != tc.settled {
			t.Errorf("%s: hasSettled = %v, want %v", tc.name, got, tc.settled)
		}
		if ok, err := settled(st); ok != tc.settled || (err != nil) != tc.settled {
			t.Errorf("%s: settled = %v, %v; want %v", tc.name, ok, err, tc.settled)
		}
	}
}
