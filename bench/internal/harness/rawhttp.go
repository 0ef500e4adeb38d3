package harness

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// poolIdleConns is how many idle connections per host the clients the
// harness builds keep (raw, go-sdk, mark3labs over HTTP): as many as the
// throughput scenario has callers. net/http's default keeps 2, so that 64
// concurrent callers would dial (and leave in TIME_WAIT) a new connection
// for most calls; mcpvisor's own client is not configurable from outside
// and keeps 16 (internal/outbound).
const poolIdleConns = 64

// poolTransport is a fresh connection pool for one server: every SDK gets
// the same one, so that they differ only in what they do per call.
func poolTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no limit across hosts
		MaxIdleConnsPerHost: poolIdleConns,
		IdleConnTimeout:     90 * time.Second,
	}
}

// rawHTTPContender is the floor over Streamable HTTP: no SDK, no host. Each
// call is one net/http POST of the JSON-RPC frame, with the session's
// headers, and the JSON body read whole. One http.Client (one pool) per
// server, as the host has; concurrent callers share it, each with its own
// request (HTTP/1.1 has no pipelining: the pool is the concurrency).
type rawHTTPContender struct{}

func (rawHTTPContender) name() string { return Raw }

func (rawHTTPContender) connect(ctx context.Context, env *Env, n int, _ bool) (client, error) {
	c := &rawHTTPClient{sessions: make([]*rawHTTPSession, n)}
	err := startAll(n, func(i int) error {
		s, err := dialRawHTTP(ctx, env.httpURL)
		c.sessions[i] = s
		return err
	})
	if err != nil {
		c.close()
		return nil, fmt.Errorf("raw http: %w", err)
	}
	return c, nil
}

type rawHTTPClient struct{ sessions []*rawHTTPSession }

func (c *rawHTTPClient) call(ctx context.Context, server int) error {
	return c.sessions[server].call(ctx)
}

func (c *rawHTTPClient) close() error {
	return closeAll(len(c.sessions), func(i int) error {
		if c.sessions[i] == nil {
			return nil
		}
		return c.sessions[i].close()
	})
}

// rawHTTPSession is one MCP session with the echo server.
type rawHTTPSession struct {
	hc      *http.Client
	url     string
	session []string // the Mcp-Session-Id header's value
	next    atomic.Int64
	bufs    sync.Pool // *rawBufs
}

type rawBufs struct{ frame, body bytes.Buffer }

// Header values, shared by every request (net/http does not modify them).
var (
	hdrJSON    = []string{"application/json"}
	hdrAccept  = []string{"application/json, text/event-stream"}
	hdrVersion = []string{protocolVersion}
)

// dialRawHTTP does the handshake a host does: initialize (capturing the
// session), notifications/initialized, tools/list.
func dialRawHTTP(ctx context.Context, url string) (*rawHTTPSession, error) {
	s := &rawHTTPSession{hc: &http.Client{Transport: poolTransport()}, url: url}
	const (
		initialize  = `{"jsonrpc":"2.0","id":-1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
		initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		listTools   = `{"jsonrpc":"2.0","id":-2,"method":"tools/list"}`
	)
	var b rawBufs
	for _, step := range []struct {
		frame  string
		status int
	}{{initialize, http.StatusOK}, {initialized, http.StatusAccepted}, {listTools, http.StatusOK}} {
		b.frame.Reset()
		b.frame.WriteString(step.frame)
		resp, err := s.post(ctx, &b)
		if err != nil {
			s.close()
			return nil, err
		}
		if resp.StatusCode != step.status || step.status == http.StatusOK && !bytes.Contains(b.body.Bytes(), []byte(`"result"`)) {
			s.close()
			return nil, fmt.Errorf("unexpected answer: HTTP %d: %s", resp.StatusCode, b.body.Bytes())
		}
		if s.session == nil {
			sid := resp.Header.Get("Mcp-Session-Id")
			if sid == "" {
				s.close()
				return nil, fmt.Errorf("initialize answered without Mcp-Session-Id")
			}
			s.session = []string{sid}
		}
	}
	return s, nil
}

// post sends b.frame and reads the whole reply body into b.body.
func (s *rawHTTPSession) post(ctx context.Context, b *rawBufs) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(b.frame.Bytes()))
	if err != nil {
		return nil, err
	}
	req.Header = http.Header{"Content-Type": hdrJSON, "Accept": hdrAccept}
	if s.session != nil {
		req.Header["Mcp-Session-Id"] = s.session
		req.Header["Mcp-Protocol-Version"] = hdrVersion
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	b.body.Reset()
	_, err = b.body.ReadFrom(resp.Body)
	resp.Body.Close()
	return resp, err
}

func (s *rawHTTPSession) call(ctx context.Context) error {
	b, _ := s.bufs.Get().(*rawBufs)
	if b == nil {
		b = &rawBufs{}
	}
	defer s.bufs.Put(b)
	b.frame.Reset()
	b.frame.Write(appendCall(b.frame.AvailableBuffer(), s.next.Add(1), false))
	resp, err := s.post(ctx, b)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("raw http: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b.body.Bytes()))
	}
	return checkLine(b.body.Bytes())
}

// close ends the session (DELETE, as the host does) and the pool.
func (s *rawHTTPSession) close() error {
	if s.session != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil); err == nil {
			req.Header = http.Header{"Mcp-Session-Id": s.session, "Mcp-Protocol-Version": hdrVersion}
			if resp, err := s.hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	s.hc.CloseIdleConnections()
	return nil
}
