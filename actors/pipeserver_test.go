package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// pipeServer is an MCP server played by the test behind a real stdioConn:
// the connection's goroutines, its write path and its read token run as in
// production, over in-memory pipes (memPipe, inside synctest bubbles) or
// os.Pipe pairs (real). Each dial makes a pipeConn whose server goroutine
// answers the handshake, answers tools/call of "echo" with its arguments,
// and hands tools/call of "wait" to the test (calls), which answers when
// it wants: the order of frames on stdout is the test's.
type pipeServer struct {
	t      *testing.T
	real   bool
	calls  chan pipeCall
	dialed chan *pipeConn

	mu    sync.Mutex
	conns []*pipeConn
}

// pipeCall is a tools/call of "wait", waiting for the test's answer.
type pipeCall struct {
	pc   *pipeConn
	id   json.RawMessage
	args json.RawMessage
}

// pipeConn is one incarnation of a pipeServer.
type pipeConn struct {
	srv      *pipeServer
	conn     *stdioConn
	in       io.Reader // the child's stdin: what the host wrote
	out      io.Writer // the child's stdout
	closeOut func()    // the child's stdout ends: the host reads EOF
	mem      *memPipe  // stdout, when in memory
	wmu      sync.Mutex
	answers  chan protocol.Message // the host's responses to server requests
	done     chan struct{}         // the server goroutine returned

	mu       sync.Mutex
	methods  []string // requests and notifications received, in order
	received [][]byte // every frame received, in order
}

func newPipeServer(t *testing.T, real bool) *pipeServer {
	return &pipeServer{t: t, real: real, calls: make(chan pipeCall, 4096), dialed: make(chan *pipeConn, 16)}
}

// dial is the Runtime's dialFunc.
func (s *pipeServer) dial(gen uint64, spec *ServerSpec, cio connIO) (conn, error) {
	pc := &pipeConn{srv: s, answers: make(chan protocol.Message, 64), done: make(chan struct{})}
	var stdin stdinPipe
	var stdout stdoutPipe
	var halt func()
	if s.real {
		childIn, hostIn, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		hostOut, childOut, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		in, err := newFileStdin(hostIn)
		if err != nil {
			return nil, err
		}
		stdin, stdout = in, hostOut
		pc.in, pc.out = childIn, childOut
		pc.closeOut = func() { childOut.Close() }
		halt = func() {
			hostIn.Close()
			hostOut.Close()
			<-pc.done
			childIn.Close()
			childOut.Close()
		}
	} else {
		in, out := newMemPipe(0), newMemPipe(0)
		stdin, stdout = in, out
		pc.in, pc.out, pc.mem = in, out, out
		pc.closeOut = out.closeWrite
		halt = func() {
			in.closeWrite()
			out.closeRead()
			<-pc.done
		}
	}
	pc.conn = newStdioConn(gen, spec, stdin, stdout, func(context.Context) { halt() }, cio.deliver, cio.event)
	go pc.serve()
	s.mu.Lock()
	s.conns = append(s.conns, pc)
	s.mu.Unlock()
	s.dialed <- pc
	return pc.conn, nil
}

// last is the connection dialled last.
func (s *pipeServer) last() *pipeConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[len(s.conns)-1]
}

func (pc *pipeConn) serve() {
	defer close(pc.done)
	fr := protocol.NewFrameReader(pc.in, 0)
	for {
		frame, err := fr.ReadFrame()
		if err != nil {
			return
		}
		msg, err := protocol.Classify(frame)
		if err != nil {
			pc.srv.t.Errorf("the host wrote an invalid frame %q: %v", frame, err)
			continue
		}
		pc.mu.Lock()
		pc.received = append(pc.received, frame)
		if msg.Kind != protocol.KindResponse {
			pc.methods = append(pc.methods, msg.Method)
		}
		pc.mu.Unlock()
		switch msg.Kind {
		case protocol.KindResponse:
			pc.answers <- msg
		case protocol.KindRequest:
			pc.request(&msg)
		}
	}
}

func (pc *pipeConn) request(msg *protocol.Message) {
	switch msg.Method {
	case protocol.MethodInitialize:
		pc.result(msg.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"pipe","version":"1"}}`)
	case protocol.MethodToolsList:
		pc.result(msg.ID, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"wait","inputSchema":{"type":"object"}}]}`)
	case protocol.MethodToolsCall:
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		if p.Name == "wait" {
			pc.srv.calls <- pipeCall{pc: pc, id: msg.ID, args: p.Arguments}
			return
		}
		pc.write(echoResult(msg.ID, p.Arguments))
	default:
		pc.write(protocol.AppendError(nil, msg.ID, protocol.CodeMethodNotFound, "method not found", nil))
	}
}

// echoResult is the answer to a call of echo or wait with args: a text
// block holding them.
func echoResult(id, args json.RawMessage) []byte {
	text, _ := json.Marshal(string(args))
	return protocol.AppendResult(nil, id, json.RawMessage(`{"content":[{"type":"text","text":`+string(text)+`}]}`))
}

func (pc *pipeConn) result(id json.RawMessage, result string) {
	pc.write(protocol.AppendResult(nil, id, json.RawMessage(result)))
}

// write writes one frame and its newline to the child's stdout.
func (pc *pipeConn) write(frame []byte) {
	pc.writeRaw(append(frame, '\n'))
}

// writeRaw writes bytes as they are: part of a line, or several.
func (pc *pipeConn) writeRaw(b []byte) {
	pc.wmu.Lock()
	defer pc.wmu.Unlock()
	if _, err := pc.out.Write(b); err != nil {
		pc.srv.t.Logf("server write: %v", err)
	}
}

// answer answers a held call with its arguments.
func (c pipeCall) answer() { c.pc.write(echoResult(c.id, c.args)) }

// got lists the methods of the requests and notifications received.
func (pc *pipeConn) got() []string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return append([]string(nil), pc.methods...)
}

// tokenState is a snapshot of a connection's read token, the callers named
// by their arguments.
type tokenState struct {
	Leader, Next string
	Running      bool // the reader goroutine holds it
	Free         bool
}

func (pc *pipeConn) token() tokenState {
	rd := pc.conn.rd
	rd.mu.Lock()
	defer rd.mu.Unlock()
	st := tokenState{Running: rd.running, Free: rd.free.Load()}
	if rd.leader != nil {
		st.Leader = string(rd.leader.args)
	}
	if rd.next != nil {
		st.Next = string(rd.next.args)
	}
	return st
}

// startPipe runs a Runtime over srv with one server, "p", and waits until
// it is ready.
func startPipe(t *testing.T, srv *pipeServer, spec ServerSpec, opts Options) *Runtime {
	t.Helper()
	opts.dial = srv.dial
	rt := New(opts)
	t.Cleanup(func() {
		if err := rt.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	spec.Name, spec.Command, spec.Enabled = "p", "pipe-server", true
	if err := rt.Register(context.Background(), spec); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := rt.WaitReady(context.Background(), "p"); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return rt
}

// callResult is what a call returned.
type callResult struct {
	args string
	res  json.RawMessage
	err  error
}

// goCall calls tool with args {"i":i} on its own goroutine.
func goCall(ctx context.Context, rt *Runtime, tool string, i int) <-chan callResult {
	out := make(chan callResult, 1)
	args := json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
	go func() {
		res, err := rt.Call(ctx, "mcp__p__"+tool, args, nil, nil)
		out <- callResult{args: string(args), res: res, err: err}
	}()
	return out
}

// check fails unless r is the echo of its own arguments.
func (r callResult) check(t *testing.T) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("call %s: %v", r.args, r.err)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(r.res, &res); err != nil || len(res.Content) != 1 || res.Content[0].Text != r.args {
		t.Fatalf("call %s answered %s", r.args, r.res)
	}
}
