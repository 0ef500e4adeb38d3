// Package stdiotest drives a stdio MCP server subprocess from tests: it
// builds the server, starts it in its own process group, writes requests to
// its stdin and sorts what it prints into responses, server messages
// (notifications and requests), non-JSON stdout lines and stderr lines.
//
// It is a deliberately small, independent client used to check the example
// servers; it shares no code with mcpvisor's client.
package stdiotest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Sentinel errors.
var (
	// ErrEOF is returned for calls whose answer can no longer arrive because
	// the server's stdout ended.
	ErrEOF = errors.New("stdiotest: server stdout closed")
)

// Context is a test's context for talking to a server: it ends after 20 s
// (a hung server fails the test rather than hanging it) or with the test.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Message is one JSON-RPC message read from the server.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
	// Raw is the line as read, without its newline.
	Raw []byte `json:"-"`
}

func (m *Message) hasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// Options configure Start.
type Options struct {
	Args []string // command-line arguments
	Env  []string // added to the test's environment
	// OnRequest answers the server's requests. Nil answers ping with {},
	// roots/list with {"roots":[]} and anything else with -32601.
	OnRequest func(method string, params json.RawMessage) (any, *Error)
}

// Client is a running server process and the pipes to it.
type Client struct {
	t    testing.TB
	cmd  *exec.Cmd
	opts Options

	stdinMu sync.Mutex
	stdin   *os.File

	mu      sync.Mutex
	nextID  int
	pending map[string]chan *Message

	inbound  *inbox[*Message] // server notifications and requests, in order
	badLines *inbox[[]byte]   // stdout lines that are not JSON-RPC
	stderr   *inbox[string]

	readers   sync.WaitGroup // stdout and stderr readers, request answerers
	exited    chan struct{}  // closed once the process is reaped
	state     *os.ProcessState
	closeOnce sync.Once
}

// Start runs bin with opts and registers Close as a cleanup of t.
func Start(t testing.TB, bin string, opts Options) *Client {
	t.Helper()
	cmd := exec.Command(bin, opts.Args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatalf("stdiotest: pipe: %v", err)
	}
	cmd.Stdin = stdinR
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdiotest: stdout pipe: %v", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("stdiotest: stderr pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("stdiotest: start %s: %v", bin, err)
	}
	stdinR.Close()
	c := &Client{
		t:        t,
		cmd:      cmd,
		opts:     opts,
		stdin:    stdinW,
		pending:  make(map[string]chan *Message),
		inbound:  newInbox[*Message](),
		badLines: newInbox[[]byte](),
		stderr:   newInbox[string](),
		exited:   make(chan struct{}),
	}
	c.readers.Add(2)
	go c.readStdout(stdout)
	go c.readStderr(stderr)
	go func() {
		c.readers.Wait() // Wait closes the pipes, so reads must finish first.
		_ = cmd.Wait()
		c.state = cmd.ProcessState
		close(c.exited)
	}()
	t.Cleanup(c.Close)
	return c
}

// Pid is the server's process id.
func (c *Client) Pid() int { return c.cmd.Process.Pid }

// Stdin is the write end of the server's stdin, for tests that set write
// deadlines. Use WriteLine to write.
func (c *Client) Stdin() *os.File { return c.stdin }

// WriteLine writes b and a newline to the server's stdin.
func (c *Client) WriteLine(b []byte) error {
	c.stdinMu.Lock()
	defer c.stdinMu.Unlock()
	_, err := c.stdin.Write(append(bytes.Clone(b), '\n'))
	return err
}

func (c *Client) writeJSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return c.WriteLine(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}))
}

// Send writes a request with the next integer id (1, 2, ...) and returns the
// id and a channel that receives the response, or is closed without one if
// the server's stdout ends first.
func (c *Client) Send(method string, params any) (json.RawMessage, <-chan *Message, error) {
	reply := make(chan *Message, 1)
	c.mu.Lock()
	c.nextID++
	id := json.RawMessage(strconv.Itoa(c.nextID))
	c.pending[string(id)] = reply
	c.mu.Unlock()
	req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	if err := c.writeJSON(req); err != nil {
		c.mu.Lock()
		delete(c.pending, string(id))
		c.mu.Unlock()
		return nil, nil, err
	}
	return id, reply, nil
}

// Call sends a request and waits for its response. A JSON-RPC error
// response is returned as a Message with Error set, not as an error.
func (c *Client) Call(ctx context.Context, method string, params any) (*Message, error) {
	_, reply, err := c.Send(method, params)
	if err != nil {
		return nil, err
	}
	select {
	case m, ok := <-reply:
		if !ok {
			return nil, fmt.Errorf("%s: %w", method, ErrEOF)
		}
		return m, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Notify writes a notification.
func (c *Client) Notify(method string, params any) error {
	n := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		n["params"] = params
	}
	return c.writeJSON(n)
}

// Initialize performs the handshake with protocol version v and returns the
// initialize response.
func (c *Client) Initialize(ctx context.Context, v string) (*Message, error) {
	m, err := c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": v,
		"capabilities":    map[string]any{"roots": map[string]any{"listChanged": true}},
		"clientInfo":      map[string]any{"name": "stdiotest", "version": "1.0.0"},
	})
	if err != nil {
		return nil, err
	}
	if m.Error != nil {
		return m, m.Error
	}
	return m, c.Notify("notifications/initialized", nil)
}

// NextInbound returns the next notification or request from the server.
func (c *Client) NextInbound(ctx context.Context) (*Message, error) { return c.inbound.next(ctx) }

// NextBadLine returns the next stdout line that was not a JSON-RPC message.
func (c *Client) NextBadLine(ctx context.Context) ([]byte, error) { return c.badLines.next(ctx) }

// NextStderr returns the next stderr line.
func (c *Client) NextStderr(ctx context.Context) (string, error) { return c.stderr.next(ctx) }

// CloseStdin closes the server's stdin, the spec's first shutdown step.
func (c *Client) CloseStdin() error { return c.stdin.Close() }

// Signal sends sig to the server process (not its group).
func (c *Client) Signal(sig os.Signal) error { return c.cmd.Process.Signal(sig) }

// Exited is closed once the process has exited and been reaped.
func (c *Client) Exited() <-chan struct{} { return c.exited }

// Wait waits for the process to exit and returns its state.
func (c *Client) Wait(ctx context.Context) (*os.ProcessState, error) {
	select {
	case <-c.exited:
		return c.state, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close closes stdin, gives the server two seconds to exit, then kills its
// whole process group (which also ends any grandchildren) and reaps it.
// It is idempotent and returns once every goroutine of the Client is done.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		c.stdin.Close()
		select {
		case <-c.exited:
		case <-time.After(2 * time.Second):
		}
		// The group outlives its leader while grandchildren are in it.
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
	})
}

func (c *Client) readStdout(r io.Reader) {
	defer c.readers.Done()
	defer c.badLines.close()
	defer c.inbound.close()
	defer c.failPending()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.handleLine(bytes.TrimSuffix(line, []byte{'\n'}))
		}
		if err != nil {
			return
		}
	}
}

func (c *Client) handleLine(line []byte) {
	var m Message
	if err := json.Unmarshal(line, &m); err != nil || (m.Method == "" && !m.hasID()) {
		c.badLines.push(line)
		return
	}
	m.Raw = line
	switch {
	case m.Method != "":
		c.inbound.push(&m)
		if m.hasID() {
			c.readers.Add(1)
			go c.answer(&m)
		}
	default:
		c.mu.Lock()
		reply, ok := c.pending[string(m.ID)]
		delete(c.pending, string(m.ID))
		c.mu.Unlock()
		if !ok {
			c.t.Logf("stdiotest: response to no pending request: %.200s", line)
			return
		}
		reply <- &m
	}
}

func (c *Client) answer(m *Message) {
	defer c.readers.Done()
	onRequest := c.opts.OnRequest
	if onRequest == nil {
		onRequest = defaultOnRequest
	}
	result, rpcErr := onRequest(m.Method, m.Params)
	resp := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if rpcErr != nil {
		resp["error"] = rpcErr
	} else {
		if result == nil {
			result = struct{}{}
		}
		resp["result"] = result
	}
	_ = c.writeJSON(resp) // the server may be gone; its exit is what tests check
}

func defaultOnRequest(method string, _ json.RawMessage) (any, *Error) {
	switch method {
	case "ping":
		return struct{}{}, nil
	case "roots/list":
		return map[string]any{"roots": []any{}}, nil
	}
	return nil, &Error{Code: -32601, Message: "Method not found"}
}

func (c *Client) failPending() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, reply := range c.pending {
		close(reply)
		delete(c.pending, id)
	}
}

func (c *Client) readStderr(r io.Reader) {
	defer c.readers.Done()
	defer c.stderr.close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		c.stderr.push(sc.Text())
	}
	_, _ = io.Copy(io.Discard, r) // keep draining after an over-long line
}

// inbox is an unbounded FIFO a reader goroutine fills and a test drains.
type inbox[T any] struct {
	mu      sync.Mutex
	items   []T
	closed  bool
	changed chan struct{} // closed and replaced on every push and on close
}

func newInbox[T any]() *inbox[T] { return &inbox[T]{changed: make(chan struct{})} }

func (q *inbox[T]) push(v T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, v)
	close(q.changed)
	q.changed = make(chan struct{})
}

func (q *inbox[T]) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	close(q.changed)
	q.changed = make(chan struct{})
}

// next pops the oldest item, waiting for one; io.EOF once closed and empty.
func (q *inbox[T]) next(ctx context.Context) (T, error) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			v := q.items[0]
			q.items = q.items[1:]
			q.mu.Unlock()
			return v, nil
		}
		if q.closed {
			q.mu.Unlock()
			var zero T
			return zero, io.EOF
		}
		changed := q.changed
		q.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
}

// Content is one content block of a tool result.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

// ToolResult is a decoded CallToolResult.
type ToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// Text returns the text of a result that is exactly one text block, or "" and false.
func (r *ToolResult) Text() (string, bool) {
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		return "", false
	}
	return r.Content[0].Text, true
}

// CallTool calls tools/call; args may be nil. A JSON-RPC error response is
// returned as *Error.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*ToolResult, error) {
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	m, err := c.Call(ctx, "tools/call", params)
	if err != nil {
		return nil, err
	}
	if m.Error != nil {
		return nil, m.Error
	}
	var res ToolResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		return nil, fmt.Errorf("tools/call %s: result %.200s: %w", name, m.Result, err)
	}
	return &res, nil
}
