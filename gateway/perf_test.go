package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpvisor/mcpvisor/gateway"
)

// writeCount counts what a loopback server writes: Write calls on its
// connections (each one a write syscall) and flushes of its responses.
type writeCount struct{ writes, flushes atomic.Int64 }

type countingConn struct {
	net.Conn
	n *writeCount
}

func (c countingConn) Write(p []byte) (int, error) {
	c.n.writes.Add(1)
	return c.Conn.Write(p)
}

type countingListener struct {
	net.Listener
	n *writeCount
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{conn, l.n}, nil
}

// flushCounter is a ResponseWriter that counts flushes (what
// http.ResponseController.Flush reaches first).
type flushCounter struct {
	http.ResponseWriter
	n *writeCount
}

func (w flushCounter) Flush() {
	w.n.flushes.Add(1)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w flushCounter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// perfClient is one legacy session over a loopback server that counts its
// writes, on one kept-alive connection, accepting JSON and SSE as the
// official clients do.
type perfClient struct {
	tb     testing.TB
	url    string
	sid    string
	client *http.Client
	n      *writeCount
	id     int
}

func newPerfClient(tb testing.TB, f *fixture) *perfClient {
	tb.Helper()
	n := &writeCount{}
	h := f.g.Handler()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(flushCounter{w, n}, r)
	}))
	srv.Listener = countingListener{srv.Listener, n}
	srv.Start()
	tb.Cleanup(func() {
		// The gateway first: it ends the calls the server's Close waits for.
		if err := f.g.Close(); err != nil {
			tb.Errorf("gateway Close: %v", err)
		}
		srv.Close()
	})
	c := &perfClient{tb: tb, url: srv.URL + "/mcp", client: srv.Client(), n: n, id: 1}
	ct, body, sid := c.post(request(1, "initialize", initParams))
	if ct != "application/json" || sid == "" {
		tb.Fatalf("initialize: Content-Type %q, session %q: %s", ct, sid, body)
	}
	c.sid = sid
	c.post(notification("notifications/initialized", ""))
	if _, body, _ := c.post(request(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)); !bytes.Contains(body, []byte(`"result"`)) {
		tb.Fatalf("activate_tools: %s", body)
	}
	c.id = 2
	return c
}

// post sends one message and reads the whole answer.
func (c *perfClient) post(body string) (contentType string, answer []byte, sid string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.tb.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err = io.ReadAll(resp.Body)
	if err != nil {
		c.tb.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		c.tb.Fatalf("status %d: %s", resp.StatusCode, answer)
	}
	return resp.Header.Get("Content-Type"), answer, resp.Header.Get("Mcp-Session-Id")
}

// call makes one tools/call of params and returns the answer's type and
// body, which must hold the result.
func (c *perfClient) call(params string) (contentType string, answer []byte) {
	c.id++
	ct, body, _ := c.post(request(c.id, "tools/call", params))
	if !bytes.Contains(body, []byte(`"id":`+strconv.Itoa(c.id)+`,"result"`)) {
		c.tb.Fatalf("tools/call %s: no result in %s", params, body)
	}
	return ct, body
}

const (
	echoCall     = `{"name":"mcp__a__echo","arguments":{"x":1}}`
	progressCall = `{"name":"mcp__a__progress","arguments":{"steps":1,"delay_ms":0},"_meta":{"progressToken":"p"}}`
)

// A legacy client's call (accepting JSON and SSE) is a resumable stream
// from the start: the headers and the priming event in one flush, then
// each frame before the response flushed as it comes, and the response
// with the end of the stream, in one write; its ids are of one stream.
func TestHTTPCallWrites(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c := newPerfClient(t, f)

	c.call(echoCall) // warm the connection and the server
	const calls = 20
	w0, f0 := c.n.writes.Load(), c.n.flushes.Load()
	for range calls {
		ct, body := c.call(echoCall)
		if ct != "text/event-stream" {
			t.Fatalf("a plain call was answered as %q: %s", ct, body)
		}
	}
	writes := float64(c.n.writes.Load()-w0) / calls
	flushes := float64(c.n.flushes.Load()-f0) / calls
	t.Logf("plain call: %.2f writes, %.2f flushes per call", writes, flushes)
	// The headers and the priming event at once, then the response with
	// the end of the stream.
	if flushes != 1 || writes > 2 {
		t.Fatalf("plain call: %.2f writes and %.2f flushes per call, want at most 2 writes and 1 flush", writes, flushes)
	}

	w0, f0 = c.n.writes.Load(), c.n.flushes.Load()
	ct, body := c.call(progressCall)
	writes, flushes = float64(c.n.writes.Load()-w0), float64(c.n.flushes.Load()-f0)
	t.Logf("call with one progress: %.0f writes, %.0f flushes", writes, flushes)
	if flushes != 2 || writes > 3 {
		t.Fatalf("call with one progress: %.0f writes and %.0f flushes, want at most 3 writes and 2 flushes", writes, flushes)
	}
	if ct != "text/event-stream" {
		t.Fatalf("a call with progress was answered as %q: %s", ct, body)
	}
	stream := regexp.MustCompile(`^id: (\d+)-0\nretry: \d+\ndata: \n\nid: (\d+)-1\nevent: message\ndata: \{[^\n]*"notifications/progress"[^\n]*\n\nid: (\d+)-2\nevent: message\ndata: \{[^\n]*"result"[^\n]*\n\n$`)
	m := stream.FindSubmatch(body)
	if m == nil || string(m[1]) != string(m[2]) || string(m[2]) != string(m[3]) {
		t.Fatalf("a call with progress was answered\n%s\nwant the priming event, the progress and the response, with ids of one stream", body)
	}
}

// benchCalls makes b.N calls of params in c's session, reporting the
// writes and flushes per call.
func benchCalls(b *testing.B, c *perfClient, params, want string) {
	c.tb = b
	w0, f0 := c.n.writes.Load(), c.n.flushes.Load()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if ct, _ := c.call(params); ct != want {
			b.Fatalf("answered as %q, want %q", ct, want)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(c.n.writes.Load()-w0)/float64(b.N), "writes/op")
	b.ReportMetric(float64(c.n.flushes.Load()-f0)/float64(b.N), "flushes/op")
}

// BenchmarkGatewayCall is a legacy client's tools/call over loopback
// (accepting JSON and SSE) in one session, new and after 20,000 calls:
// neither ns/op nor allocs/op may grow with the session's age.
func BenchmarkGatewayCall(b *testing.B) {
	f := newFixture(b, gateway.Options{})
	// Warm the host, the server and the loopback path in a session of
	// its own, so age 0 measures a new session, not a cold process.
	warm := newPerfClient(b, f)
	for range 500 {
		warm.call(echoCall)
	}
	for _, kind := range []struct{ name, params, want string }{
		{"plain", echoCall, "text/event-stream"},
		{"progress", progressCall, "text/event-stream"},
	} {
		c := newPerfClient(b, f)
		b.Run(kind.name+"/age=0", func(b *testing.B) { benchCalls(b, c, kind.params, kind.want) })
		for range 20_000 {
			c.call(kind.params)
		}
		b.Run(kind.name+"/age=20000", func(b *testing.B) { benchCalls(b, c, kind.params, kind.want) })
	}
}

// A session keeps its last 16 finished streams for a client that resumes
// late, and forgets older ones: a resumption of those is 404.
func TestHTTPResumeRetention(t *testing.T) {
	f := newFixture(t, gateway.Options{})
	c := newPerfClient(t, f)
	lastID := regexp.MustCompile(`(?s).*\nid: (\d+-\d+)\n`)
	var last []string // each stream's last event id, oldest first
	for range 18 {
		_, body := c.call(progressCall)
		m := lastID.FindSubmatch(body)
		if m == nil {
			t.Fatalf("no event id in %s", body)
		}
		last = append(last, string(m[1]))
	}
	for i, id := range last {
		req, _ := http.NewRequest(http.MethodGet, c.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Last-Event-ID", id)
		resp, err := c.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := http.StatusOK
		if i < len(last)-16 {
			want = http.StatusNotFound
		}
		if resp.StatusCode != want {
			t.Errorf("resuming stream %d of %d after its last event %s: status %d, want %d", i+1, len(last), id, resp.StatusCode, want)
		}
		if want == http.StatusOK && len(body) != 0 {
			t.Errorf("resuming the finished stream %d after its last event sent %q, want nothing", i+1, body)
		}
	}
}
