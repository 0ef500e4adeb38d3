package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/outbound"
	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/protocol/sse"
)

// HTTP transport settings.
const (
	httpWorkers        = 32               // POSTs in flight per server
	maxResumes         = 5                // GET reconnections for one response
	defaultResumeDelay = time.Second      // when the server gave no retry
	maxResumeDelay     = 30 * time.Second // cap for our own backoff
	deleteTimeout      = 2 * time.Second
	gateWait           = 2 * time.Second // longest a frame waits for the standalone GET
)

// Header names of the Streamable HTTP transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "MCP-Protocol-Version"
	headerLastEventID     = "Last-Event-ID"
)

// connFailed reports that a remote connection is gone (unreachable,
// refused by the outbound guard, session lost). permanent failures are not
// retried: they come from configuration, not from the server's health.
type connFailed struct {
	gen       uint64
	err       error
	permanent bool
}

// httpConn speaks Streamable HTTP (2025-11-25) to one remote server, or the
// legacy HTTP+SSE transport (2024-11-05) when the server answers initialize
// with 400, 404 or 405. Every frame the actor sends becomes a POST made by a
// worker goroutine; replies (a JSON body or an SSE stream) are classified and
// delivered to the actor as messages, exactly as stdout frames are.
type httpConn struct {
	gen      uint64
	spec     *ServerSpec
	client   *http.Client
	endpoint string
	router   router
	secrets  []string

	out    chan outMsg
	ctx    context.Context // ends when the connection closes
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	mu         sync.Mutex
	session    string
	version    string                       // negotiated; sent on every request after initialize
	initID     int64                        // id of our initialize request
	inflight   map[int64]context.CancelFunc // POSTs carrying a request, by id
	legacyPost string                       // legacy transport: the endpoint to POST to
	getStarted bool
	gate       chan struct{} // closed once the standalone GET has its answer
}

var _ conn = (*httpConn)(nil)

func startHTTP(gen uint64, spec *ServerSpec, deliver func(any), event func(*protocol.Message) bool) *httpConn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &httpConn{
		gen:      gen,
		spec:     spec,
		endpoint: spec.URL,
		router:   newRouter(gen, spec, deliver, event),
		out:      make(chan outMsg, spec.WriteQueue),
		ctx:      ctx,
		cancel:   cancel,
		inflight: map[int64]context.CancelFunc{},
		client: outbound.NewClient(outbound.Options{
			AllowPrivate: spec.AllowPrivate,
			// A JSON reply arrives only when the tool is done: the header
			// wait must outlast the call timeout.
			ResponseHeaderTimeout: spec.CallTimeout + 10*time.Second,
		}),
	}
	for _, v := range spec.Headers {
		c.secrets = append(c.secrets, v)
	}
	c.wg.Add(1)
	go c.dispatch()
	return c
}

func (c *httpConn) generation() uint64 { return c.gen }
func (c *httpConn) pid() int           { return 0 }
func (c *httpConn) release(n int)      { c.router.flow.release(n) }
func (c *httpConn) pending() *pendingTable {
	return c.router.pending
}

func (c *httpConn) send(m outMsg) error {
	select {
	case c.out <- m:
		return nil
	default:
		return fmt.Errorf("%w: %d requests queued for the server (all %d connections busy)", ErrNotReading, cap(c.out), httpWorkers)
	}
}

// abandon aborts the POST that carries request id (its caller gave up).
func (c *httpConn) abandon(id int64) {
	c.mu.Lock()
	cancel := c.inflight[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (c *httpConn) close(ctx context.Context) {
	c.once.Do(func() {
		c.mu.Lock()
		session, legacy := c.session, c.legacyPost != ""
		c.mu.Unlock()
		if session != "" && !legacy {
			// "C SHOULD send DELETE with MCP-Session-Id when it no longer
			// needs the session"; 405 is fine.
			dctx, cancel := context.WithTimeout(ctx, deleteTimeout)
			req, err := http.NewRequestWithContext(dctx, http.MethodDelete, c.endpoint, nil)
			if err == nil {
				c.setHeaders(req, false)
				if resp, err := c.client.Do(req); err == nil {
					drain(resp)
				}
			}
			cancel()
		}
		c.cancel()
		c.wg.Wait()
		c.client.CloseIdleConnections()
	})
}

// dispatch starts a goroutine per queued message, at most httpWorkers at
// once. An idle server costs this one goroutine, not a pool: a host may
// hold thousands of remote servers.
func (c *httpConn) dispatch() {
	defer c.wg.Done()
	sem := make(chan struct{}, httpWorkers)
	for {
		var m outMsg
		select {
		case m = <-c.out:
		case <-c.ctx.Done():
			return
		}
		if m.kind == outNotification && m.method == protocol.MethodInitialized {
			// Posted before anything that follows it, so the server sees
			// the handshake end before the next request (and the next
			// request reuses this connection instead of dialling another).
			c.post(m)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-c.ctx.Done():
			return
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer func() { <-sem }()
			c.post(m)
		}()
	}
}

// post sends one message and handles whatever comes back.
func (c *httpConn) post(m outMsg) {
	isRequest := m.kind == outRequest
	id := m.id
	isInit := isRequest && m.method == protocol.MethodInitialize
	var reqID json.RawMessage // the request's id as sent, for errors made up here
	if isRequest {
		reqID = m.rawID()
	}

	ctx := c.ctx
	if isRequest {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(c.ctx)
		defer cancel()
		c.mu.Lock()
		c.inflight[id] = cancel
		if isInit {
			c.initID = id
		}
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.inflight, id)
			c.mu.Unlock()
		}()
	}

	c.mu.Lock()
	target := c.endpoint
	legacy := c.legacyPost != ""
	if legacy {
		target = c.legacyPost
	}
	gate := c.gate
	c.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-time.After(gateWait):
		case <-ctx.Done():
			return
		}
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(m.frame))
	if err != nil {
		c.fail(err, true)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.setHeaders(req, !isInit)
	resp, err := c.client.Do(req)
	if err != nil {
		c.requestError(ctx, &m, err)
		return
	}
	defer drain(resp)

	if isInit {
		if sid := resp.Header.Get(headerSessionID); sid != "" {
			c.mu.Lock()
			c.session = sid
			c.mu.Unlock()
		}
	}
	switch {
	case legacy:
		// Legacy transport: answers come on the SSE stream; the POST only
		// acknowledges.
		if resp.StatusCode >= 300 && isRequest {
			c.deliverError(reqID, fmt.Sprintf("HTTP %d from %s", resp.StatusCode, c.where(target)))
		}
		return
	case isInit && (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed) && !isJSONRPCError(resp):
		// "a POST initialize answered 400, 404 or 405 falls back" to the
		// 2024-11-05 HTTP+SSE transport.
		c.fallBackToLegacy(m)
		return
	case resp.StatusCode == http.StatusNotFound && c.sessionID() != "":
		c.fail(fmt.Errorf("%w: the server answered 404 to our session id", ErrSessionExpired), false)
		return
	case resp.StatusCode == http.StatusAccepted:
		if isRequest {
			c.deliverError(reqID, "the server answered 202 Accepted to a request")
		}
		return
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		if isRequest {
			c.deliverError(reqID, fmt.Sprintf("HTTP %d from %s: %s", resp.StatusCode, c.where(target), c.excerpt(resp.Body)))
		}
		return
	}
	if !isRequest {
		return
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		c.readStream(ctx, resp.Body, reqID, id)
	default:
		c.readJSON(resp, reqID)
	}
}

// readJSON reads one bounded JSON-RPC message from a reply body.
func (c *httpConn) readJSON(resp *http.Response, reqID json.RawMessage) {
	limit := c.spec.MaxFrame
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	// Return the connection to the pool before the answer goes out: the
	// next request (the actor sends it on the answer) can then reuse it
	// instead of dialling a second one.
	drain(resp)
	if err != nil {
		c.deliverError(reqID, "reading the reply: "+err.Error())
		return
	}
	if len(b) > limit {
		c.router.oversized(reqID, int64(len(b)), limit)
		return
	}
	msg, err := protocol.Classify(b)
	if err != nil {
		c.deliverError(reqID, "the reply is not a JSON-RPC message")
		return
	}
	c.deliverMsg(msg, len(b))
	// The answer must carry the id that was sent (seed 002, finding 3): a
	// server request, a notification or another id leaves this call open.
	if msg.Kind != protocol.KindResponse || !bytes.Equal(msg.ID, reqID) {
		c.deliverError(reqID, "the reply carried no response to this request")
	}
}

// readStream reads an SSE reply until the response to request id arrived,
// resuming with GET and Last-Event-ID when the stream ends early.
func (c *httpConn) readStream(ctx context.Context, body io.ReadCloser, reqID json.RawMessage, id int64) {
	lastID := ""
	var retry time.Duration
	for attempt := 0; ; attempt++ {
		done, last, r := c.consume(body, id)
		body.Close()
		if last != "" {
			lastID = last
		}
		if r > 0 {
			retry = r
		}
		if done || ctx.Err() != nil {
			return
		}
		if attempt >= maxResumes || lastID == "" {
			c.deliverError(reqID, fmt.Sprintf("the server closed the stream before the response (%d reconnection(s))", attempt))
			return
		}
		if !waitRetry(ctx, retry, attempt) {
			return
		}
		resp, err := c.get(ctx, lastID)
		if err != nil {
			c.deliverError(reqID, "resuming the stream: "+c.redact(err.Error()))
			return
		}
		if resp.StatusCode == http.StatusMethodNotAllowed {
			drain(resp)
			c.deliverError(reqID, "the stream closed before the response and the server does not allow resuming it (GET 405)")
			return
		}
		if resp.StatusCode != http.StatusOK {
			drain(resp)
			c.deliverError(reqID, fmt.Sprintf("resuming the stream: HTTP %d", resp.StatusCode))
			return
		}
		body = resp.Body
	}
}

// consume delivers the events of one SSE stream. It reports whether the
// response to id was among them, the last event id and the last retry.
func (c *httpConn) consume(body io.Reader, id int64) (done bool, lastID string, retry time.Duration) {
	r := sse.NewReader(body, c.spec.MaxFrame)
	for {
		ev, err := r.Next()
		if err != nil {
			var tl *sse.TooLargeError
			if errors.As(err, &tl) {
				if tl.HasEventID {
					lastID = tl.EventID
				}
				// Only the event that answers this request ends the wait; an
				// oversized notification before it is dropped and logged.
				evID := tl.ID()
				if id >= 0 && (len(evID) == 0 || string(evID) == fmt.Sprint(id)) {
					c.router.oversized([]byte(fmt.Sprint(id)), tl.Size, tl.Limit)
					return true, lastID, retry
				}
				c.router.oversized(evID, tl.Size, tl.Limit)
				continue
			}
			return false, lastID, retry
		}
		if ev.HasID {
			lastID = ev.ID
		}
		if ev.HasRetry {
			retry = ev.Retry
		}
		if len(ev.Data) == 0 {
			continue // a priming event: its id and retry are all it carries
		}
		msg, err := protocol.Classify(ev.Data)
		if err != nil {
			continue
		}
		if msg.Kind == protocol.KindResponse {
			if rid, ok := msg.IntID(); ok && rid == id {
				done = true
			}
		}
		c.deliverMsg(msg, len(ev.Data))
		if done {
			return true, lastID, retry
		}
	}
}

// ready opens the GET stream for server-initiated messages once the
// session is ready. Frames sent after ready wait (briefly) until the GET
// has its answer, so the standalone stream is in place before any call: a
// server may otherwise route a call's resumed stream to it.
func (c *httpConn) ready() {
	c.mu.Lock()
	if c.getStarted || c.legacyPost != "" {
		c.mu.Unlock()
		return
	}
	c.getStarted = true
	gate := make(chan struct{})
	c.gate = gate
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.standalone(gate)
	}()
}

// standalone keeps the GET stream open, resuming with Last-Event-ID. A 4xx
// answer (405: no stream offered; other client errors: the server does not
// take GETs) ends it; network and server errors are retried with backoff.
func (c *httpConn) standalone(gate chan struct{}) {
	openGate := sync.OnceFunc(func() { close(gate) })
	defer openGate()
	lastID := ""
	var retry time.Duration
	for attempt := 0; c.ctx.Err() == nil; attempt++ {
		resp, err := c.get(c.ctx, lastID)
		openGate()
		switch {
		case err != nil:
		case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
			drain(resp)
			return // no standalone stream: stop asking
		case resp.StatusCode != http.StatusOK:
			drain(resp)
		default:
			attempt = 0
			_, last, r := c.consume(resp.Body, -1)
			drain(resp)
			if last != "" {
				lastID = last
			}
			if r > 0 {
				retry = r
			}
		}
		if attempt >= maxResumes || !waitRetry(c.ctx, retry, attempt) {
			return
		}
	}
}

// waitRetry waits before reconnecting a stream: exactly the server's retry
// when it gave one ("C MUST respect retry"), else a capped backoff. It
// reports false if ctx ended first.
func waitRetry(ctx context.Context, retry time.Duration, attempt int) bool {
	wait := retry
	if wait <= 0 {
		wait = min(defaultResumeDelay<<attempt, maxResumeDelay)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *httpConn) get(ctx context.Context, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	c.setHeaders(req, true)
	if lastID != "" {
		req.Header.Set(headerLastEventID, lastID)
	}
	return c.client.Do(req)
}

// fallBackToLegacy switches to the 2024-11-05 transport: GET the SSE
// stream, wait for the endpoint event, then POST the initialize again there.
func (c *httpConn) fallBackToLegacy(init outMsg) {
	resp, err := c.get(c.ctx, "")
	if err != nil {
		c.fail(fmt.Errorf("legacy HTTP+SSE: %s", c.redact(err.Error())), false)
		return
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		drain(resp)
		c.fail(fmt.Errorf("initialize refused, and no legacy HTTP+SSE stream either (GET answered HTTP %d)", resp.StatusCode), false)
		return
	}
	r := sse.NewReader(resp.Body, c.spec.MaxFrame)
	var endpoint string
	for endpoint == "" {
		ev, err := r.Next()
		if err != nil {
			drain(resp)
			c.fail(fmt.Errorf("legacy HTTP+SSE: the stream ended before the endpoint event: %v", err), false)
			return
		}
		if ev.Type == "endpoint" {
			endpoint = strings.TrimSpace(string(ev.Data))
		}
	}
	base, _ := url.Parse(c.endpoint)
	ep, err := base.Parse(endpoint)
	if err != nil || ep.Scheme != base.Scheme || ep.Host != base.Host {
		drain(resp)
		c.fail(fmt.Errorf("legacy HTTP+SSE: the endpoint event names another origin or an invalid URL"), true)
		return
	}
	c.mu.Lock()
	c.legacyPost = ep.String()
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer drain(resp)
		for {
			ev, err := r.Next()
			if err != nil {
				if errors.Is(err, protocol.ErrFrameTooLarge) {
					continue
				}
				if c.ctx.Err() == nil {
					c.fail(fmt.Errorf("legacy HTTP+SSE: the stream ended: %v", err), false)
				}
				return
			}
			if len(ev.Data) > 0 && (ev.Type == "" || ev.Type == "message") {
				c.deliverFrame(ev.Data)
			}
		}
	}()
	c.post(init)
}

func (c *httpConn) setHeaders(req *http.Request, afterInit bool) {
	for k, v := range c.spec.Headers {
		req.Header.Set(k, v)
	}
	c.mu.Lock()
	session, version := c.session, c.version
	c.mu.Unlock()
	if session != "" {
		req.Header.Set(headerSessionID, session)
	}
	if afterInit && version != "" {
		req.Header.Set(headerProtocolVersion, version)
	}
}

func (c *httpConn) sessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// deliverFrame classifies one inbound message and hands it to the actor.
func (c *httpConn) deliverFrame(b []byte) bool {
	msg, err := protocol.Classify(b)
	if err != nil {
		return false
	}
	c.deliverMsg(msg, len(b))
	return true
}

func (c *httpConn) deliverMsg(msg protocol.Message, size int) {
	if msg.Kind == protocol.KindResponse {
		c.noteInitResult(&msg)
	}
	c.router.route(msg, size, c.ctx.Done())
}

// noteInitResult records the negotiated version from the initialize
// response, for the MCP-Protocol-Version header of every later request, and
// opens the standalone stream.
func (c *httpConn) noteInitResult(msg *protocol.Message) {
	id, ok := msg.IntID()
	c.mu.Lock()
	isInit := ok && id == c.initID && c.version == ""
	c.mu.Unlock()
	if !isInit || msg.Result == nil {
		return
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(msg.Result, &res) == nil && res.ProtocolVersion != "" {
		c.mu.Lock()
		c.version = res.ProtocolVersion
		c.mu.Unlock()
	}
}

// deliverError answers request id, on the connection's behalf, with a
// JSON-RPC error: the call fails with a clear reason, the connection lives.
func (c *httpConn) deliverError(id json.RawMessage, reason string) {
	frame := protocol.AppendError(nil, id, codeTransport, reason, nil)
	c.deliverFrame(frame)
}

// codeTransport is the implementation-defined code of errors the host
// makes up for a request the transport could not complete.
const codeTransport = -32000

// requestError handles a POST that got no HTTP response at all.
func (c *httpConn) requestError(ctx context.Context, m *outMsg, err error) {
	if ctx.Err() != nil {
		return // abandoned or closing
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // its URL may be a redirect target with credentials in the query
	}
	text := c.redact(err.Error())
	for _, kind := range []error{outbound.ErrPrivateAddress, outbound.ErrRedirectRefused} {
		if errors.Is(err, kind) {
			c.fail(&redactedError{msg: text, kind: kind}, true)
			return
		}
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" || m.kind == outRequest && m.method == protocol.MethodInitialize {
		c.fail(fmt.Errorf("%s unreachable: %s", c.where(c.endpoint), text), false)
		return
	}
	if m.kind == outRequest {
		c.deliverError(m.rawID(), text)
	}
}

func (c *httpConn) fail(err error, permanent bool) {
	if c.ctx.Err() != nil {
		return
	}
	c.router.deliver(&connFailed{gen: c.gen, err: err, permanent: permanent})
}

// where names an endpoint without its query (which may hold credentials).
func (c *httpConn) where(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the server"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

func (c *httpConn) redact(s string) string {
	s = outbound.Redact(s, c.secrets...)
	if u, err := url.Parse(c.endpoint); err == nil && u.RawQuery != "" {
		s = strings.ReplaceAll(s, u.RawQuery, "[redacted]")
	}
	return s
}

func (c *httpConn) excerpt(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, 200))
	return c.redact(strings.TrimSpace(string(b)))
}

// isJSONRPCError tells a 400 that carries a JSON-RPC error (a bad request
// to a Streamable HTTP server) from a legacy server's plain 400.
func isJSONRPCError(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && resp.StatusCode == http.StatusBadRequest
}

// drain reads a little of what is left of a body and closes it, so the
// connection can be reused. Safe to call twice.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// redactedError carries a redacted message and only the sentinel behind
// it, so unwrapping cannot reach text that held a secret.
type redactedError struct {
	msg  string
	kind error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.kind }
