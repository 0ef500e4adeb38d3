package gateway_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/gateway"
)

// fakeClock is the gateway's idle clock, moved by the test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestIdleSessionExpires: a session with nothing in flight for longer than
// the idle timeout ends (404, grants gone); one holding a GET stream or
// used recently does not.
func TestIdleSessionExpires(t *testing.T) {
	const idle = time.Hour // the sweep's own timer never fires in the test
	f := newFixture(t, gateway.Options{IdleTimeout: idle})
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	f.g.SetClock(clock.Now)
	c := newHTTP(t, f)

	stale, streaming, recent := c, &httpClient{t: t, url: c.url}, &httpClient{t: t, url: c.url}
	for _, cl := range []*httpClient{stale, streaming, recent} {
		cl.initialize()
	}
	if r := stale.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`); r.Error != nil {
		t.Fatalf("activate: %+v", r.Error)
	}
	stream := streaming.do(http.MethodGet, "", map[string]string{"Accept": "text/event-stream"})
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", stream.StatusCode)
	}
	holders := func() int {
		t.Helper()
		scopes, err := f.h.Journal().WhoHadAccess("mcp__a__echo", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return len(scopes)
	}
	if n := holders(); n != 1 {
		t.Fatalf("%d sessions hold a's tools, want 1", n)
	}

	clock.Add(idle - time.Minute)
	recent.rpc(2, "ping", "")
	clock.Add(2 * time.Minute)
	f.g.SweepIdle()

	if resp := stale.do(http.MethodPost, request(3, "ping", ""), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the idle session answered %d, want 404", resp.StatusCode)
	}
	for name, cl := range map[string]*httpClient{"streaming": streaming, "recently used": recent} {
		if r := cl.rpc(3, "ping", ""); r.Error != nil {
			t.Errorf("the %s session: %+v", name, r.Error)
		}
	}
	if n := holders(); n != 0 {
		t.Errorf("%d sessions hold a's tools after the expiry, want none: its grants should be gone", n)
	}
}

// TestSessionCap: at the cap a new session ends the least recently used
// idle one; when every session is busy it is refused with 503.
func TestSessionCap(t *testing.T) {
	f := newFixture(t, gateway.Options{MaxSessions: 2, IdleTimeout: -1})
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	f.g.SetClock(clock.Now)
	c := newHTTP(t, f)
	first, second := c, &httpClient{t: t, url: c.url}
	first.initialize()
	clock.Add(time.Second)
	second.initialize()
	clock.Add(time.Second)
	first.rpc(2, "ping", "") // first is now the more recently used

	third := &httpClient{t: t, url: c.url}
	third.initialize()
	if resp := second.do(http.MethodPost, request(3, "ping", ""), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the least recently used session answered %d, want 404 (ended to make room)", resp.StatusCode)
	}
	for _, cl := range []*httpClient{first, third} {
		if r := cl.rpc(4, "ping", ""); r.Error != nil {
			t.Errorf("a kept session: %+v", r.Error)
		}
	}

	// Both held busy by a GET stream: no room.
	for _, cl := range []*httpClient{first, third} {
		if resp := cl.do(http.MethodGet, "", map[string]string{"Accept": "text/event-stream"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %d", resp.StatusCode)
		}
	}
	resp := (&httpClient{t: t, url: c.url}).do(http.MethodPost, request(1, "initialize", initParams), nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("initialize over a busy cap: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if slices.Contains([]string{first.sid, third.sid}, "") {
		t.Fatal("lost a session id")
	}
}
