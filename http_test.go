package mcpvisor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// mcpHTTP is a Streamable HTTP MCP server for the tests, written from the
// spec, with switches for the behaviours the client must handle.
type mcpHTTP struct {
	sse        bool          // reply to requests with an SSE stream
	askFirst   bool          // stream a ping request before the response and wait for its answer
	wrongID    bool          // answer tools/call with another id
	closeEarly time.Duration // close the stream after the priming event (retry: this); serve the response on GET
	getStatus  int           // answer to a GET without a resumable stream (default 405)
	legacy     bool          // speak only the 2024-11-05 HTTP+SSE transport
	oversize   int           // pad tools/call results to this many bytes
	hang       bool          // never answer tools/call
	expire     bool          // forget every session after the first tools/call

	mu          sync.Mutex
	sessions    map[string]bool
	nextSession int
	inits       int
	gets        int
	deletes     int
	lastEventID string
	resumeAt    time.Time
	closedAt    time.Time
	headers     []http.Header // of every POST, in order
	answers     []string      // responses the client posted to our requests
	pending     map[string][]byte
	legacyOut   chan []byte
	answered    chan struct{}
	cancelled   chan string // requestIds of notifications/cancelled
}

// newMCPHTTP starts m; it is closed after any host the test opens later
// (cleanups run last-in first-out).
func newMCPHTTP(t *testing.T, m *mcpHTTP) *httptest.Server {
	m.sessions = map[string]bool{}
	m.pending = map[string][]byte{}
	m.legacyOut = make(chan []byte, 16)
	m.answered = make(chan struct{}, 16)
	m.cancelled = make(chan string, 64)
	if m.getStatus == 0 {
		m.getStatus = http.StatusMethodNotAllowed
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return srv
}

type rpc struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

func (m *mcpHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.legacy {
		m.serveLegacy(w, r)
		return
	}
	switch r.Method {
	case http.MethodDelete:
		m.mu.Lock()
		m.deletes++
		m.mu.Unlock()
		return
	case http.MethodGet:
		m.serveGet(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg rpc
	if json.Unmarshal(body, &msg) != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.headers = append(m.headers, r.Header.Clone())
	known := m.sessions[r.Header.Get("Mcp-Session-Id")]
	m.mu.Unlock()
	if msg.Method != "initialize" && !known {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	if msg.Method == "" || len(msg.ID) == 0 { // a notification or a response to us
		if msg.Method == "notifications/cancelled" {
			var p struct{ RequestID json.RawMessage }
			json.Unmarshal(msg.Params, &p)
			m.cancelled <- string(p.RequestID)
		}
		if msg.Method == "" {
			m.mu.Lock()
			m.answers = append(m.answers, string(body))
			m.mu.Unlock()
			m.answered <- struct{}{}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result, id := m.handle(&msg, w)
	if result == nil {
		return
	}
	if m.hang && msg.Method == "tools/call" {
		<-r.Context().Done()
		return
	}
	resp := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
	if !m.sse || msg.Method != "tools/call" {
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	retry := ""
	if m.closeEarly > 0 {
		retry = fmt.Sprintf("retry: %d\n", m.closeEarly.Milliseconds())
	}
	fmt.Fprintf(w, "id: ev-1\n%sdata:\n\n", retry) // the priming event
	fl.Flush()
	if m.askFirst {
		fmt.Fprintf(w, "id: ev-2\ndata: %s\n\n", `{"jsonrpc":"2.0","id":"srv-1","method":"ping"}`)
		fl.Flush()
		select {
		case <-m.answered:
		case <-time.After(10 * time.Second):
			return
		}
	}
	if m.closeEarly > 0 {
		m.mu.Lock()
		m.pending["ev-1"] = resp
		m.closedAt = time.Now()
		m.mu.Unlock()
		return // the stream closes before the response
	}
	fmt.Fprintf(w, "id: ev-3\ndata: %s\n\n", resp)
	fl.Flush()
}

// handle answers a request; it returns the result and the id to answer with.
func (m *mcpHTTP) handle(msg *rpc, w http.ResponseWriter) (json.RawMessage, string) {
	id := string(msg.ID)
	switch msg.Method {
	case "initialize":
		m.mu.Lock()
		m.inits++
		m.nextSession++
		sid := fmt.Sprintf("session-%d", m.nextSession)
		m.sessions[sid] = true
		m.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
		return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"http-test","version":"1"}}`), id
	case "tools/list":
		return json.RawMessage(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`), id
	case "tools/call":
		var p struct{ Arguments json.RawMessage }
		json.Unmarshal(msg.Params, &p)
		text := string(p.Arguments)
		if m.oversize > 0 {
			text += strings.Repeat("x", m.oversize)
		}
		res, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
		m.mu.Lock()
		if m.expire {
			m.sessions = map[string]bool{}
		}
		m.mu.Unlock()
		if m.wrongID {
			id = "999999"
		}
		return res, id
	}
	http.Error(w, "no such method", http.StatusBadRequest)
	return nil, ""
}

func (m *mcpHTTP) serveGet(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.gets++
	last := r.Header.Get("Last-Event-ID")
	resp, ok := m.pending[last]
	if ok {
		delete(m.pending, last)
		m.lastEventID = last
		m.resumeAt = time.Now()
	}
	m.mu.Unlock()
	if !ok {
		w.WriteHeader(m.getStatus)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "id: ev-4\ndata: %s\n\n", resp)
}

// serveLegacy speaks the 2024-11-05 transport: POST /mcp is refused, GET
// opens the stream whose first event names the endpoint for POSTs.
func (m *mcpHTTP) serveLegacy(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: endpoint\ndata: /messages?sid=7\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case frame := <-m.legacyOut:
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", frame)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	case r.Method == http.MethodPost && r.URL.Path == "/messages":
		body, _ := io.ReadAll(r.Body)
		var msg rpc
		json.Unmarshal(body, &msg)
		w.WriteHeader(http.StatusAccepted)
		if msg.Method == "" || len(msg.ID) == 0 {
			return
		}
		if msg.Method == "initialize" {
			m.mu.Lock()
			m.inits++
			m.mu.Unlock()
			m.legacyOut <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}}`, msg.ID))
			return
		}
		rec := httptest.NewRecorder()
		result, id := m.handle(&msg, rec)
		m.legacyOut <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func httpServer(name, url string) mcpvisor.ServerConfig {
	return mcpvisor.ServerConfig{Name: name, Type: "http", URL: url, AllowPrivate: true, Enabled: true}
}

func TestHTTPJSONReplies(t *testing.T) {
	m := &mcpHTTP{}
	srv := newMCPHTTP(t, m)
	h := openHost(t, mcpvisor.Options{}, httpServer("web", srv.URL))
	waitReady(t, h)
	res := call(t, h, "mcp__web__echo", `{"x":1}`)
	if res.Wire() != `{"x":1}` {
		t.Errorf("echo = %q", res.Wire())
	}
	st := status(t, h, "web")
	if st.ProtocolVersion != "2025-11-25" || st.ServerInfo.Name != "http-test" || st.PID != 0 {
		t.Errorf("status = %+v", st)
	}
	m.mu.Lock()
	headers := m.headers
	m.mu.Unlock()
	for i, hd := range headers {
		accept := hd.Get("Accept")
		if !strings.Contains(accept, "application/json") || !strings.Contains(accept, "text/event-stream") {
			t.Errorf("POST %d: Accept %q", i, accept)
		}
		if i == 0 {
			if hd.Get("Mcp-Session-Id") != "" || hd.Get("MCP-Protocol-Version") != "" {
				t.Errorf("initialize carried session or version headers: %v", hd)
			}
			continue
		}
		if hd.Get("Mcp-Session-Id") != "session-1" || hd.Get("MCP-Protocol-Version") != "2025-11-25" {
			t.Errorf("POST %d: session %q version %q", i, hd.Get("Mcp-Session-Id"), hd.Get("MCP-Protocol-Version"))
		}
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deletes != 1 {
		t.Errorf("DELETEs on close = %d, want 1", m.deletes)
	}
}

// A server request streamed before the response is answered by POST, and
// never taken for the response (seed 002, finding 3).
func TestHTTPSSERequestBeforeResponse(t *testing.T) {
	m := &mcpHTTP{sse: true, askFirst: true}
	srv := newMCPHTTP(t, m)
	h := openHost(t, mcpvisor.Options{}, httpServer("web", srv.URL))
	waitReady(t, h)
	res := call(t, h, "mcp__web__echo", `{"y":2}`)
	if res.Wire() != `{"y":2}` {
		t.Errorf("echo = %q", res.Wire())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.answers) != 1 || !strings.Contains(m.answers[0], `"id":"srv-1"`) || !strings.Contains(m.answers[0], `"result":{}`) {
		t.Errorf("answers to the server's ping: %q", m.answers)
	}
}

func TestHTTPMismatchedResponseID(t *testing.T) {
	m := &mcpHTTP{wrongID: true}
	srv := newMCPHTTP(t, m)
	h := openHost(t, mcpvisor.Options{}, httpServer("web", srv.URL))
	waitReady(t, h)
	_, err := h.Call(context.Background(), "mcp__web__echo", json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "no response to this request") {
		t.Fatalf("a reply with another id = %v; want a clear error, never a result", err)
	}
}

// The stream closes after its priming event: the client waits exactly the
// server's retry, then resumes with GET and Last-Event-ID.
func TestHTTPResumeAfterRetry(t *testing.T) {
	const retry = 300 * time.Millisecond
	m := &mcpHTTP{sse: true, closeEarly: retry}
	srv := newMCPHTTP(t, m)
	h := openHost(t, mcpvisor.Options{}, httpServer("web", srv.URL))
	waitReady(t, h)
	res := call(t, h, "mcp__web__echo", `{"z":3}`)
	if res.Wire() != `{"z":3}` {
		t.Errorf("echo = %q", res.Wire())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastEventID != "ev-1" {
		t.Errorf("Last-Event-ID = %q, want ev-1", m.lastEventID)
	}
	if waited := m.resumeAt.Sub(m.closedAt); waited < retry {
		t.Errorf("resumed after %v, before the server's retry of %v", waited, retry)
	}
}

// GET answered 405 means there is no standalone stream: the client asks once.
func TestHTTPGet405AskedOnce(t *testing.T) {
	m := &mcpHTTP{}
	srv := newMCPHTTP(t, m)
	h := openHost(t, mcpvisor.Options{}, httpServer("web", srv.URL))
	waitReady(t, h)
	for range 5 {
		call(t, h, "mcp__web__echo", `{}`)
	}
	h.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gets != 1 {
		t.Errorf("GETs = %d, want 1 (405 means stop asking)", m.gets)
	}
}

func TestHTTPSessionExpiredReinitializes(t *testing.T) {
	onEvent, events := eventSink()
	m := &mcpHTTP{expire: true}
	srv := newMCPHTTP(t, m)
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent}, httpServer("web", srv.URL))
	waitReadyEvents(t, events, "web")
	call(t, h, "mcp__web__echo", `{}`) // the server forgets the session after answering
	_, err := h.Call(context.Background(), "mcp__web__echo", json.RawMessage(`{}`))
	if !errors.Is(err, mcpvisor.ErrSessionExpired) || !errors.Is(err, mcpvisor.ErrConnectionLost) {
		t.Fatalf("call on a lost session = %v, want a session-expired error", err)
	}
	waitReadyEvents(t, events, "web")
	m.mu.Lock()
	inits := m.inits
	m.mu.Unlock()
	if inits != 2 {
		t.Errorf("initialize sent %d times, want 2 (re-initialized without the old session)", inits)
	}
}

func TestHTTPLegacyFallback(t *testing.T) {
	for _, typ := range []string{"http", "sse"} {
		t.Run(typ, func(t *testing.T) {
			m := &mcpHTTP{legacy: true}
			srv := newMCPHTTP(t, m)
			sc := httpServer("old", srv.URL)
			sc.Type = typ
			h := openHost(t, mcpvisor.Options{}, sc)
			waitReady(t, h)
			if res := call(t, h, "mcp__old__echo", `{"legacy":true}`); res.Wire() != `{"legacy":true}` {
				t.Errorf("echo = %q", res.Wire())
			}
			if st := status(t, h, "old"); st.ProtocolVersion != "2024-11-05" {
				t.Errorf("negotiated %q", st.ProtocolVersion)
			}
		})
	}
}

func TestHTTPOversizedEvent(t *testing.T) {
	m := &mcpHTTP{sse: true, oversize: 2 << 20}
	srv := newMCPHTTP(t, m)
	h := openHost(t, mcpvisor.Options{MaxFrame: 1 << 20}, httpServer("web", srv.URL))
	waitReady(t, h)
	if _, err := h.Call(context.Background(), "mcp__web__echo", json.RawMessage(`{}`)); !errors.Is(err, mcpvisor.ErrFrameTooLarge) {
		t.Fatalf("oversized event = %v, want ErrFrameTooLarge", err)
	}
}

// An allowPrivate server follows no redirect: the second listener is never hit.
func TestHTTPRedirectRefused(t *testing.T) {
	var hits int
	var mu sync.Mutex
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
	}))
	defer target.Close()
	redirector := httptest.NewServer(http.RedirectHandler(target.URL+"/mcp", http.StatusTemporaryRedirect))
	defer redirector.Close()
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent}, httpServer("redir", redirector.URL))
	ev := waitState(t, events, "redir", mcpvisor.StateFailed, mcpvisor.StateBackoff)
	if !strings.Contains(ev.Err, "redirect") {
		t.Errorf("error %q does not say the redirect was refused", ev.Err)
	}
	_ = h
	mu.Lock()
	defer mu.Unlock()
	if hits != 0 {
		t.Errorf("the redirect target was hit %d times", hits)
	}
}

// Without allowPrivate, a host name that resolves to loopback is refused.
func TestHTTPPrivateAddressRefused(t *testing.T) {
	m := &mcpHTTP{}
	srv := newMCPHTTP(t, m)
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	sc := httpServer("local", url)
	sc.AllowPrivate = false
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent}, sc)
	ev := waitState(t, events, "local", mcpvisor.StateFailed)
	if !strings.Contains(ev.Err, "non-public address") {
		t.Errorf("error %q does not say the address is not public", ev.Err)
	}
	_, err := h.Call(context.Background(), "mcp__local__echo", nil)
	if !errors.Is(err, mcpvisor.ErrUnavailable) || !errors.Is(err, mcpvisor.ErrPrivateAddress) {
		t.Errorf("call to the refused server = %v, want ErrUnavailable caused by ErrPrivateAddress", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inits != 0 {
		t.Errorf("the server was reached %d times", m.inits)
	}
}

func TestHTTPBearerSentNeverLogged(t *testing.T) {
	const secret = "sekrit-token-4242"
	m := &mcpHTTP{getStatus: http.StatusInternalServerError}
	srv := newMCPHTTP(t, m)
	var logs bytes.Buffer
	var logMu sync.Mutex
	dataDir := t.TempDir()
	sc := httpServer("auth", srv.URL)
	sc.APIKey = "${TOKEN}"
	lookup := func(k string) (string, bool) {
		if k == "TOKEN" {
			return secret, true
		}
		return "", false
	}
	h := openHost(t, mcpvisor.Options{
		DataDir:   dataDir,
		LookupEnv: lookup,
		Logger:    slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug - 8})),
	}, sc)
	waitReady(t, h)
	call(t, h, "mcp__auth__echo", `{}`)
	m.mu.Lock()
	got := m.headers[0].Get("Authorization")
	m.mu.Unlock()
	if got != "Bearer "+secret {
		t.Errorf("Authorization = %q", got)
	}
	h.Close()
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(logs.String(), secret) {
		t.Error("the API key reached the host's log")
	}
	if strings.Contains(fmt.Sprint(h.Status()), secret) {
		t.Error("the API key reached the status")
	}
	filepath.WalkDir(dataDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
				t.Errorf("the API key reached %s", p)
			}
		}
		return nil
	})
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// One HTTP server that accepts and never answers does not slow the others.
func TestHTTPHungServerIsIsolated(t *testing.T) {
	hungSrv := &mcpHTTP{hang: true}
	hung := newMCPHTTP(t, hungSrv)
	ok := newMCPHTTP(t, &mcpHTTP{sse: true})
	sc := httpServer("hung", hung.URL)
	sc.Timeout = mcpvisor.Duration(time.Hour)
	h := openHost(t, mcpvisor.Options{}, sc, httpServer("ok", ok.URL), mcptest("stdio"))
	waitReady(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := h.Call(ctx, "mcp__hung__echo", json.RawMessage(`{}`))
			done <- err
		}()
	}
	for i := range 100 {
		if res := call(t, h, "mcp__ok__echo", fmt.Sprintf(`{"i":%d}`, i)); !strings.Contains(res.Wire(), fmt.Sprint(i)) {
			t.Fatalf("echo %d = %q", i, res.Wire())
		}
		call(t, h, "mcp__stdio__echo", `{}`)
		h.Status()
	}
	cancel()
	for range 8 {
		if err := <-done; !errors.Is(err, mcpvisor.ErrCancelled) {
			t.Errorf("hung call = %v", err)
		}
	}
	// Each abandoned call is cancelled at the server, as over stdio.
	ids := map[string]bool{}
	for len(ids) < 8 {
		select {
		case id := <-hungSrv.cancelled:
			ids[id] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("notifications/cancelled received for %d of 8 calls", len(ids))
		}
	}
}
