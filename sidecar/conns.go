package sidecar

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Connection limits. Every connection costs a descriptor until it closes,
// and a client needs no token to hold one: before these limits, ~20,000
// keep-alive connections that had each asked GET /healthz exhausted the
// process's descriptors, and the API stopped answering until they went.
//
// A connection is unauthenticated until one of its requests carries the
// token. Serve holds at most Limits.MaxConns connections, and per client
// address at most Limits.MaxUnauthConnsPerAddr that have sent a request
// without the token. At either limit, the unauthenticated connection that
// has waited longest with no request in a handler (idle between requests,
// or not yet through its first request's header) is closed to make room;
// only when there is none is the newcomer refused with 503. So a client
// holding many idle connections cannot keep a caller with the token out,
// and an authenticated connection is never closed to make room.

// refusal bounds: how many refused connections are answered at once (the
// rest are closed unanswered), and how long one may take.
const (
	maxRefusals    = 32
	refusalTimeout = 2 * time.Second
	maxRefusalRead = 64 << 10
)

// overloaded is the answer to a connection refused at Accept, written by
// hand: the HTTP server never sees that connection.
var overloaded = func() []byte {
	body := []byte(`{"error":{"code":"unavailable","message":"too many connections: the sidecar holds as many as it may; retry shortly","retryAfterMs":1000}}` + "\n")
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 503 Service Unavailable\r\n")
	b.WriteString("Content-Type: application/json\r\n")
	b.WriteString("Retry-After: 1\r\n")
	b.WriteString("Connection: close\r\n")
	b.WriteString("Content-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}()

// connTracker counts the connections of one Serve and decides which are
// admitted, which are closed to make room, and which are refused. Its
// methods are safe for concurrent use; the refusals it answers are its
// goroutines, joined by wait.
type connTracker struct {
	limits Limits
	log    *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]*trackedConn
	unauth map[string]int // per client address: connections counted unauthenticated
	clock  uint64         // orders activity: a higher stamp is more recent

	refusals chan struct{} // a slot per refusal being answered
	wg       sync.WaitGroup
}

// trackedConn is one connection Serve holds. Its fields are guarded by
// the tracker's mu.
type trackedConn struct {
	tracker *connTracker
	conn    net.Conn
	addr    string // the client's IP address
	authed  bool   // a request on it carried the token
	counted bool   // counted in unauth[addr]: a request on it did not
	busy    int    // requests in a handler (HTTP/2 may have several)
	last    uint64 // when it was accepted or a request on it last ended
	gone    bool   // closed or made room for another: no longer held
}

func newConnTracker(l Limits, log *slog.Logger) *connTracker {
	return &connTracker{limits: l, log: log, conns: map[net.Conn]*trackedConn{}, unauth: map[string]int{},
		refusals: make(chan struct{}, maxRefusals)}
}

type connKey struct{}

// connContext is the http.Server's ConnContext: it hands the request's
// connection to the handler (see begin).
func (t *connTracker) connContext(ctx context.Context, c net.Conn) context.Context {
	t.mu.Lock()
	tc := t.conns[c]
	t.mu.Unlock()
	if tc == nil {
		return ctx
	}
	return context.WithValue(ctx, connKey{}, tc)
}

// connState is the http.Server's ConnState: a closed or hijacked
// connection is no longer held.
func (t *connTracker) connState(c net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tc := t.conns[c]; tc != nil {
		t.remove(tc)
	}
}

// admit decides on a connection just accepted: true to serve it. At
// MaxConns it first closes the unauthenticated connection that has waited
// longest; with none to close, the newcomer is to be refused.
func (t *connTracker) admit(c net.Conn) bool {
	t.mu.Lock()
	var victim *trackedConn
	if t.limits.MaxConns > 0 && len(t.conns) >= t.limits.MaxConns {
		if victim = t.longestWaiting("", false, nil); victim == nil {
			t.mu.Unlock()
			return false
		}
		t.remove(victim)
	}
	t.clock++
	t.conns[c] = &trackedConn{tracker: t, conn: c, addr: clientAddr(c), last: t.clock}
	t.mu.Unlock()
	t.evict(victim, "maxConns")
	return true
}

// begin marks a request in a handler on tc. A request without the token
// makes its connection count against its address's MaxUnauthConnsPerAddr;
// at that limit the address's unauthenticated connection that has waited
// longest is closed first, and with none to close begin returns false:
// the request is to be refused. A request with the token takes its
// connection out of that count for good. Each begin that returns true
// needs an end.
func (t *connTracker) begin(tc *trackedConn, authed bool) bool {
	t.mu.Lock()
	var victim *trackedConn
	switch {
	case tc.gone: // being closed: nothing to count
	case authed && !tc.authed:
		tc.authed = true
		if tc.counted {
			t.uncount(tc)
		}
	case !tc.authed && !tc.counted:
		if limit := t.limits.MaxUnauthConnsPerAddr; limit > 0 && t.unauth[tc.addr] >= limit {
			if victim = t.longestWaiting(tc.addr, true, tc); victim == nil {
				t.mu.Unlock()
				return false
			}
			t.remove(victim)
		}
		tc.counted = true
		t.unauth[tc.addr]++
	}
	tc.busy++
	t.mu.Unlock()
	t.evict(victim, "maxUnauthConnsPerAddr")
	return true
}

// end marks the end of a request begun on tc.
func (t *connTracker) end(tc *trackedConn) {
	t.mu.Lock()
	tc.busy--
	t.clock++
	tc.last = t.clock
	t.mu.Unlock()
}

// longestWaiting returns the unauthenticated connection with no request
// in a handler that has waited longest, of addr when not "", counted in
// unauth when counted, other than except; nil when there is none. Called
// with mu held; a linear scan, as the connections are at most MaxConns.
func (t *connTracker) longestWaiting(addr string, counted bool, except *trackedConn) *trackedConn {
	var best *trackedConn
	for _, tc := range t.conns {
		if tc.authed || tc.busy > 0 || tc == except || (addr != "" && tc.addr != addr) || (counted && !tc.counted) {
			continue
		}
		if best == nil || tc.last < best.last {
			best = tc
		}
	}
	return best
}

// remove stops holding tc. Called with mu held.
func (t *connTracker) remove(tc *trackedConn) {
	delete(t.conns, tc.conn)
	if tc.counted {
		t.uncount(tc)
	}
	tc.gone = true
}

func (t *connTracker) uncount(tc *trackedConn) {
	tc.counted = false
	if t.unauth[tc.addr]--; t.unauth[tc.addr] <= 0 {
		delete(t.unauth, tc.addr)
	}
}

// refuse answers a connection admit turned away with 503 and closes it,
// on a goroutine of its own (a client could stall the answer; Accept must
// not wait for it). Past maxRefusals under way, it closes the connection
// unanswered.
func (t *connTracker) refuse(c net.Conn) {
	select {
	case t.refusals <- struct{}{}:
	default:
		closeConn(c)
		return
	}
	t.log.Debug("sidecar: refused a connection: too many", "client", clientAddr(c), "maxConns", t.limits.MaxConns)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer func() { <-t.refusals }()
		answerOverloaded(c)
	}()
}

// wait returns once every refusal under way has ended (each is bounded by
// refusalTimeout).
func (t *connTracker) wait() { t.wg.Wait() }

// answerOverloaded writes the 503 to c and closes it. It reads the
// request's head first and drains what follows after a half-close: a
// socket closed with unread bytes sends a reset, which may destroy the
// answer before the client reads it. Over TLS, HTTP/2 is not spoken here:
// such a client's connection is closed unanswered.
func answerOverloaded(c net.Conn) {
	defer closeConn(c)
	c.SetDeadline(time.Now().Add(refusalTimeout))
	if tc, ok := c.(*tls.Conn); ok {
		if tc.Handshake() != nil || tc.ConnectionState().NegotiatedProtocol == "h2" {
			return
		}
	}
	buf := make([]byte, 0, 4<<10)
	for len(buf) < cap(buf) && !bytes.Contains(buf, []byte("\r\n\r\n")) {
		n, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			break
		}
	}
	if _, err := c.Write(overloaded); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, maxRefusalRead))
}

// closeConn closes c at once. A TLS connection's own Close would first
// send close_notify, waiting up to 5 s on a client that does not read;
// closing the socket under it ends it without waiting.
func closeConn(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		tc.NetConn().Close()
		return
	}
	c.Close()
}

// clientAddr is the IP address a connection comes from.
func clientAddr(c net.Conn) string {
	if tcp, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	return c.RemoteAddr().String()
}

// limitListener is a listener whose Accept admits connections through a
// connTracker: it returns only those admitted, and refuses the others.
type limitListener struct {
	net.Listener
	t *connTracker
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.t.admit(c) {
			return c, nil
		}
		l.t.refuse(c)
	}
}

// evict closes victim, if any, chosen under the lock to make room at limit.
func (t *connTracker) evict(victim *trackedConn, limit string) {
	if victim == nil {
		return
	}
	t.log.Debug("sidecar: closed a waiting unauthenticated connection to make room", "client", victim.addr, "limit", limit)
	closeConn(victim.conn)
}
