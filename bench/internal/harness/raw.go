package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
)

// rawContender is the floor: no SDK, no host. The simple form writes one
// line and reads one line under a lock; the pipelined form (for concurrent
// callers) writes under one lock and lets one reader goroutine per pipe hand
// each response to its caller by id. modern: the echo server runs with
// -era modern, and every request carries the modern _meta (rawModernMeta).
type rawContender struct{ modern bool }

func (ct rawContender) name() string {
	if ct.modern {
		return RawModern
	}
	return Raw
}

func (ct rawContender) connect(ctx context.Context, env *Env, n int, pipelined bool) (client, error) {
	c := &rawClient{conns: make([]*rawConn, n)}
	err := startAll(n, func(i int) error {
		conn, err := dialRawEra(env.Server, pipelined, ct.modern)
		c.conns[i] = conn
		return err
	})
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

type rawClient struct{ conns []*rawConn }

// frameBytes are the sizes of the last call's request and reply lines on
// the first pipe, newlines included: what a call costs on the pipe. Read it
// once the calls are answered.
func (c *rawClient) frameBytes() (request, reply int) {
	return c.conns[0].requestBytes, c.conns[0].replyBytes
}

func (c *rawClient) call(ctx context.Context, server int) error {
	return c.conns[server].call(ctx)
}

func (c *rawClient) close() error {
	return closeAll(len(c.conns), func(i int) error {
		if c.conns[i] == nil {
			return nil
		}
		return c.conns[i].close()
	})
}

// rawConn is one echo server process on a pair of pipes.
type rawConn struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader

	wmu  sync.Mutex // the writer (and, in the simple form, the reader)
	next int64
	buf  []byte

	pipelined bool
	pmu       sync.Mutex
	waiting   map[int64]chan error
	readErr   error
	readDone  chan struct{}

	// modern: every request carries rawModernMeta (2026-07-28).
	modern bool
	// requestBytes and replyBytes are the sizes of the last call's lines
	// (the request's written under wmu; the reply's by its one reader).
	requestBytes, replyBytes int
}

// dialRaw spawns the server and does the handshake: initialize, then
// notifications/initialized and tools/list, as a host does before it calls.
func dialRaw(bin string, pipelined bool) (*rawConn, error) { return dialRawEra(bin, pipelined, false) }

// dialRawEra is dialRaw in either era. In the modern one (2026-07-28) the
// server runs with -era modern and there is no handshake: server/discover
// then tools/list, as a host does before it calls, each with the _meta.
func dialRawEra(bin string, pipelined, modern bool) (*rawConn, error) {
	cmd := exec.Command(bin, echoServerArgs(modern)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &rawConn{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 64<<10), pipelined: pipelined, modern: modern}
	if err := c.handshake(); err != nil {
		c.close()
		return nil, fmt.Errorf("raw handshake: %w", err)
	}

	if pipelined {
		c.waiting = map[int64]chan error{}
		c.readDone = make(chan struct{})
		go c.readLoop()
	}
	return c, nil
}

// rawModernMeta is the _meta of every modern request of the raw contender:
// what 2026-07-28 requires (the protocol version, the client's
// capabilities) and what it asks for (the client's identity). It is
// mcpvisor's own _meta byte for byte but for the names: the same members in
// the same order, no capability declared, a clientInfo of the same length
// (mcpvisor's is {"name":"mcpvisor","title":"mcpvisor","version":"0.1.0"}),
// so that the floor's call frame is as long as the host's (298 bytes, id 1,
// against 91 for a legacy call).
const rawModernMeta = `{"io.modelcontextprotocol/protocolVersion":"` + modernVersion + `","io.modelcontextprotocol/clientCapabilities":{},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"mcpbench","title":"mcpbench","version":"0.1.0"}}`

func (c *rawConn) handshake() error {
	const (
		initialize = `{"jsonrpc":"2.0","id":-1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n"
		listTools  = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":-2,"method":"tools/list"}` + "\n"
		// The modern era: no handshake, the _meta on every request.
		discover        = `{"jsonrpc":"2.0","id":-1,"method":"server/discover","params":{"_meta":` + rawModernMeta + `}}` + "\n"
		listToolsModern = `{"jsonrpc":"2.0","id":-2,"method":"tools/list","params":{"_meta":` + rawModernMeta + `}}` + "\n"
	)
	reqs := []string{initialize, listTools}
	if c.modern {
		reqs = []string{discover, listToolsModern}
	}
	for _, req := range reqs {
		if _, err := io.WriteString(c.stdin, req); err != nil {
			return err
		}
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			return err
		}
		if !bytes.Contains(line, []byte(`"result"`)) {
			return fmt.Errorf("unexpected answer: %s", bytes.TrimSpace(line))
		}
		if c.modern && !bytes.Contains(line, []byte(`"resultType":"complete"`)) {
			return fmt.Errorf("not a modern result: %s", bytes.TrimSpace(line))
		}
	}
	return nil
}

// appendCall appends a tools/call line for echo with echoArgs, with the
// modern _meta when modern.
func appendCall(b []byte, id int64, modern bool) []byte {
	return appendToolCall(b, id, "echo", echoArgs, modern)
}

// appendToolCall appends a tools/call line for tool with args, with the
// modern _meta (rawModernMeta) after the arguments when modern, where
// mcpvisor writes it too.
func appendToolCall(b []byte, id int64, tool string, args json.RawMessage, modern bool) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{"name":"`...)
	b = append(b, tool...)
	b = append(b, `","arguments":`...)
	b = append(b, args...)
	if modern {
		b = append(b, `,"_meta":`+rawModernMeta...)
	}
	return append(b, "}}\n"...)
}

func (c *rawConn) call(ctx context.Context) error {
	if !c.pipelined {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		if err := c.writeCall("echo", echoArgs); err != nil {
			return err
		}
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			return err
		}
		c.replyBytes = len(line)
		return checkLine(line)
	}
	done := make(chan error, 1)
	c.wmu.Lock()
	c.next++
	id := c.next
	c.pmu.Lock()
	if c.readErr != nil {
		c.pmu.Unlock()
		c.wmu.Unlock()
		return c.readErr
	}
	c.waiting[id] = done
	c.pmu.Unlock()
	c.buf = appendCall(c.buf[:0], id, c.modern)
	c.requestBytes = len(c.buf)
	_, err := c.stdin.Write(c.buf)
	c.wmu.Unlock()
	if err != nil {
		c.pmu.Lock()
		delete(c.waiting, id)
		c.pmu.Unlock()
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		c.pmu.Lock()
		delete(c.waiting, id)
		c.pmu.Unlock()
		return ctx.Err()
	}
}

// writeCall writes a tools/call of tool with args under the next id, in the
// simple form (the caller holds wmu).
func (c *rawConn) writeCall(tool string, args json.RawMessage) error {
	c.next++
	c.buf = appendToolCall(c.buf[:0], c.next, tool, args, c.modern)
	c.requestBytes = len(c.buf)
	_, err := c.stdin.Write(c.buf)
	return err
}

// notificationPrefix begins every notification the echo server writes,
// and none of its responses.
var notificationPrefix = []byte(`{"jsonrpc":"2.0","method":`)

// flood calls the flood tool for n notifications and reads every line up to
// its answer, returning how many notifications came before it. It is for
// the simple form only.
func (c *rawConn) flood(n int) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.writeCall("flood", floodArgs(n)); err != nil {
		return 0, err
	}
	for notes := 0; ; notes++ {
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			return notes, err
		}
		if !bytes.HasPrefix(line, notificationPrefix) {
			return notes, checkLine(line)
		}
	}
}

func checkLine(line []byte) error {
	if bytes.Contains(line, []byte(`"error":`)) {
		return fmt.Errorf("error response: %s", bytes.TrimSpace(line))
	}
	return nil
}

// readLoop hands each response to the caller waiting for its id.
func (c *rawConn) readLoop() {
	defer close(c.readDone)
	for {
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			if err == io.EOF {
				err = errors.New("raw: server closed stdout")
			}
			c.pmu.Lock()
			c.readErr = err
			for id, ch := range c.waiting {
				ch <- err
				delete(c.waiting, id)
			}
			c.pmu.Unlock()
			return
		}
		id, ok := lineID(line)
		if !ok {
			continue
		}
		c.replyBytes = len(line)
		c.pmu.Lock()
		ch := c.waiting[id]
		delete(c.waiting, id)
		c.pmu.Unlock()
		if ch != nil {
			ch <- checkLine(line)
		}
	}
}

// lineID reads the integer id of a response; the echo server writes it
// first, right after "jsonrpc".
func lineID(line []byte) (int64, bool) {
	i := bytes.Index(line, []byte(`"id":`))
	if i < 0 {
		return 0, false
	}
	rest := line[i+5:]
	j := 0
	for j < len(rest) && (rest[j] == '-' || rest[j] >= '0' && rest[j] <= '9') {
		j++
	}
	id, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return id, err == nil
}

func (c *rawConn) close() error {
	c.stdin.Close() // the server exits at EOF, which ends readLoop
	if c.readDone != nil {
		<-c.readDone
	}
	return c.cmd.Wait()
}
