package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// fakeServer scripts the server behind a Runtime's dial seam (Options.dial):
// each dial makes a fakeConn, one incarnation of the server, that answers
// through the same router as a real transport, so responses to calls go
// straight to their callers and everything else to the actor.
//
// By default it answers initialize and tools/list (with tools) and every
// tools/call with a text result; a tool named "hang" is never answered.
// Tests change the script with the fields below before the dial they
// concern, under mu or before Register.
type fakeServer struct {
	t *testing.T

	mu    sync.Mutex
	tools []protocol.Tool
	// dialErr, when set, fails dial number n (1-based).
	dialErr func(n int) error
	// initErr, when set, answers initialize on incarnation n with an error.
	initErr func(n int) *protocol.Error
	// initSilent leaves initialize unanswered (a test answers it).
	initSilent bool
	// discover, when set, answers server/discover on incarnation n: a
	// frame to write, or nil to stay silent. Unset: -32601, as a legacy
	// server answers an unknown method.
	discover func(n int, id json.RawMessage) []byte
	// initVersion, when set, is the protocolVersion initialize answers;
	// unset: the requested one when it is a legacy version we speak, as a
	// server that supports it must answer, else protocol.ProtocolVersion.
	initVersion string
	// ttlMs, when set, is the ttlMs of every tools/list result.
	ttlMs  *int64
	conns  []*fakeConn
	dialed chan *fakeConn // every conn, in dial order
}

func newFakeServer(t *testing.T, tools ...string) *fakeServer {
	s := &fakeServer{t: t, dialed: make(chan *fakeConn, 64)}
	s.setTools(tools...)
	return s
}

func (s *fakeServer) setTools(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools = nil
	for _, n := range names {
		s.tools = append(s.tools, protocol.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
}

// dial is the Runtime's dialFunc.
func (s *fakeServer) dial(gen uint64, spec *ServerSpec, cio connIO) (conn, error) {
	s.mu.Lock()
	n := len(s.conns) + 1
	dialErr := s.dialErr
	s.mu.Unlock()
	if dialErr != nil {
		if err := dialErr(n); err != nil {
			s.mu.Lock()
			s.conns = append(s.conns, nil) // counts as a dial
			s.mu.Unlock()
			return nil, err
		}
	}
	c := &fakeConn{
		srv:    s,
		n:      n,
		gen:    gen,
		io:     cio,
		router: newRouter(gen, spec, cio.deliver, cio.event),
		inbox:  make(chan outMsg, 1024),
		stop:   make(chan struct{}),
	}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
	c.wg.Add(1)
	go c.run()
	s.dialed <- c
	return c, nil
}

// dials counts the dials so far, failed ones included.
func (s *fakeServer) dials() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// conn returns the last connection dialled.
func (s *fakeServer) last() *fakeConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.conns) - 1; i >= 0; i-- {
		if s.conns[i] != nil {
			return s.conns[i]
		}
	}
	s.t.Fatal("no connection was dialled")
	return nil
}

// fakeConn is one incarnation of a fakeServer. Its server goroutine reads
// what the host sends, in order, and answers by the script.
type fakeConn struct {
	srv    *fakeServer
	n      int // 1-based incarnation number
	gen    uint64
	io     connIO
	router router
	inbox  chan outMsg
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	mu        sync.Mutex
	got       []protocol.Message // everything the host sent, classified
	abandoned []int64
	isReady   bool
	closed    bool
}

var _ conn = (*fakeConn)(nil)

func (c *fakeConn) send(m outMsg) error {
	select {
	case c.inbox <- m:
		return nil
	default:
		return fmt.Errorf("%w: fake inbox full", ErrNotReading)
	}
}

func (c *fakeConn) pending() *pendingTable { return c.router.pending }
func (c *fakeConn) release(n int)          { c.router.flow.release(n) }
func (c *fakeConn) generation() uint64     { return c.gen }
func (c *fakeConn) pid() int               { return 1000 + c.n }

func (c *fakeConn) abandon(id int64) {
	c.mu.Lock()
	c.abandoned = append(c.abandoned, id)
	c.mu.Unlock()
}

func (c *fakeConn) ready() {
	c.mu.Lock()
	c.isReady = true
	c.mu.Unlock()
}

func (c *fakeConn) close(context.Context) {
	c.once.Do(func() {
		close(c.stop)
		c.wg.Wait()
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
	})
}

func (c *fakeConn) run() {
	defer c.wg.Done()
	for {
		select {
		case m := <-c.inbox:
			c.serve(m)
		case <-c.stop:
			return
		}
	}
}

// serve checks that m's fields say what its frame holds (the transports
// trust them), records it and answers it by the script.
func (c *fakeConn) serve(m outMsg) {
	msg, err := protocol.Classify(m.frame)
	if err != nil {
		c.srv.t.Errorf("the host sent an invalid frame %q: %v", m.frame, err)
		return
	}
	switch m.kind {
	case outRequest:
		id, _ := msg.IntID()
		if msg.Kind != protocol.KindRequest || msg.Method != m.method || id != m.id {
			c.srv.t.Errorf("outMsg{request %d %s} carries %s %s id %s", m.id, m.method, msg.Kind, msg.Method, msg.ID)
		}
	case outNotification:
		if msg.Kind != protocol.KindNotification || msg.Method != m.method {
			c.srv.t.Errorf("outMsg{notification %s} carries %s %s", m.method, msg.Kind, msg.Method)
		}
	case outResponse:
		if msg.Kind != protocol.KindResponse {
			c.srv.t.Errorf("outMsg{response} carries %s", msg.Kind)
		}
	}
	c.mu.Lock()
	c.got = append(c.got, msg)
	c.mu.Unlock()
	if msg.Kind != protocol.KindRequest {
		return
	}
	c.srv.mu.Lock()
	tools := slices.Clone(c.srv.tools)
	initErr := c.srv.initErr
	discover := c.srv.discover
	ttl := c.srv.ttlMs
	initVersion := c.srv.initVersion
	initSilent := c.srv.initSilent
	c.srv.mu.Unlock()
	switch msg.Method {
	case protocol.MethodServerDiscover:
		if discover == nil {
			c.write(protocol.AppendError(nil, msg.ID, protocol.CodeMethodNotFound, "method not found", nil))
			return
		}
		if frame := discover(c.n, msg.ID); frame != nil {
			c.write(frame)
		}
	case protocol.MethodSubscriptionsListen:
		// Open until the connection ends, as a real stream is.
	case protocol.MethodInitialize:
		if initSilent {
			return
		}
		if initErr != nil {
			if e := initErr(c.n); e != nil {
				c.write(protocol.AppendError(nil, msg.ID, e.Code, e.Message, nil))
				return
			}
		}
		if initVersion == "" {
			var p protocol.InitializeParams
			_ = json.Unmarshal(msg.Params, &p)
			initVersion = protocol.ProtocolVersion
			if slices.Contains(protocol.SupportedVersions, p.ProtocolVersion) {
				initVersion = p.ProtocolVersion
			}
		}
		c.result(msg.ID, map[string]any{
			"protocolVersion": initVersion,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo":      map[string]any{"name": "fake", "version": "1"},
		})
	case protocol.MethodToolsList:
		c.result(msg.ID, protocol.ListToolsResult{Tools: tools, Cache: protocol.Cache{TTLMs: ttl}})
	case protocol.MethodToolsCall:
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		if p.Name == "hang" {
			return
		}
		c.result(msg.ID, map[string]any{"content": []map[string]any{{"type": "text", "text": "ok " + p.Name}}})
	default:
		c.write(protocol.AppendError(nil, msg.ID, protocol.CodeMethodNotFound, "method not found", nil))
	}
}

func (c *fakeConn) result(id json.RawMessage, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.srv.t.Fatal(err)
	}
	c.write(protocol.AppendResult(nil, id, b))
}

// write hands one frame to the host as the connection's reader would.
func (c *fakeConn) write(frame []byte) {
	msg, err := protocol.Classify(frame)
	if err != nil {
		c.srv.t.Errorf("fake server wrote an invalid frame: %v", err)
		return
	}
	c.router.route(msg, len(frame), c.stop)
}

// notify sends a notification from the server.
func (c *fakeConn) notify(method string) {
	c.write(protocol.AppendNotification(nil, method, nil))
}

// die reports the process's exit, as the reaper goroutine does.
func (c *fakeConn) die(code int) {
	c.io.deliver(&processExited{gen: c.gen, exit: supervision.ExitInfo{Code: code}})
}

// methods lists the methods the host sent, in order.
func (c *fakeConn) methods() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.got {
		out = append(out, m.Method)
	}
	return out
}

// sent returns the messages of method the host sent.
func (c *fakeConn) sent(method string) []protocol.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []protocol.Message
	for _, m := range c.got {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

func (c *fakeConn) state() (ready, closed bool, abandoned []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isReady, c.closed, slices.Clone(c.abandoned)
}
