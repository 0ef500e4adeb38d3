package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
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
	c, err := dialRawHTTPClient(ctx, env.httpURL, n, false)
	if err != nil {
		return nil, fmt.Errorf("raw http: %w", err)
	}
	return c, nil
}

// dialRawHTTPClient opens n raw sessions (rawHTTPSession) with the MCP
// endpoint url, at once, in the modern era or not.
func dialRawHTTPClient(ctx context.Context, url string, n int, modern bool) (*rawHTTPClient, error) {
	c := &rawHTTPClient{sessions: make([]*rawHTTPSession, n)}
	err := startAll(n, func(i int) error {
		s, err := dialRawHTTP(ctx, url, modern)
		c.sessions[i] = s
		return err
	})
	if err != nil {
		c.close()
		return nil, err
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

// rawHTTPSession is one MCP session with the echo server (or with the
// gateway, which serves the same tool). modern: a session of 2026-07-28,
// which is no session at all: every POST stands alone, with the _meta
// (rawModernMeta) and the headers of the revision (MCP-Protocol-Version,
// Mcp-Method, Mcp-Name), and no Mcp-Session-Id.
type rawHTTPSession struct {
	hc      *http.Client
	url     string
	modern  bool
	session []string // the Mcp-Session-Id header's value (legacy only)
	next    atomic.Int64
	bufs    sync.Pool // *rawBufs
}

type rawBufs struct{ frame, body bytes.Buffer }

// Header values, shared by every request (net/http does not modify them).
var (
	hdrJSON          = []string{"application/json"}
	hdrAccept        = []string{"application/json, text/event-stream"}
	hdrVersion       = []string{protocolVersion}
	hdrModernVersion = []string{modernVersion}
)

// requestHeaders are the headers of 2026-07-28 (SEP-2243) that mirror a
// modern request's body: its method and, for tools/call, the tool's name.
type requestHeaders struct{ method, name []string }

// echoCallHeaders are those of every call of the echo tool.
var echoCallHeaders = requestHeaders{method: []string{"tools/call"}, name: []string{"echo"}}

// echoedText is what a call's result must hold: echoArgs as the JSON
// string of its text block.
var echoedText, _ = json.Marshal(string(echoArgs))

// dialRawHTTP does the handshake a host does: in the legacy era initialize
// (capturing the session), notifications/initialized, tools/list; in the
// modern one server/discover and tools/list, each with the _meta. Either
// way tools/list must list the echo tool under its own name.
func dialRawHTTP(ctx context.Context, url string, modern bool) (*rawHTTPSession, error) {
	s := &rawHTTPSession{hc: &http.Client{Transport: poolTransport()}, url: url, modern: modern}
	const (
		initialize  = `{"jsonrpc":"2.0","id":-1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
		initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		listTools   = `{"jsonrpc":"2.0","id":-2,"method":"tools/list"}`
		// The modern era: no handshake, the _meta on every request.
		discover        = `{"jsonrpc":"2.0","id":-1,"method":"server/discover","params":{"_meta":` + rawModernMeta + `}}`
		listToolsModern = `{"jsonrpc":"2.0","id":-2,"method":"tools/list","params":{"_meta":` + rawModernMeta + `}}`
	)
	type step struct {
		frame  string
		hdr    requestHeaders
		status int
	}
	steps := []step{{initialize, requestHeaders{}, http.StatusOK}, {initialized, requestHeaders{}, http.StatusAccepted}, {listTools, requestHeaders{}, http.StatusOK}}
	if modern {
		steps = []step{{discover, requestHeaders{method: []string{"server/discover"}}, http.StatusOK}, {listToolsModern, requestHeaders{method: []string{"tools/list"}}, http.StatusOK}}
	}
	var b rawBufs
	for _, step := range steps {
		b.frame.Reset()
		b.frame.WriteString(step.frame)
		resp, err := s.post(ctx, &b, step.hdr)
		if err != nil {
			s.close()
			return nil, err
		}
		body := b.body.Bytes()
		if resp.StatusCode != step.status || step.status == http.StatusOK && !bytes.Contains(body, []byte(`"result"`)) ||
			modern && !bytes.Contains(body, []byte(`"resultType":"complete"`)) {
			s.close()
			return nil, fmt.Errorf("unexpected answer: HTTP %d: %s", resp.StatusCode, body)
		}
		if step.frame == listTools || step.frame == listToolsModern {
			if !bytes.Contains(body, []byte(`"name":"echo"`)) {
				s.close()
				return nil, fmt.Errorf("tools/list does not list echo: %s", body)
			}
		}
		if !modern && s.session == nil {
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

// post sends b.frame and reads the whole reply body into b.body. hdr are
// the modern request's own headers (ignored in the legacy era).
func (s *rawHTTPSession) post(ctx context.Context, b *rawBufs, hdr requestHeaders) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(b.frame.Bytes()))
	if err != nil {
		return nil, err
	}
	req.Header = http.Header{"Content-Type": hdrJSON, "Accept": hdrAccept}
	switch {
	case s.modern:
		req.Header["Mcp-Protocol-Version"] = hdrModernVersion
		req.Header["Mcp-Method"] = hdr.method
		if hdr.name != nil {
			req.Header["Mcp-Name"] = hdr.name
		}
	case s.session != nil:
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
	if err == nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg := lastSSEData(b.body.Bytes())
		b.body.Truncate(copy(b.body.Bytes(), msg))
	}
	return resp, err
}

// lastSSEData is the data of the last event of an SSE body that has any
// (a gateway may open the stream with an empty priming event, and a
// request's stream ends with its response), or nil. Every peer writes a
// message as one data line.
func lastSSEData(body []byte) []byte {
	var last []byte
	for len(body) > 0 {
		line, rest, _ := bytes.Cut(body, []byte("\n"))
		body = rest
		if data, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\r")), []byte("data:")); ok {
			if data = bytes.TrimSpace(data); len(data) > 0 {
				last = data
			}
		}
	}
	return last
}

// call calls the echo tool; an error response, a tool error or a result
// without the echoed arguments is an error.
func (s *rawHTTPSession) call(ctx context.Context) error {
	b, _ := s.bufs.Get().(*rawBufs)
	if b == nil {
		b = &rawBufs{}
	}
	defer s.bufs.Put(b)
	b.frame.Reset()
	b.frame.Write(appendCall(b.frame.AvailableBuffer(), s.next.Add(1), s.modern))
	resp, err := s.post(ctx, b, echoCallHeaders)
	if err != nil {
		return err
	}
	body := b.body.Bytes()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("raw http: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	if err := checkLine(body); err != nil {
		return err
	}
	if bytes.Contains(body, []byte(`"isError":true`)) || !bytes.Contains(body, echoedText) {
		return fmt.Errorf("raw http: not the echo: %s", bytes.TrimSpace(body))
	}
	return nil
}

// close ends the session (DELETE, as the host does; a modern one has none)
// and the pool.
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
