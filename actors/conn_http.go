package actors

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/headershelper"
	"github.com/mcpvisor/mcpvisor/internal/outbound"
	"github.com/mcpvisor/mcpvisor/protocol"
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
	// 2026-07-28 (SEP-2243).
	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"
)

// connFailed reports that a remote connection is gone (unreachable,
// refused by the outbound guard, session lost). An err that is
// ErrPermanent is not retried: it comes from configuration, not from the
// server's health.
type connFailed struct {
	gen uint64
	err error
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
	helper   *headershelper.Helper // the server's headersHelper, if any

	// out holds the frames waiting for the dispatcher. Pointers: a channel
	// of 256 frames cost every server 28 KiB of heap, scanned at every GC
	// (280 MB at 10,000 servers); of pointers, 2 KiB.
	out    chan *outMsg
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
	era        *modernEra    // set once the server answered server/discover as modern
}

// setModern tells the connection its server is modern: no session, no GET
// stream, no resumption.
func (c *httpConn) setModern(e *modernEra) {
	c.mu.Lock()
	c.era = e
	c.mu.Unlock()
}

func (c *httpConn) modern() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.era != nil
}

var _ conn = (*httpConn)(nil)

func startHTTP(gen uint64, spec *ServerSpec, deliver func(any), event func(*protocol.Message) bool) *httpConn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &httpConn{
		gen:      gen,
		spec:     spec,
		endpoint: spec.URL,
		router:   newRouter(gen, spec, deliver, event),
		out:      make(chan *outMsg, spec.WriteQueue),
		ctx:      ctx,
		cancel:   cancel,
		inflight: map[int64]context.CancelFunc{},
		client: outbound.NewClient(outbound.Options{
			AllowPrivate: spec.AllowPrivate, LoopbackHost: ownFileHost(spec),
			// A JSON reply arrives only when the tool is done: the header
			// wait must outlast the call timeout.
			ResponseHeaderTimeout: spec.CallTimeout + 10*time.Second,
		}),
	}
	for _, v := range spec.Headers {
		c.secrets = append(c.secrets, v)
	}
	if len(spec.HeadersHelper) > 0 {
		c.helper = headershelper.New(spec.HeadersHelper, helperEnv(), "", 0)
		c.client.Transport = c.helper.Transport(c.client.Transport)
	}
	if spec.Auth != nil {
		c.client.Transport = spec.Auth.Transport(c.client.Transport)
	}
	c.wg.Add(1)
	go c.dispatch()
	return c
}

func (c *httpConn) generation() uint64 { return c.gen }

func (c *httpConn) pid() int { return 0 }

func (c *httpConn) release(n int) { c.router.flow.release(n) }

func (c *httpConn) pending() *pendingTable {
	return c.router.pending
}

func (c *httpConn) send(m outMsg) error {
	select {
	case c.out <- &m:
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
				c.setHeaders(req, nil, false)
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
		case p := <-c.out:
			m = *p
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

// setHeaders sets a request's headers: the configured ones, then either
// the modern request headers of m (2026-07-28, SEP-2243) or the legacy
// session's.
func (c *httpConn) setHeaders(req *http.Request, m *outMsg, afterInit bool) {
	for k, v := range c.spec.Headers {
		req.Header.Set(k, v)
	}
	if m != nil && m.modern != "" {
		req.Header.Set(headerProtocolVersion, m.modern)
		req.Header.Set(headerMethod, m.method)
		if m.name != "" {
			req.Header.Set(headerName, protocol.EncodeHeaderValue(m.name))
		}
		for _, h := range m.headers {
			req.Header.Set(h.Name, h.Value) // Name is Mcp-Param-{name}
		}
		return
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

func (c *httpConn) fail(err error) {
	if c.ctx.Err() != nil {
		return
	}
	c.router.deliver(&connFailed{gen: c.gen, err: err})
}

// where names an endpoint without its query (which may hold credentials).
func (c *httpConn) where(raw string) string { return outbound.Where(raw) }

func (c *httpConn) redact(s string) string {
	s = outbound.Redact(s, c.secrets...)
	if c.helper != nil {
		s = outbound.Redact(s, c.helper.Secrets()...)
	}
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

// helperEnv is a headers helper's environment: the host's, without the
// key to the host's secret store.
func helperEnv() []string {
	env := os.Environ()
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "MCPVISOR_SECRET_KEY") })
}

// ownFileHost is the host of a server of the user's own config file, which
// may be on loopback (Spec.OwnFile); "" for any other.
func ownFileHost(spec *ServerSpec) string {
	if !spec.OwnFile {
		return ""
	}
	u, err := url.Parse(spec.URL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
