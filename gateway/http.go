package gateway

import (
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/mcpvisor/mcpvisor"
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
//   - POST of a request is answered as application/json, except a
//     tools/call from a client that accepts text/event-stream: its answer
//     is a resumable SSE stream (a priming event with an id and a retry
//     hint, sent at once, then progress, the client's questions and the
//     response, each with an id). A tools/call the client cancels
//     (notifications/cancelled) gets no response, as the spec's
//     cancellation says: its stream ends without one. POST of a
//     notification or response is answered 202.
//   - GET opens the session's stream of server notifications
//     (notifications/tools/list_changed, resource updates, logs); with
//     Last-Event-ID it resumes the stream that id belongs to (see
//     resume.go).
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
	if !g.hostAllowed(r) {
		httpError(w, http.StatusForbidden, "host not allowed: this endpoint listens on loopback, and a request naming another host is a DNS-rebinding attempt")
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

	// The caller's trace (W3C headers) becomes the parent of the spans of
	// the calls this request makes.
	if ctx := mcpvisor.TraceFromHeaders(r.Context(), r.Header); ctx != r.Context() {
		r = r.WithContext(ctx)
	}
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
	if r.Header.Get(headerSession) == "" && isModernPost(r, msg) {
		g.serveModern(w, r, msg)
		return
	}
	if !g.legacyVersion(w, r) {
		return
	}
	var s *session
	if msg.Kind == protocol.KindRequest && msg.Method == protocol.MethodInitialize {
		s = g.newSession()
		resp := s.handle(r.Context(), msg, nil)
		if m, err := protocol.Classify(resp); err != nil || m.Error != nil {
			s.cancel()
			writeJSON(w, resp) // no session for a failed initialize
			return
		}
		g.mu.Lock()
		evicted, ok := g.makeRoom()
		if ok {
			s.used.Store(g.now().UnixNano())
			g.sessions[s.id] = s
		}
		g.mu.Unlock()
		if evicted != nil {
			g.log.Info("gateway: session ended to make room", "max_sessions", g.opts.MaxSessions)
			g.endSession(evicted)
		}
		if !ok {
			s.cancel()
			w.Header().Set("Retry-After", "1")
			httpError(w, http.StatusServiceUnavailable, "too many sessions, all busy: try again later")
			return
		}
		w.Header().Set(headerSession, s.id)
		writeJSON(w, resp)
		return
	}
	if s = g.lookup(w, r); s == nil {
		return
	}
	defer s.leave()
	if msg.Kind != protocol.KindRequest {
		s.handle(r.Context(), msg, nil)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if msg.Method == protocol.MethodToolsCall && accepts(r, contentSSE) {
		lw := &lazyStream{w: w, resumable: s}
		// A legacy call's answer is a resumable stream from the start:
		// its priming event (an id and a retry hint) goes out at once, as
		// SEP-1699 has a server send it, so that a client whose
		// connection breaks during a long call can resume it; the
		// conformance suite's server-sse-polling checks for it. (Answered
		// as JSON, a call that needs no stream was one write, but could
		// not be resumed.)
		lw.start()
		if resp := s.handle(r.Context(), msg, lw.send); !lw.finish(resp) {
			writeJSON(w, resp)
		}
		return
	}
	resp := s.handle(r.Context(), msg, nil)
	if resp == nil {
		// Cancelled, from a client that breaks the transport's rule to
		// accept SSE: a JSON answer must hold a response, and an error
		// at least ends its wait.
		resp = protocol.AppendError(nil, msg.ID, protocol.CodeInternalError, "request cancelled", nil)
	}
	writeJSON(w, resp)
}

// lazyStream answers a tools/call as JSON unless something must reach the
// client before the response (progress, a request to the client): the
// first such frame turns the answer into an SSE stream, which carries
// those frames as they come, then the response, then ends. A call that
// needs none costs one JSON write.
// A call the client cancelled gets no response (the spec's cancellation):
// its stream ends without one, and if nothing was streamed yet its answer
// is an SSE stream that ends empty, since a request's POST must be
// answered as JSON, which holds a response, or as SSE.
// For a legacy session (resumable set) the stream is resumable: a
// priming event, then events with ids kept in the session's log of that
// stream (resume.go). A modern client's stream has no event id, so the
// client has nothing to resume. A JSON answer is one write, with nothing
// to resume either.
type lazyStream struct {
	mu        sync.Mutex
	w         http.ResponseWriter
	resumable *session   // the legacy session whose stream the answer becomes; nil: modern
	log       *eventLog  // the resumable stream's, once opened
	sse       *sseWriter // once opened
	done      bool
}

func (l *lazyStream) send(frame []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return // the handler has returned: the stream is gone
	}
	l.open()
	l.write(frame, true)
}

// start turns the answer into a stream now and flushes what it begins
// with (a resumable stream's priming event).
func (l *lazyStream) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open()
	_ = l.sse.rc.Flush()
}

// open turns the answer into a stream, if it is not one yet. Nothing is
// flushed: the headers (and a resumable stream's priming event) go out
// with the frame that opened it, or with the end of the answer. l.mu is
// held.
func (l *lazyStream) open() {
	switch {
	case l.sse != nil:
	case l.resumable != nil:
		l.log = l.resumable.openStream()
		l.sse = startResumable(l.w, l.log)
	default:
		l.sse = openSSE(l.w)
	}
}

// write sends a frame on the open stream; a resumable stream keeps it for
// a resumption even when the connection is gone. flush: now, as a frame
// before the response must go; the response, the stream's last frame, is
// not flushed: it goes out with the end of the answer when the handler
// returns, in one write. l.mu is held.
func (l *lazyStream) write(frame []byte, flush bool) {
	id := ""
	if l.log != nil {
		id = eventID(l.log.id, l.log.append(frame))
	}
	l.sse.write(appendEvent(id, frame), flush)
}

// finish ends the answer: resp on the stream if one was opened, and for a
// cancelled call (resp nil) a stream with no response. It reports whether
// it answered; if not, the caller answers resp as JSON.
func (l *lazyStream) finish(resp []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	if l.sse == nil {
		if resp != nil {
			return false
		}
		l.open()
	}
	if resp != nil {
		l.write(resp, false)
	}
	if l.log != nil {
		l.resumable.endStream(l.log)
	}
	return true
}

// legacyVersion refuses a legacy request whose MCP-Protocol-Version the
// gateway does not speak (400), and reports whether it may go on.
func (g *Gateway) legacyVersion(w http.ResponseWriter, r *http.Request) bool {
	if v := r.Header.Get(headerVersion); v != "" && !slices.Contains(protocol.SupportedVersions, v) {
		httpError(w, http.StatusBadRequest, "unsupported "+headerVersion+": "+v)
		return false
	}
	return true
}

func (g *Gateway) get(w http.ResponseWriter, r *http.Request) {
	if !g.legacyVersion(w, r) {
		return
	}
	s := g.lookup(w, r)
	if s == nil {
		return
	}
	defer s.leave()
	if !accepts(r, contentSSE) {
		httpError(w, http.StatusNotAcceptable, "GET needs Accept: "+contentSSE)
		return
	}
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		g.resume(w, r, s, last)
		return
	}
	g.standalone(r, s, newSSEWriter(w), s.stream(standaloneStream))
}

// standalone serves the session's GET stream: notifications not tied to a
// request, each with an id and kept in log for a resumption.
func (g *Gateway) standalone(r *http.Request, s *session, sse *sseWriter, log *eventLog) {
	send := func(frame []byte) bool {
		return sse.eventWithID(eventID(standaloneStream, log.append(frame)), frame)
	}
	for {
		select {
		case <-s.changed:
			if !send(listChangedFrame) {
				s.listChanged(true) // for a new stream too, not only a resumed one
				return
			}
		case frame := <-s.notes:
			if !send(frame) {
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
	if !g.legacyVersion(w, r) {
		return
	}
	s := g.lookup(w, r)
	if s == nil {
		return
	}
	defer s.leave()
	g.mu.Lock()
	delete(g.sessions, s.id)
	g.mu.Unlock()
	g.endSession(s)
	w.WriteHeader(http.StatusNoContent)
}

// lookup finds the request's session and marks it busy (the caller must
// call leave), or answers 400 (no header) or 404 (unknown, ended or
// expired: the client starts a new session).
func (g *Gateway) lookup(w http.ResponseWriter, r *http.Request) *session {
	id := r.Header.Get(headerSession)
	if id == "" {
		httpError(w, http.StatusBadRequest, "missing "+headerSession)
		return nil
	}
	g.mu.Lock()
	s := g.sessions[id]
	if s != nil {
		s.enter() // under g.mu: a sweep cannot expire it in between
	}
	g.mu.Unlock()
	if s == nil {
		httpError(w, http.StatusNotFound, "unknown session")
		return nil
	}
	return s
}

// OriginAllowed is the rule on a browser's Origin header: no Origin (not a
// browser) passes; otherwise it must be one of allowed or, with none
// listed, a loopback origin (http or https on localhost or a loopback
// address). The gateway applies it to every request, the sidecar to every
// state-changing one.
func OriginAllowed(origin string, allowed []string) bool {
	if origin == "" {
		return true
	}
	if len(allowed) > 0 {
		return slices.Contains(allowed, origin)
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return isLoopbackName(u.Hostname())
}

// HostAllowed is the DNS-rebinding defence on the Host header: a request
// that reached a loopback listener must name a loopback host (localhost,
// 127.0.0.1, [::1]) or one of allowed. A page on an attacker's name that
// rebinds to 127.0.0.1 sends its own name. Requests on other listeners
// pass: there the name is the deployment's business.
func HostAllowed(r *http.Request, allowed []string) bool {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	tcp, ok := local.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	return slices.Contains(allowed, host) || isLoopbackName(host)
}

// isLoopbackName reports whether host is localhost or a loopback address.
func isLoopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (g *Gateway) originAllowed(origin string) bool {
	return OriginAllowed(origin, g.opts.AllowedOrigins)
}
func (g *Gateway) hostAllowed(r *http.Request) bool { return HostAllowed(r, g.opts.AllowedHosts) }

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

// newSSEWriter starts an SSE answer and flushes its headers, so the client
// sees the stream open before its first event.
func newSSEWriter(w http.ResponseWriter) *sseWriter {
	sse := openSSE(w)
	_ = sse.rc.Flush()
	return sse
}

// openSSE starts an SSE answer without flushing: its headers go out with
// the first event, for a stream that has one to send at once.
func openSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", contentSSE)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// event writes one JSON-RPC frame as a message event and flushes it. It
// reports whether the stream still works.
func (s *sseWriter) event(frame []byte) bool { return s.eventWithID("", frame) }

// eventWithID is event with an SSE id (none when id is "").
func (s *sseWriter) eventWithID(id string, frame []byte) bool {
	return s.write(appendEvent(id, frame), true)
}

// appendEvent is frame as a message event, with an SSE id (none when id is
// "").
func appendEvent(id string, frame []byte) []byte {
	// Frames from protocol.Append* hold no raw newline, so one data line
	// carries the whole frame.
	buf := make([]byte, 0, len(frame)+len(id)+28)
	if id != "" {
		buf = append(append(append(buf, "id: "...), id...), '\n')
	}
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, frame...)
	return append(buf, "\n\n"...)
}

// raw writes text as it is (an event the caller formatted) and flushes.
func (s *sseWriter) raw(text string) bool { return s.write([]byte(text), true) }

// buffer writes text as it is without flushing: it goes out with the next
// event.
func (s *sseWriter) buffer(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := io.WriteString(s.w, text); err != nil {
		s.broken = true
	}
}

// write writes buf and, if flush, flushes it. It reports whether the
// stream still works.
func (s *sseWriter) write(buf []byte, flush bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken {
		return false
	}
	if _, err := s.w.Write(buf); err != nil {
		s.broken = true
		return false
	}
	if !flush {
		return true
	}
	if err := s.rc.Flush(); err != nil {
		s.broken = true
		return false
	}
	return true
}
