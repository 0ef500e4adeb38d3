package actors

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// discoverResult answers server/discover as a server speaking versions.
func discoverResult(id json.RawMessage, versions ...string) []byte {
	res, _ := json.Marshal(map[string]any{
		"resultType":        "complete",
		"supportedVersions": versions,
		"capabilities":      map[string]any{"tools": map[string]any{"listChanged": true}},
		"_meta":             map[string]any{protocol.MetaServerInfo: map[string]any{"name": "modern-fake", "version": "2"}},
	})
	return protocol.AppendResult(nil, id, res)
}

func modernFake(t *testing.T, tools ...string) *fakeServer {
	srv := newFakeServer(t, tools...)
	srv.discover = func(_ int, id json.RawMessage) []byte {
		return discoverResult(id, protocol.ModernVersion, "2025-11-25")
	}
	return srv
}

// metaVersion returns the protocol version in a request's _meta.
func metaVersion(t *testing.T, m protocol.Message) string {
	t.Helper()
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatalf("%s params: %v", m.Method, err)
	}
	for _, k := range []string{protocol.MetaClientCapabilities, protocol.MetaClientInfo} {
		if p.Meta[k] == nil {
			t.Errorf("%s: _meta has no %s: %s", m.Method, k, m.Params)
		}
	}
	var v string
	_ = json.Unmarshal(p.Meta[protocol.MetaProtocolVersion], &v)
	return v
}

func TestEraModernServerSkipsInitialize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, modernFake(t, "echo"), ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitReady: %v", err)
		}
		if _, err := h.call("echo", nil); err != nil {
			t.Fatalf("call: %v", err)
		}
		synctest.Wait()
		c := h.srv.last()
		want := []string{protocol.MethodServerDiscover, protocol.MethodToolsList, protocol.MethodSubscriptionsListen, protocol.MethodToolsCall}
		if diff := cmp.Diff(want, c.methods()); diff != "" {
			t.Errorf("modern handshake (-want +got):\n%s", diff)
		}
		for _, method := range want {
			for _, m := range c.sent(method) {
				if v := metaVersion(t, m); v != protocol.ModernVersion {
					t.Errorf("%s carries protocol version %q, want %q", method, v, protocol.ModernVersion)
				}
			}
		}
		st := h.status()
		if st.ProtocolVersion != protocol.ModernVersion || st.ServerInfo.Name != "modern-fake" {
			t.Errorf("status: protocol %q, server %q; want %s, modern-fake", st.ProtocolVersion, st.ServerInfo.Name, protocol.ModernVersion)
		}
	})
}

func TestEraSilentServerIsLegacy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		// A legacy server that ignores whatever precedes initialize.
		srv.discover = func(int, json.RawMessage) []byte { return nil }
		start := time.Now()
		h := startFake(t, srv, ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitReady: %v", err)
		}
		if waited := time.Since(start); waited != discoverTimeout {
			t.Errorf("ready after %s, want the discover timeout %s", waited, discoverTimeout)
		}
		if got := h.status().ProtocolVersion; got != protocol.ProtocolVersion {
			t.Errorf("protocol %q, want %q", got, protocol.ProtocolVersion)
		}
		if n := len(h.srv.last().sent(protocol.MethodInitialize)); n != 1 {
			t.Errorf("%d initialize, want 1", n)
		}
	})
}

// A modern server slow to give its first answer (npx fetching it) is not
// taken for legacy: initialize goes out beside the unanswered
// server/discover, the server refuses it as a modern-only server does,
// and server/discover's late answer decides.
func TestEraSlowModernServerIsModern(t *testing.T) {
	for _, tt := range []struct {
		name    string
		refuses bool // the server answers initialize, with an error, before server/discover
	}{{"refuses initialize first", true}, {"answers server/discover first", false}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(t, "echo")
				srv.discover = func(int, json.RawMessage) []byte { return nil } // answered below, late
				if tt.refuses {
					srv.initErr = func(int) *protocol.Error {
						return &protocol.Error{Code: protocol.CodeUnsupportedProtocolVersion, Message: "initialize is not supported"}
					}
				} else {
					srv.initSilent = true // answered below, after server/discover
				}
				const late = 10 * time.Second // past discoverTimeout, within the startup timeout
				h := startFake(t, srv, ServerSpec{})
				synctest.Wait()
				c := h.srv.last()
				probe := c.sent(protocol.MethodServerDiscover)
				if len(probe) != 1 {
					t.Fatalf("%d server/discover, want 1", len(probe))
				}
				time.Sleep(discoverTimeout)
				synctest.Wait()
				if n := len(c.sent(protocol.MethodInitialize)); n != 1 {
					t.Fatalf("%d initialize after %s without an answer, want 1 beside server/discover", n, discoverTimeout)
				}
				time.Sleep(late - discoverTimeout)
				c.write(discoverResult(probe[0].ID, protocol.ModernVersion))
				if !tt.refuses {
					// A dual-era server answers initialize too, after
					// server/discover: the answer is dropped.
					init := c.sent(protocol.MethodInitialize)[0]
					c.write(protocol.AppendResult(nil, init.ID, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"fake","version":"1"}}`)))
				}
				if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
					t.Fatalf("WaitReady: %v", err)
				}
				if got := h.status().ProtocolVersion; got != protocol.ModernVersion {
					t.Errorf("protocol %q, want %q: a slow modern server was taken for legacy", got, protocol.ModernVersion)
				}
				if _, err := h.call("echo", nil); err != nil {
					t.Errorf("call: %v", err)
				}
			})
		})
	}
}

func TestEraUnsupportedVersionIsRetriedNotFallenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		calls := 0
		srv.discover = func(_ int, id json.RawMessage) []byte {
			calls++
			if calls == 1 {
				data, _ := json.Marshal(protocol.UnsupportedVersionData{Supported: []string{protocol.ModernVersion}, Requested: "x"})
				return protocol.AppendError(nil, id, protocol.CodeUnsupportedProtocolVersion, "Unsupported protocol version", data)
			}
			return discoverResult(id, protocol.ModernVersion)
		}
		h := startFake(t, srv, ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitReady: %v", err)
		}
		c := h.srv.last()
		if n := len(c.sent(protocol.MethodServerDiscover)); n != 2 {
			t.Errorf("%d server/discover, want 2 (the second at the advertised version)", n)
		}
		if n := len(c.sent(protocol.MethodInitialize)); n != 0 {
			t.Errorf("a modern error fell back to initialize (%d sent)", n)
		}
	})
}

func TestEraDiscoverListingOnlyLegacyUsesInitialize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		srv.discover = func(_ int, id json.RawMessage) []byte { return discoverResult(id, "2025-06-18") }
		h := startFake(t, srv, ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitReady: %v", err)
		}
		if n := len(h.srv.last().sent(protocol.MethodInitialize)); n != 1 {
			t.Errorf("%d initialize, want 1", n)
		}
	})
}

func TestEraNoCommonVersionFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		srv.discover = func(_ int, id json.RawMessage) []byte {
			data, _ := json.Marshal(protocol.UnsupportedVersionData{Supported: []string{"2099-01-01"}})
			return protocol.AppendError(nil, id, protocol.CodeUnsupportedProtocolVersion, "Unsupported protocol version", data)
		}
		h := startFake(t, srv, ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err == nil {
			t.Fatal("WaitReady succeeded with no common protocol version")
		}
		st := h.status()
		if st.State != StateFailed || !strings.Contains(st.LastError, protocol.ErrUnsupportedVersion.Error()) {
			t.Errorf("state %s (%s), want failed for an unsupported version (it does not heal by restarting)", st.State, st.LastError)
		}
	})
}

func TestEraCatalogRefetchedWhenTTLEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := modernFake(t, "echo")
		ttl := int64(60_000)
		srv.ttlMs = &ttl
		h := startFake(t, srv, ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitReady: %v", err)
		}
		synctest.Wait()
		c := h.srv.last()
		if exp := h.status().CatalogExpires; !exp.Equal(time.Now().Add(time.Minute)) {
			t.Errorf("catalog expires %v, want in a minute (%v)", exp, time.Now().Add(time.Minute))
		}
		for range 5 { // calls do not refetch the catalog
			if _, err := h.call("echo", nil); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if n := len(c.sent(protocol.MethodToolsList)); n != 1 {
			t.Fatalf("%d tools/list before the ttl ended, want 1", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := len(c.sent(protocol.MethodToolsList)); n != 2 {
			t.Errorf("%d tools/list after the ttl ended, want 2", n)
		}
	})
}

func TestEraResourceSubscriptionsRideTheListenStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		srv.discover = func(_ int, id json.RawMessage) []byte {
			res, _ := json.Marshal(map[string]any{
				"supportedVersions": []string{protocol.ModernVersion},
				"capabilities":      map[string]any{"tools": map[string]any{"listChanged": true}, "resources": map[string]any{"subscribe": true}},
			})
			return protocol.AppendResult(nil, id, res)
		}
		h := startFake(t, srv, ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitReady: %v", err)
		}
		if err := h.rt.SubscribeResource(context.Background(), "fake", "file:///a", true); err != nil {
			t.Fatalf("SubscribeResource: %v", err)
		}
		synctest.Wait()
		c := h.srv.last()
		listens := c.sent(protocol.MethodSubscriptionsListen)
		if len(listens) != 2 {
			t.Fatalf("%d subscriptions/listen, want 2 (the first replaced by one with the resource)", len(listens))
		}
		var p struct {
			Notifications protocol.SubscriptionFilter `json:"notifications"`
		}
		if err := json.Unmarshal(listens[1].Params, &p); err != nil {
			t.Fatal(err)
		}
		if want := []string{"file:///a"}; !cmp.Equal(p.Notifications.ResourceSubscriptions, want) || !p.Notifications.ToolsListChanged {
			t.Errorf("second listen asks for %+v, want tools list changes and %v", p.Notifications, want)
		}
		first, _ := listens[0].IntID()
		var cancelled bool
		for _, m := range c.sent(protocol.MethodCancelled) {
			var cp protocol.CancelledParams
			_ = json.Unmarshal(m.Params, &cp)
			cancelled = cancelled || string(cp.RequestID) == strconv.FormatInt(first, 10)
		}
		if !cancelled {
			t.Error("the first listen was not cancelled")
		}
		// A legacy server is asked with resources/subscribe instead.
		legacy := startFakeNamed(t, newFakeServer(t, "echo"), "old")
		if err := legacy.rt.WaitReady(context.Background(), "old"); err != nil {
			t.Fatal(err)
		}
		if err := legacy.rt.SubscribeResource(context.Background(), "old", "file:///a", true); !errors.Is(err, ErrLegacySubscribe) {
			t.Errorf("legacy SubscribeResource: %v, want ErrLegacySubscribe", err)
		}
	})
}

// startFakeNamed is startFake under another server name.
func startFakeNamed(t *testing.T, srv *fakeServer, name string) *harness {
	t.Helper()
	h := &harness{t: t, srv: srv, ev: &eventLog{}, t0: time.Now()}
	h.rt = New(Options{dial: srv.dial})
	t.Cleanup(func() {
		if err := h.rt.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := h.rt.Register(context.Background(), ServerSpec{Name: name, Command: "fake-server", Enabled: true}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return h
}

func TestEraListenReopensAfterTheServerEndsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, modernFake(t, "echo"), ServerSpec{})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitReady: %v", err)
		}
		synctest.Wait()
		c := h.srv.last()
		listens := c.sent(protocol.MethodSubscriptionsListen)
		if len(listens) != 1 {
			t.Fatalf("%d subscriptions/listen, want 1", len(listens))
		}
		lists := len(c.sent(protocol.MethodToolsList))
		// The server ends the subscription gracefully (a result for it).
		c.result(listens[0].ID, map[string]any{"resultType": "complete"})
		synctest.Wait()
		if n := len(c.sent(protocol.MethodToolsList)); n != lists+1 {
			t.Errorf("%d tools/list after the stream ended, want %d: changes missed meanwhile are caught", n, lists+1)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := len(c.sent(protocol.MethodSubscriptionsListen)); n != 2 {
			t.Fatalf("%d subscriptions/listen a second later, want 2", n)
		}
		// Refused for good: not asked again.
		second := c.sent(protocol.MethodSubscriptionsListen)[1]
		c.write(protocol.AppendError(nil, second.ID, protocol.CodeMethodNotFound, "method not found", nil))
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(c.sent(protocol.MethodSubscriptionsListen)); n != 2 {
			t.Errorf("%d subscriptions/listen after a refusal, want still 2", n)
		}
		if st := h.status(); st.State != StateReady {
			t.Errorf("state %s after the listen ended, want ready", st.State)
		}
	})
}

// initializeVersion returns the protocolVersion an initialize request asks for.
func initializeVersion(t *testing.T, m protocol.Message) string {
	t.Helper()
	var p protocol.InitializeParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatalf("initialize params: %v", err)
	}
	return p.ProtocolVersion
}

// A legacy pin skips the probe, even for a server that would answer it
// as modern, and asks for the pinned revision in initialize.
func TestEraPinnedLegacySkipsDiscover(t *testing.T) {
	for _, pin := range []string{"2025-11-25", "2025-06-18", "2024-11-05"} {
		t.Run(pin, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startFake(t, modernFake(t, "echo"), ServerSpec{ProtocolVersion: pin})
				if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
					t.Fatalf("WaitReady: %v", err)
				}
				if _, err := h.call("echo", nil); err != nil {
					t.Fatalf("call: %v", err)
				}
				synctest.Wait()
				c := h.srv.last()
				want := []string{protocol.MethodInitialize, protocol.MethodInitialized, protocol.MethodToolsList, protocol.MethodToolsCall}
				if diff := cmp.Diff(want, c.methods()); diff != "" {
					t.Errorf("pinned legacy handshake (-want +got):\n%s", diff)
				}
				if v := initializeVersion(t, c.sent(protocol.MethodInitialize)[0]); v != pin {
					t.Errorf("initialize asks for %q, want the pinned %q", v, pin)
				}
				if st := h.status(); st.ProtocolVersion != pin {
					t.Errorf("status protocol %q, want %q", st.ProtocolVersion, pin)
				}
			})
		})
	}
}

// A server that answers initialize with another revision than the pinned
// one does not speak it: it fails, for good.
func TestEraPinnedLegacyAnsweredWithAnotherVersionFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, "echo")
		srv.initVersion = "2025-11-25"
		h := startFake(t, srv, ServerSpec{ProtocolVersion: "2025-03-26"})
		if err := h.rt.WaitReady(context.Background(), "fake"); err == nil {
			t.Fatal("WaitReady succeeded at a revision other than the pinned one")
		}
		st := h.status()
		want := "the server answered protocol 2025-11-25 to the pinned protocolVersion 2025-03-26"
		if st.State != StateFailed || !strings.Contains(st.LastError, want) {
			t.Errorf("state %s (%s), want failed saying %q", st.State, st.LastError, want)
		}
		if h.srv.dials() != 1 {
			t.Errorf("%d dials, want 1: a pin that does not match is not retried", h.srv.dials())
		}
	})
}

// A modern pin probes with the pinned revision and speaks it.
func TestEraPinnedModern(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, modernFake(t, "echo"), ServerSpec{ProtocolVersion: protocol.ModernVersion})
		if err := h.rt.WaitReady(context.Background(), "fake"); err != nil {
			t.Fatalf("WaitReady: %v", err)
		}
		synctest.Wait()
		c := h.srv.last()
		if n := len(c.sent(protocol.MethodInitialize)); n != 0 {
			t.Errorf("%d initialize, want none", n)
		}
		discover := c.sent(protocol.MethodServerDiscover)
		if len(discover) != 1 || metaVersion(t, discover[0]) != protocol.ModernVersion {
			t.Fatalf("server/discover sent %d times; want once at %s", len(discover), protocol.ModernVersion)
		}
		if st := h.status(); st.ProtocolVersion != protocol.ModernVersion {
			t.Errorf("status protocol %q, want %q", st.ProtocolVersion, protocol.ModernVersion)
		}
	})
}

// A modern pin never falls back to initialize: a legacy server's refusal,
// a server that lists only legacy revisions, one that asks for another
// revision, and a silent one all fail, saying why.
func TestEraPinnedModernHasNoFallback(t *testing.T) {
	tests := []struct {
		name      string
		discover  func(int, json.RawMessage) []byte
		state     State
		lastError string
	}{
		{"method not found", nil, StateFailed,
			"server/discover: code -32601: method not found (protocolVersion 2026-07-28 is pinned, so there is no fallback to initialize)"},
		{"only legacy listed", func(_ int, id json.RawMessage) []byte { return discoverResult(id, "2025-11-25") }, StateFailed,
			"server/discover: unsupported protocol version: the server speaks [2025-11-25], not the pinned protocolVersion 2026-07-28"},
		{"unsupported version", func(_ int, id json.RawMessage) []byte {
			data, _ := json.Marshal(protocol.UnsupportedVersionData{Supported: []string{"2099-01-01"}})
			return protocol.AppendError(nil, id, protocol.CodeUnsupportedProtocolVersion, "Unsupported protocol version", data)
		}, StateFailed, "server/discover: unsupported protocol version: the server speaks [2099-01-01], not the pinned protocolVersion 2026-07-28"},
		{"silent", func(int, json.RawMessage) []byte { return nil }, StateBackoff,
			"startup timeout: no answer to server/discover within 10s (protocolVersion 2026-07-28 is pinned, so there is no fallback to initialize)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(t, "echo")
				srv.discover = tt.discover
				h := startFake(t, srv, ServerSpec{ProtocolVersion: protocol.ModernVersion, StartupTimeout: 10 * time.Second})
				ctx, cancel := context.WithTimeout(context.Background(), 11*time.Second)
				defer cancel()
				for {
					ch := h.rt.StatusChanged()
					if st := h.status(); st.State == tt.state {
						if st.LastError != tt.lastError {
							t.Errorf("last error %q, want %q", st.LastError, tt.lastError)
						}
						break
					}
					select {
					case <-ch:
					case <-ctx.Done():
						t.Fatalf("state %s (%s), want %s", h.status().State, h.status().LastError, tt.state)
					}
				}
				if n := len(h.srv.last().sent(protocol.MethodInitialize)); n != 0 {
					t.Errorf("%d initialize sent, want none", n)
				}
			})
		})
	}
}

func TestAcknowledges(t *testing.T) {
	for _, tc := range []struct {
		params string
		want   bool
	}{
		{`{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}`, true},
		{`{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":"7"}}`, true},
		{`{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":6}}`, false}, // the listen it replaced
		{`{"notifications":{}}`, true},
		{``, true},
	} {
		if got := acknowledges(json.RawMessage(tc.params), 7); got != tc.want {
			t.Errorf("acknowledges(%s, 7) = %v, want %v", tc.params, got, tc.want)
		}
	}
}
