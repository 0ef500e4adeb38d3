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
	"github.com/mcpvisor/mcpvisor/internal/mcphttptest"
)

func httpServer(name, url string) mcpvisor.ServerConfig {
	return mcpvisor.ServerConfig{Name: name, Type: "http", URL: url, AllowPrivate: true, Enabled: true}
}

func TestHTTPJSONReplies(t *testing.T) {
	m := &mcphttptest.Server{}
	srv := mcphttptest.Start(t, m)
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
	headers := m.Stats().Headers
	for i, hd := range headers {
		accept := hd.Get("Accept")
		if !strings.Contains(accept, "application/json") || !strings.Contains(accept, "text/event-stream") {
			t.Errorf("POST %d: Accept %q", i, accept)
		}
		if i == 0 {
			// The era probe: a modern request, which this legacy server
			// refuses; initialize follows.
			if hd.Get("Mcp-Method") != "server/discover" || hd.Get("MCP-Protocol-Version") != "2026-07-28" || hd.Get("Mcp-Session-Id") != "" {
				t.Errorf("the first POST is not the server/discover probe: %v", hd)
			}
			continue
		}
		if i == 1 {
			if hd.Get("Mcp-Session-Id") != "" || hd.Get("MCP-Protocol-Version") != "" || hd.Get("Mcp-Method") != "" {
				t.Errorf("initialize carried session, version or modern headers: %v", hd)
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
	seen := m.Stats()
	if seen.Deletes != 1 {
		t.Errorf("DELETEs on close = %d, want 1", seen.Deletes)
	}
	// Sequential traffic reuses one connection: the handshake's messages
	// go out one after the other, and each reply is released before the
	// next message is sent.
	if seen.Conns != 1 {
		t.Errorf("the client opened %d connections for sequential traffic, want 1", seen.Conns)
	}
}

// A server request streamed before the response is answered by POST, and
// never taken for the response (seed 002, finding 3).
func TestHTTPSSERequestBeforeResponse(t *testing.T) {
	m := &mcphttptest.Server{SSE: true, AskFirst: true}
	srv := mcphttptest.Start(t, m)
	h := openHost(t, mcpvisor.Options{}, httpServer("web", srv.URL))
	waitReady(t, h)
	res := call(t, h, "mcp__web__echo", `{"y":2}`)
	if res.Wire() != `{"y":2}` {
		t.Errorf("echo = %q", res.Wire())
	}
	answers := m.Stats().Answers
	if len(answers) != 1 || !strings.Contains(answers[0], `"id":"srv-1"`) || !strings.Contains(answers[0], `"result":{}`) {
		t.Errorf("answers to the server's ping: %q", answers)
	}
}

func TestHTTPMismatchedResponseID(t *testing.T) {
	m := &mcphttptest.Server{WrongID: true}
	srv := mcphttptest.Start(t, m)
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
	m := &mcphttptest.Server{SSE: true, CloseEarly: retry}
	srv := mcphttptest.Start(t, m)
	h := openHost(t, mcpvisor.Options{}, httpServer("web", srv.URL))
	waitReady(t, h)
	res := call(t, h, "mcp__web__echo", `{"z":3}`)
	if res.Wire() != `{"z":3}` {
		t.Errorf("echo = %q", res.Wire())
	}
	st := m.Stats()
	if st.LastEventID != "ev-1" {
		t.Errorf("Last-Event-ID = %q, want ev-1", st.LastEventID)
	}
	if waited := st.ResumeGap; waited < retry {
		t.Errorf("resumed after %v, before the server's retry of %v", waited, retry)
	}
}

// GET answered 405 means there is no standalone stream: the client asks once.
func TestHTTPGet405AskedOnce(t *testing.T) {
	m := &mcphttptest.Server{}
	srv := mcphttptest.Start(t, m)
	h := openHost(t, mcpvisor.Options{}, httpServer("web", srv.URL))
	waitReady(t, h)
	for range 5 {
		call(t, h, "mcp__web__echo", `{}`)
	}
	h.Close()
	if g := m.Stats().Gets; g != 1 {
		t.Errorf("GETs = %d, want 1 (405 means stop asking)", g)
	}
}

func TestHTTPSessionExpiredReinitializes(t *testing.T) {
	onEvent, events := eventSink()
	m := &mcphttptest.Server{Expire: true}
	srv := mcphttptest.Start(t, m)
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent}, httpServer("web", srv.URL))
	waitReadyEvents(t, events, "web")
	call(t, h, "mcp__web__echo", `{}`) // the server forgets the session after answering
	_, err := h.Call(context.Background(), "mcp__web__echo", json.RawMessage(`{}`))
	if !errors.Is(err, mcpvisor.ErrSessionExpired) || !errors.Is(err, mcpvisor.ErrConnectionLost) {
		t.Fatalf("call on a lost session = %v, want a session-expired error", err)
	}
	waitReadyEvents(t, events, "web")
	inits := m.Stats().Inits
	if inits != 2 {
		t.Errorf("initialize sent %d times, want 2 (re-initialized without the old session)", inits)
	}
}

func TestHTTPLegacyFallback(t *testing.T) {
	for _, typ := range []string{"http", "sse"} {
		t.Run(typ, func(t *testing.T) {
			m := &mcphttptest.Server{Legacy: true}
			srv := mcphttptest.Start(t, m)
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
	m := &mcphttptest.Server{SSE: true, Oversize: 2 << 20}
	srv := mcphttptest.Start(t, m)
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

// Without allowPrivate, a server the API (or a model) registers on a host
// name that resolves to loopback is refused; the same entry in the user's
// own config file is reached.
func TestHTTPPrivateAddressRefused(t *testing.T) {
	m := &mcphttptest.Server{}
	srv := mcphttptest.Start(t, m)
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	sc := httpServer("local", url)
	sc.AllowPrivate = false

	own := openHost(t, mcpvisor.Options{}, sc)
	waitReady(t, own, "local")
	if _, err := own.Call(context.Background(), "mcp__local__echo", []byte(`{"text":"x"}`)); err != nil {
		t.Fatalf("a loopback server of the config file: %v", err)
	}
	if err := own.Close(); err != nil {
		t.Fatal(err)
	}
	inits := m.Stats().Inits

	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent})
	if err := h.Register(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	ev := waitState(t, events, "local", mcpvisor.StateFailed)
	if !strings.Contains(ev.Err, "non-public address") || !strings.Contains(ev.Err, `add "allowPrivate": true`) {
		t.Errorf("error %q does not say the address is not public, and how to allow it", ev.Err)
	}
	_, err := h.Call(context.Background(), "mcp__local__echo", nil)
	if !errors.Is(err, mcpvisor.ErrUnavailable) || !errors.Is(err, mcpvisor.ErrPrivateAddress) {
		t.Errorf("call to the refused server = %v, want ErrUnavailable caused by ErrPrivateAddress", err)
	}
	if n := m.Stats().Inits - inits; n != 0 {
		t.Errorf("the server the API registered was reached %d times", n)
	}
}

func TestHTTPBearerSentNeverLogged(t *testing.T) {
	const secret = "sekrit-token-4242"
	m := &mcphttptest.Server{GetStatus: http.StatusInternalServerError}
	srv := mcphttptest.Start(t, m)
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
	got := m.Stats().Headers[0].Get("Authorization")
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
	hungSrv := &mcphttptest.Server{Hang: true}
	hung := mcphttptest.Start(t, hungSrv)
	ok := mcphttptest.Start(t, &mcphttptest.Server{SSE: true})
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
		case id := <-hungSrv.Cancelled:
			ids[id] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("notifications/cancelled received for %d of 8 calls", len(ids))
		}
	}
}
