package sidecar_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// served is a sidecar run by Serve on a real loopback listener, in front
// of a real Host with no servers.
type served struct {
	t    *testing.T
	addr string // host:port
	url  string
}

// serveAPI runs Serve until the test ends, then checks that it returns.
// The servers are ready when it returns.
func serveAPI(t *testing.T, sopts sidecar.Options, servers ...mcpvisor.ServerConfig) *served {
	t.Helper()
	data := t.TempDir()
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: data, Inbox: true,
		Config: &mcpvisor.Config{Servers: servers}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if err := h.WaitReady(wctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if sopts.Token == "" {
		sopts.Token = testToken
	}
	sopts.DataDir = data
	sopts.Logger = slog.New(slog.DiscardHandler)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sidecar.New(h, sopts).Serve(ctx, ln) }()
	t.Cleanup(func() { // before h.Close
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve returned %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("Serve did not return after its context ended")
		}
	})
	scheme := "http"
	if sopts.TLSConfig != nil {
		scheme = "https"
	}
	return &served{t: t, addr: ln.Addr().String(), url: scheme + "://" + ln.Addr().String()}
}

// rawConn is one client connection spoken to by hand, so the test decides
// when a connection opens, what it sends and that it stays open.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

func (s *served) dial() *rawConn {
	s.t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	// A guard only: no step of these tests waits on a deadline to pass.
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{c: c, br: bufio.NewReader(c)}
}

// get sends "GET path" (keep-alive) with the headers given as "Name: value"
// lines, and reads the answer; err when the connection is gone.
func (rc *rawConn) get(path string, headers ...string) (*http.Response, []byte, error) {
	req := "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(rc.c, req+"\r\n"); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// TestIdleConnectionsCannotLockOutTheToken is issue 22's finding 4 in
// small: clients without the token hold idle keep-alive connections
// after GET /healthz. Per address, only MaxUnauthConnsPerAddr of them are
// held (the longest idle is closed for a newcomer), and at MaxConns a
// caller with the token still gets in, since a waiting unauthenticated
// connection is closed to make room.
func TestIdleConnectionsCannotLockOutTheToken(t *testing.T) {
	s := serveAPI(t, sidecar.Options{Limits: sidecar.Limits{MaxConns: 6, MaxUnauthConnsPerAddr: 3}})

	var idle []*rawConn
	for i := range 10 {
		rc := s.dial()
		resp, _, err := rc.get("/healthz")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz on connection %d: %v %v", i, resp, err)
		}
		idle = append(idle, rc)
	}
	// Each newcomer past the third closed the longest idle: the last
	// three are held, the others were closed.
	for i, rc := range idle {
		resp, _, err := rc.get("/healthz")
		if held := i >= len(idle)-3; held != (err == nil) {
			t.Errorf("connection %d: held %v, want %v (%v %v)", i, err == nil, held, resp, err)
		}
	}

	// Three connections that send nothing fill MaxConns with the three
	// held; a caller with the token still gets an answer.
	for range 3 {
		s.dial()
	}
	newTokenCaller(t, s).call("with the token, at MaxConns")
}

// tokenCaller calls GET /v1/servers with the token through one client,
// noting the connection each call used.
type tokenCaller struct {
	t      *testing.T
	s      *served
	client *http.Client
	conns  []string // the client's local address of each call's connection
}

func newTokenCaller(t *testing.T, s *served) *tokenCaller {
	c := &tokenCaller{t: t, s: s, client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(c.client.CloseIdleConnections)
	return c
}

func (c *tokenCaller) call(what string) {
	c.t.Helper()
	req, _ := http.NewRequest("GET", c.s.url+"/v1/servers", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { c.conns = append(c.conns, info.Conn.LocalAddr().String()) },
	}))
	resp, err := c.client.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("%s: %d %s", what, resp.StatusCode, body)
	}
}

// At MaxConns, newcomers without the token make room by closing waiting
// connections without it, oldest first, never the idle keep-alive
// connection of a caller with the token, however long it has waited.
func TestAuthenticatedConnectionIsNeverClosedToMakeRoom(t *testing.T) {
	s := serveAPI(t, sidecar.Options{Limits: sidecar.Limits{MaxConns: 3, MaxUnauthConnsPerAddr: -1}})
	caller := newTokenCaller(t, s)
	caller.call("first call")
	for i := range 10 {
		rc := s.dial()
		if resp, _, err := rc.get("/healthz"); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz on newcomer %d: %v %v", i, resp, err)
		}
	}
	caller.call("second call")
	if len(caller.conns) != 2 || caller.conns[0] != caller.conns[1] {
		t.Errorf("the caller with the token used connections %v: its idle one was closed", caller.conns)
	}
}

// At MaxConns with every connection busy (two event streams with the
// token), a newcomer is answered 503 with Connection: close, in JSON; once
// a stream ends, newcomers are served again.
func TestConnectionCapAnswers503(t *testing.T) {
	s := serveAPI(t, sidecar.Options{Limits: sidecar.Limits{MaxConns: 2}})
	var streams []*http.Response
	for range 2 {
		req, _ := http.NewRequest("GET", s.url+"/v1/events/stream", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req) // a connection each
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %d", resp.StatusCode)
		}
		defer resp.Body.Close()
		streams = append(streams, resp)
	}

	rc := s.dial()
	resp, body, err := rc.get("/healthz")
	rc.c.Close()
	if err != nil {
		t.Fatalf("over the cap: %v, want a 503", err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), `"code":"unavailable"`) || !strings.Contains(string(body), "too many connections") {
		t.Fatalf("over the cap: %d close=%v %v %s", resp.StatusCode, resp.Close, resp.Header, body)
	}

	streams[0].Body.Close()
	eventually(t, "a newcomer to be served once a stream has ended", func() bool {
		rc := s.dial()
		defer rc.c.Close()
		resp, _, err := rc.get("/healthz")
		return err == nil && resp.StatusCode == http.StatusOK
	})
}

// A client that sends half a header, or half a body, or nothing after a
// request, is cut off by ReadHeaderTimeout, ReadTimeout and IdleTimeout
// (issue 22, finding 4: there were none). Each read below returns when
// the server closes the connection or answers; the deadline is a guard.
func TestServeTimeouts(t *testing.T) {
	const short = 200 * time.Millisecond
	s := serveAPI(t, sidecar.Options{Limits: sidecar.Limits{ReadHeaderTimeout: short, ReadTimeout: short, IdleTimeout: short}},
		mcptest("t"))

	t.Run("header", func(t *testing.T) {
		rc := s.dial()
		io.WriteString(rc.c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n") // no blank line
		if _, err := rc.br.ReadByte(); err == nil {
			// net/http may answer 408 before closing; then the close.
			io.Copy(io.Discard, rc.br)
		} else if isTimeout(err) {
			t.Fatalf("the connection outlived the guard: %v", err)
		}
	})
	t.Run("body", func(t *testing.T) {
		rc := s.dial()
		io.WriteString(rc.c, "POST /v1/call HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+testToken+
			"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"tool\":") // 92 bytes short
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil {
			if isTimeout(err) {
				t.Fatalf("a stalled body was waited for: %v", err)
			}
			return // closed without an answer: cut off too
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "reading the request body") {
			t.Fatalf("a stalled body: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("a response longer than them", func(t *testing.T) {
		// A streamed call of 6 × 100 ms: the timeouts bound requests, not
		// answers.
		body := `{"tool":"mcp__t__progress","arguments":{"steps":6,"delay_ms":100}}`
		req, _ := http.NewRequest("POST", s.url+"/v1/call", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		evs := readSSE(t, resp.Body, "result", "error")
		if len(evs) != 7 || evs[6].name != "result" {
			t.Fatalf("a long streamed call: %+v", evs)
		}
	})
	t.Run("idle", func(t *testing.T) {
		rc := s.dial()
		if resp, _, err := rc.get("/healthz"); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz: %v %v", resp, err)
		}
		if _, err := rc.br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Fatalf("an idle connection: read %v, want EOF once IdleTimeout closes it", err)
		}
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Serve over TLS: the API answers, and a client over the cap is refused
// with a 503 in TLS, not cut off.
func TestServeTLS(t *testing.T) {
	cert := httptest.NewTLSServer(http.NotFoundHandler()) // for its certificate
	cert.Close()
	pool := x509.NewCertPool()
	pool.AddCert(cert.Certificate())
	tlsCfg := &tls.Config{Certificates: cert.TLS.Certificates}
	s := serveAPI(t, sidecar.Options{TLSConfig: tlsCfg, Limits: sidecar.Limits{MaxConns: 1}})
	client := func() *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	}

	req, _ := http.NewRequest("GET", s.url+"/v1/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	stream, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK || stream.TLS == nil {
		t.Fatalf("stream over TLS: %d %v", stream.StatusCode, stream.TLS)
	}

	resp, err := client().Get(s.url + "/healthz")
	if err != nil {
		t.Fatalf("over the cap: %v, want a 503", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("over the cap: %d, want 503", resp.StatusCode)
	}
}
