package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// mcpPath is where the Streamable HTTP endpoint is served; statsPath serves
// the server's counters (for the harness, not part of MCP).
const (
	mcpPath   = "/mcp"
	statsPath = "/stats"
	// maxBody bounds a request body, as the host bounds a frame.
	maxBody = 16 << 20
)

// serveHTTPMain listens on addr, prints the endpoint's URL as the first line
// of stdout, and serves until SIGTERM or SIGINT, in the modern era
// (2026-07-28, no session) when modern is set.
func serveHTTPMain(addr string, modern bool) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h := &httpEcho{modern: modern}
	srv := &http.Server{
		Handler:           h,
		ConnState:         h.connState,
		ReadHeaderTimeout: 30 * time.Second,
		// No idle timeout: a host keeps one idle connection per server, and
		// the scale scenario holds thousands of them on purpose.
		ErrorLog: nil,
	}
	fmt.Printf("http://%s%s\n", ln.Addr(), mcpPath)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// httpEcho is the echo server over Streamable HTTP (2025-11-25, or
// 2026-07-28 when modern), as little as the transport allows: every POST
// carries one JSON-RPC message and a request is answered with one JSON
// body (application/json), never SSE; a notification or a response is
// answered 202. initialize opens a session (Mcp-Session-Id), which every
// later POST must carry (404 otherwise). GET is 405 (no standalone
// stream); DELETE is 200.
//
// modern: the server speaks 2026-07-28 (-era modern) and has no session.
// A POST stands alone: its _meta is checked as over stdio, and its headers
// must match its body (MCP-Protocol-Version, Mcp-Method, and Mcp-Name for
// tools/call), else -32020. An error is answered with the HTTP status the
// revision gives it: 404 for -32601, 400 for -32602 and -32020 to -32022.
type httpEcho struct {
	modern   bool
	sessions atomic.Int64 // issued: ids are "e1", "e2", ...
	conns    atomic.Int64 // accepted connections, ever
	open     atomic.Int64 // connections open now
	posts    atomic.Int64
	gets     atomic.Int64
	deletes  atomic.Int64
	pool     sync.Pool // *httpSession
}

// httpSession is one request's reusable decoding and reply space.
type httpSession struct {
	session
	body bytes.Buffer
}

func (h *httpEcho) connState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		h.conns.Add(1)
		h.open.Add(1)
	case http.StateClosed, http.StateHijacked:
		h.open.Add(-1)
	}
}

// stats are the server's counters, served as JSON at statsPath.
type stats struct {
	Conns    int64 `json:"conns"` // accepted, ever
	Open     int64 `json:"open"`  // open now
	Sessions int64 `json:"sessions"`
	Posts    int64 `json:"posts"`
	Gets     int64 `json:"gets"`
	Deletes  int64 `json:"deletes"`
}

func (h *httpEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case mcpPath:
	case statsPath:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(stats{Conns: h.conns.Load(), Open: h.open.Load(), Sessions: h.sessions.Load(),
			Posts: h.posts.Load(), Gets: h.gets.Load(), Deletes: h.deletes.Load()})
		return
	default:
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.posts.Add(1)
		h.post(w, r)
	case http.MethodGet:
		h.gets.Add(1)
		w.Header().Set("Allow", "POST, DELETE")
		w.WriteHeader(http.StatusMethodNotAllowed)
	case http.MethodDelete:
		h.deletes.Add(1)
		w.WriteHeader(http.StatusOK)
	default:
		w.Header().Set("Allow", "POST, DELETE")
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (h *httpEcho) post(w http.ResponseWriter, r *http.Request) {
	s, _ := h.pool.Get().(*httpSession)
	if s == nil {
		s = &httpSession{}
	}
	defer h.pool.Put(s)
	s.body.Reset()
	if r.ContentLength > maxBody {
		http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
		return
	}
	if r.ContentLength > 0 {
		s.body.Grow(int(r.ContentLength))
	}
	if n, err := s.body.ReadFrom(io.LimitReader(r.Body, maxBody+1)); err != nil || n > maxBody {
		http.Error(w, "request unreadable or too large", http.StatusBadRequest)
		return
	}
	reply := s.handle(s.body.Bytes(), mode{modern: h.modern})
	hdr := w.Header()
	switch {
	case s.parseError:
		hdr["Content-Type"] = []string{"application/json"}
		w.WriteHeader(http.StatusBadRequest)
		w.Write(reply)
		return
	case h.modern:
		if reply != nil && s.errCode == 0 {
			if msg := headerMismatch(r.Header, &s.req); msg != "" {
				reply = s.errorReply(s.req.ID, codeHeaderMismatch, msg)
			}
		}
	case s.req.Method == "initialize":
		hdr["Mcp-Session-Id"] = []string{"e" + strconv.FormatInt(h.sessions.Add(1), 10)}
	case !h.known(r.Header.Get("Mcp-Session-Id")):
		http.Error(w, "unknown or missing Mcp-Session-Id", http.StatusNotFound)
		return
	}
	if reply == nil { // a notification or a response
		w.WriteHeader(http.StatusAccepted)
		return
	}
	hdr["Content-Type"] = []string{"application/json"}
	hdr["Content-Length"] = []string{strconv.Itoa(len(reply))}
	if h.modern && s.errCode != 0 {
		w.WriteHeader(modernStatus(s.errCode))
	}
	w.Write(reply)
}

// codeHeaderMismatch is HeaderMismatchError's code (2026-07-28): the
// request's headers are missing or do not match its body.
const codeHeaderMismatch = -32020

// headerMismatch returns why a modern request's headers do not match its
// body (q), or "" when they do: MCP-Protocol-Version must be the version
// of its _meta (the only one this server speaks), Mcp-Method its method,
// and for tools/call Mcp-Name the tool's name (the echo server's are
// ASCII, never base64-encoded).
func headerMismatch(hdr http.Header, q *request) string {
	if v := hdr["Mcp-Protocol-Version"]; len(v) != 1 || v[0] != modernVersion {
		return "the MCP-Protocol-Version header must be " + modernVersion
	}
	if v := hdr["Mcp-Method"]; len(v) != 1 || v[0] != q.Method {
		return "the Mcp-Method header must be the request's method, " + q.Method
	}
	if q.Method == "tools/call" {
		if v := hdr["Mcp-Name"]; len(v) != 1 || v[0] != q.Params.Name {
			return "the Mcp-Name header must be the tool's name, " + q.Params.Name
		}
	}
	return ""
}

// modernStatus is the HTTP status of a modern error reply with code.
func modernStatus(code int) int {
	switch code {
	case -32601:
		return http.StatusNotFound
	case -32602, codeHeaderMismatch, -32021, codeUnsupportedVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// known reports whether id is a session this server issued.
func (h *httpEcho) known(id string) bool {
	if len(id) < 2 || id[0] != 'e' {
		return false
	}
	n, err := strconv.ParseInt(id[1:], 10, 64)
	return err == nil && n >= 1 && n <= h.sessions.Load()
}
