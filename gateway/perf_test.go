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

const progressCall = `{"name":"mcp__a__progress","arguments":{"steps":1,"delay_ms":0},"_meta":{"progressToken":"p"}}`

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
