package actors

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// twinRuntime runs srv as the server "fake" on a runtime whose roots/list
// handler reports, on got, whether the request came from the legacy
// incarnation.
func twinRuntime(t *testing.T, srv *fakeServer, spec ServerSpec, got chan<- bool) *Runtime {
	t.Helper()
	rt := New(Options{dial: srv.dial, Handlers: map[string]Handler{
		protocol.MethodRootsList: {Serve: func(_ context.Context, sr ServerRequest) (json.RawMessage, error) {
			got <- sr.Legacy
			return json.RawMessage(`{"roots":[]}`), nil
		}},
	}})
	t.Cleanup(func() {
		if err := rt.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	spec.Name, spec.Command, spec.Enabled = "fake", "fake-server", true
	if err := rt.Register(context.Background(), spec); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := rt.WaitReady(context.Background(), "fake"); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return rt
}

func legacyCall(rt *Runtime, legacy bool) error {
	_, err := rt.Call(context.Background(), "mcp__fake__echo", json.RawMessage(`{}`), nil, &CallOptions{Legacy: legacy})
	return err
}

func TestLegacyClientsGetALegacyIncarnation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := modernFake(t, "echo")
		rt := twinRuntime(t, srv, ServerSpec{}, make(chan bool, 1))
		primary := <-srv.dialed

		if err := legacyCall(rt, false); err != nil {
			t.Fatalf("modern client's call: %v", err)
		}
		if err := legacyCall(rt, true); err != nil {
			t.Fatalf("legacy client's call: %v", err)
		}
		synctest.Wait()
		if srv.dials() != 2 {
			t.Fatalf("%d dials, want 2: the server and its legacy incarnation", srv.dials())
		}
		twin := <-srv.dialed
		if n := len(primary.sent(protocol.MethodToolsCall)); n != 1 {
			t.Errorf("the server got %d calls, want the modern client's one", n)
		}
		calls := twin.sent(protocol.MethodToolsCall)
		if len(calls) != 1 {
			t.Fatalf("the legacy incarnation got %d calls, want the legacy client's one", len(calls))
		}
		if v := initializeVersion(t, twin.sent(protocol.MethodInitialize)[0]); v != protocol.ProtocolVersion {
			t.Errorf("the legacy incarnation initialized at %q, want %q", v, protocol.ProtocolVersion)
		}
		if slices.Contains(twin.methods(), protocol.MethodServerDiscover) {
			t.Error("the legacy incarnation was probed with server/discover: it is pinned to the legacy revision")
		}
		// To everyone else it is the same server, still modern.
		if st := rt.Status(); len(st) != 1 || st[0].ProtocolVersion != protocol.ModernVersion || st[0].LegacyPID != twin.pid() {
			t.Errorf("status lists %d servers (want 1, modern, legacy pid %d): %+v", len(st), twin.pid(), st)
		}
		// A second legacy call reuses it.
		if err := legacyCall(rt, true); err != nil {
			t.Fatalf("second legacy call: %v", err)
		}
		if srv.dials() != 2 {
			t.Errorf("%d dials after a second legacy call, want 2", srv.dials())
		}

		// Idle for DefaultLegacyIdle: it stops, and the next legacy call
		// starts another.
		time.Sleep(DefaultLegacyIdle + time.Second)
		synctest.Wait()
		if _, closed, _ := twin.state(); !closed {
			t.Fatal("the legacy incarnation still runs after its idle time")
		}
		if _, closed, _ := primary.state(); closed {
			t.Fatal("reaping the legacy incarnation closed the server")
		}
		if st, _ := rt.ServerStatus("fake"); st.LegacyPID != 0 {
			t.Errorf("status names legacy pid %d after reaping", st.LegacyPID)
		}
		if err := legacyCall(rt, true); err != nil {
			t.Fatalf("legacy call after reaping: %v", err)
		}
		synctest.Wait()
		if srv.dials() != 3 {
			t.Fatalf("%d dials, want 3: a new legacy incarnation", srv.dials())
		}
		again := <-srv.dialed

		// Disabling the server stops both; Unregister returns once both
		// are gone.
		if err := rt.SetEnabled(context.Background(), "fake", false); err != nil {
			t.Fatalf("disable: %v", err)
		}
		if _, closed, _ := again.state(); !closed {
			t.Error("disabling the server left its legacy incarnation running")
		}
		if err := legacyCall(rt, true); !errors.Is(err, ErrUnavailable) {
			t.Errorf("legacy call to a disabled server: %v, want ErrUnavailable", err)
		}
		if srv.dials() != 3 {
			t.Errorf("a legacy call to a disabled server started an incarnation (%d dials)", srv.dials())
		}
	})
}

func TestLegacyIncarnationStopsWithItsServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := modernFake(t, "echo")
		rt := twinRuntime(t, srv, ServerSpec{}, make(chan bool, 1))
		<-srv.dialed
		if err := legacyCall(rt, true); err != nil {
			t.Fatalf("legacy call: %v", err)
		}
		twin := <-srv.dialed
		if err := rt.Unregister(context.Background(), "fake"); err != nil {
			t.Fatalf("Unregister: %v", err)
		}
		if _, closed, _ := twin.state(); !closed {
			t.Error("Unregister returned with the legacy incarnation still running")
		}
	})
}

func TestLegacyIncarnationOnlyForDualModernServers(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  func(t *testing.T) *fakeServer
		spec ServerSpec
	}{
		{"legacy server", func(t *testing.T) *fakeServer { return newFakeServer(t, "echo") }, ServerSpec{}},
		{"modern-only server", func(t *testing.T) *fakeServer {
			srv := newFakeServer(t, "echo")
			srv.discover = func(_ int, id json.RawMessage) []byte { return discoverResult(id, protocol.ModernVersion) }
			return srv
		}, ServerSpec{}},
		{"pinned modern", func(t *testing.T) *fakeServer { return modernFake(t, "echo") }, ServerSpec{ProtocolVersion: protocol.ModernVersion}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := tc.srv(t)
				rt := twinRuntime(t, srv, tc.spec, make(chan bool, 1))
				if err := legacyCall(rt, true); err != nil {
					t.Fatalf("legacy call: %v", err)
				}
				synctest.Wait()
				if srv.dials() != 1 {
					t.Errorf("%d dials, want 1: no legacy incarnation", srv.dials())
				}
			})
		})
	}
}

func TestLegacyIncarnationRequestsAreMarked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := modernFake(t, "echo")
		got := make(chan bool, 1)
		rt := twinRuntime(t, srv, ServerSpec{}, got)
		primary := <-srv.dialed
		if err := legacyCall(rt, true); err != nil {
			t.Fatalf("legacy call: %v", err)
		}
		twin := <-srv.dialed
		twin.write([]byte(`{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`))
		if legacy := <-got; !legacy {
			t.Error("the legacy incarnation's roots/list is not marked Legacy")
		}
		primary.write([]byte(`{"jsonrpc":"2.0","id":"r2","method":"roots/list"}`))
		if legacy := <-got; legacy {
			t.Error("the server's own roots/list is marked Legacy")
		}
	})
}

func TestFailedLegacyIncarnationFallsBackToTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := modernFake(t, "echo")
		srv.initVersion = "1999-01-01" // its legacy revision is one we do not speak: it fails for good
		rt := twinRuntime(t, srv, ServerSpec{}, make(chan bool, 1))
		primary := <-srv.dialed
		if err := legacyCall(rt, true); !errors.Is(err, protocol.ErrUnsupportedVersion) {
			t.Fatalf("a call to a legacy incarnation that cannot start: %v, want its failure", err)
		}
		synctest.Wait()
		if err := legacyCall(rt, true); err != nil {
			t.Fatalf("a legacy client's call once its incarnation failed: %v", err)
		}
		if n := len(primary.sent(protocol.MethodToolsCall)); n != 1 {
			t.Errorf("the server got %d calls, want the legacy client's", n)
		}
		if srv.dials() != 2 {
			t.Errorf("%d dials, want 2: no new incarnation right after one failed", srv.dials())
		}
		time.Sleep(DefaultLegacyIdle + time.Second)
		_ = legacyCall(rt, true)
		if srv.dials() != 3 {
			t.Errorf("%d dials, want 3: a new attempt once LegacyIdle has passed", srv.dials())
		}
	})
}
