package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// maxBody bounds one POST body; a larger one is refused unread (413).
const maxBody = 16 << 20

// Header names of the Streamable HTTP transport (Go's canonical forms).
const (
	headerSession  = "Mcp-Session-Id"
	headerVersion  = "Mcp-Protocol-Version"
	contentJSON    = "application/json"
	contentSSE     = "text/event-stream"
	allowedMethods = "GET, POST, DELETE"
)

// Handler is the Streamable HTTP transport: mount it on the MCP endpoint
// path (POST, GET and DELETE are answered on whatever path it is given).
//
//   - POST initialize creates a session and returns its Mcp-Session-Id;
//     every other request needs that header (400 without it, 404 for an
//     unknown or ended session).
//   - POST of a request is answered as application/json, or as an SSE
//     stream (progress, then the response) for a tools/call asking for
//     progress from a client that accepts text/event-stream. POST of a
//     notification or response is answered 202.
//   - GET opens the session's stream of server notifications
//     (notifications/tools/list_changed).
//   - DELETE ends the session.
//
// A request with an Origin header that Options do not allow gets 403.
// Inbound headers (Authorization included) are never forwarded anywhere.
func (g *Gateway) Handler() http.Handler { return http.HandlerFunc(g.serveHTTP) }

func (g *Gateway) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.originAllowed(r.Header.Get("Origin")) {
		httpError(w, http.StatusForbidden, "origin not allowed")
		return
	}
	if v := r.Header.Get(headerVersion); v != "" && !slices.Contains(protocol.SupportedVersions, v) {
		httpError(w, http.StatusBadRequest, "unsupported "+headerVersion+": "+v)
		return
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		httpError(w, http.StatusServiceUnavailable, "the gateway is closed")
		return
	}
	g.wg.Add(1)
	g.mu.Unlock()
	defer g.wg.Done()

	switch r.Method {
	case http.MethodPost:
		g.post(w, r)
	case http.MethodGet:
		g.get(w, r)
	case http.MethodDelete:
		g.delete(w, r)
	default:
		w.Header().Set("Allow", allowedMethods)
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

func (g *Gateway) post(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			httpError(w, http.StatusRequestEntityTooLarge, "body too large")
			return
		}
		httpError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	msg, err := protocol.Classify(body)
	if err != nil {
		w.Header().Set("Content-Type", contentJSON)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(protocol.AppendError(nil, nil, protocol.CodeParseError, err.Error(), nil))
		return
	}
	var s *session
	if msg.Kind == protocol.KindRequest && msg.Method == protocol.MethodInitialize {
		s = g.newSession()
		resp := s.handle(msg, nil)
		if m, err := protocol.Classify(resp); err != nil || m.Error != nil {
			s.cancel()
			writeJSON(w, resp) // no session for a failed initialize
			return
		}
		g.mu.Lock()
		g.sessions[s.id] = s
		g.mu.Unlock()
		w.Header().Set(headerSession, s.id)
		writeJSON(w, resp)
		return
	}
	if s = g.lookup(w, r); s == nil {
		return
	}
	if msg.Kind != protocol.KindRequest {
		s.handle(msg, nil)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if msg.Method == protocol.MethodToolsCall && wantsProgress(msg.Params) && accepts(r, contentSSE) {
		g.postSSE(w, s, msg)
		return
	}
	resp := s.handle(msg, nil)
	if resp == nil {
		resp = protocol.AppendError(nil, msg.ID, protocol.CodeInternalError, "request cancelled", nil)
	}
	writeJSON(w, resp)
}

// postSSE answers a request on an SSE stream: the request's notifications
// as they come, then its response, then the stream ends. A request the
// client cancelled ends the stream without a response.
func (g *Gateway) postSSE(w http.ResponseWriter, s *session, msg protocol.Message) {
	sse := newSSEWriter(w)
	resp := s.handle(msg, func(frame []byte) { sse.event(frame) })
	if resp != nil {
		sse.event(resp)
	}
}

func (g *Gateway) get(w http.ResponseWriter, r *http.Request) {
	s := g.lookup(w, r)
	if s == nil {
		return
	}
	if !accepts(r, contentSSE) {
		httpError(w, http.StatusNotAcceptable, "GET needs Accept: "+contentSSE)
		return
	}
	sse := newSSEWriter(w)
	for {
		select {
		case <-s.changed:
			if !sse.event(listChangedFrame) {
				s.listChanged(true) // the stream broke: keep it for the next one
				return
			}
		case <-s.ctx.Done():
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (g *Gateway) delete(w http.ResponseWriter, r *http.Request) {
	s := g.lookup(w, r)
	if s == nil {
		return
	}
	g.mu.Lock()
	delete(g.sessions, s.id)
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), endTimeout)
	defer cancel()
	if err := s.end(ctx); err != nil {
		g.log.Warn("gateway: ending a session", "err", err)
	}
	w.WriteHeader(http.StatusNoContent)
}

// lookup finds the request's session, or answers 400 (no header) or 404.
func (g *Gateway) lookup(w http.ResponseWriter, r *http.Request) *session {
	id := r.Header.Get(headerSession)
	if id == "" {
		httpError(w, http.StatusBadRequest, "missing "+headerSession)
		return nil
	}
	g.mu.Lock()
	s := g.sessions[id]
	g.mu.Unlock()
	if s == nil {
		httpError(w, http.StatusNotFound, "unknown session")
		return nil
	}
	return s
}

// originAllowed implements the DNS-rebinding defence: no Origin (not a
// browser) passes; otherwise the Origin must be listed, or, with no list,
// be a loopback origin.
func (g *Gateway) originAllowed(origin string) bool {
	if origin == "" {
		return true
	}
	if len(g.opts.AllowedOrigins) > 0 {
		return slices.Contains(g.opts.AllowedOrigins, origin)
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func wantsProgress(params []byte) bool {
	var p protocol.CallToolParams
	return json.Unmarshal(orEmpty(params), &p) == nil && progressToken(p.Meta) != nil
}

// accepts reports whether the Accept header lists the media type.
func accepts(r *http.Request, mediaType string) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && mt == mediaType {
				return true
			}
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, frame []byte) {
	w.Header().Set("Content-Type", contentJSON)
	_, _ = w.Write(frame)
}

// httpError answers a transport error with a JSON-RPC error without id,
// as the spec allows.
func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", contentJSON)
	w.WriteHeader(code)
	_, _ = w.Write(protocol.AppendError(nil, nil, protocol.CodeInvalidRequest, msg, nil))
}

// sseWriter writes one SSE stream; event may be called from several
// goroutines.
type sseWriter struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	broken bool
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", contentSSE)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	return &sseWriter{w: w, rc: rc}
}

// event writes one JSON-RPC frame as a message event and flushes it. It
// reports whether the stream still works.
func (s *sseWriter) event(frame []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken {
		return false
	}
	// Frames from protocol.Append* hold no raw newline, so one data line
	// carries the whole frame.
	buf := make([]byte, 0, len(frame)+24)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, frame...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		s.broken = true
		return false
	}
	if err := s.rc.Flush(); err != nil {
		s.broken = true
		return false
	}
	return true
}
