package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/protocol/sse"
)

// A stdio client beside a running sidecar: the sidecar holds the journal
// and runs the servers, so mcpvisor stdio relays the client to the
// sidecar's /mcp (Streamable HTTP) instead of running a second host. Each
// message from stdin is one POST; what the sidecar answers (JSON or an
// event stream) goes to stdout, as do the requests and notifications of the
// session's GET stream. A modern client's requests get the headers its
// revision asks of HTTP (MCP-Protocol-Version, Mcp-Method, Mcp-Name and the
// tools' Mcp-Param-*, from the tools/list results that pass through).

// bridgeMaxFrame bounds one message from the client or the sidecar.
const bridgeMaxFrame = 64 << 20

// stdioBridge relays one stdio client to a sidecar's /mcp.
type stdioBridge struct {
	r      *remote
	logger *slog.Logger

	outMu sync.Mutex
	out   io.Writer

	mu        sync.Mutex
	session   string // Mcp-Session-Id, once initialize answered
	version   string // the negotiated protocol version
	listening bool   // the GET stream runs
	// paramHeaders are the x-mcp-header annotations of the tools
	// tools/list listed, by tool name, for a modern client's tools/call.
	paramHeaders map[string][]protocol.ParamHeader
	// listing are the ids of the tools/list requests in flight.
	listing map[string]bool

	// listenCtx ends the GET stream; it outlives the requests' context
	// until the session is deleted.
	listenCtx     context.Context
	stopListening context.CancelFunc

	wg sync.WaitGroup // the requests relayed and the GET stream
}

// bridgeStdio relays the client on stdin and stdout to r's /mcp until
// stdin ends or ctx is done; it then ends the session and returns once
// every request it relayed has returned.
func bridgeStdio(ctx context.Context, r *remote, logger *slog.Logger, stdin io.Reader, stdout io.Writer) error {
	b := &stdioBridge{r: r, logger: logger, out: stdout, paramHeaders: map[string][]protocol.ParamHeader{}, listing: map[string]bool{}}
	b.listenCtx, b.stopListening = context.WithCancel(context.WithoutCancel(ctx))
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		b.endSession()
		b.wg.Wait()
	}()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	// The reader is not joined: a read of stdin cannot be interrupted, and
	// it ends with stdin (EOF) or the process, which exits on return.
	go func() {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), bridgeMaxFrame)
		for sc.Scan() {
			line := bytes.Clone(bytes.TrimSpace(sc.Bytes()))
			if len(line) == 0 {
				continue
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				return
			}
		}
		readErr <- sc.Err()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			return err
		case line := <-lines:
			b.relay(ctx, line)
		}
	}
}

// bridged is what the bridge reads of a message.
type bridged struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// relay posts one message from the client; a request's answer is written
// when it comes, on a goroutine of its own, so that a long call does not
// hold the others.
func (b *stdioBridge) relay(ctx context.Context, line []byte) {
	var m bridged
	if err := json.Unmarshal(line, &m); err != nil {
		b.write(protocol.AppendError(nil, nil, protocol.CodeParseError, "parse error: "+err.Error(), nil))
		return
	}
	if m.Method == protocol.MethodToolsList && len(m.ID) > 0 {
		b.mu.Lock()
		b.listing[string(m.ID)] = true
		b.mu.Unlock()
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.post(ctx, line, m); err != nil && len(m.ID) > 0 && m.Method != "" && ctx.Err() == nil {
			b.write(protocol.AppendError(nil, m.ID, protocol.CodeInternalError, "mcpvisor stdio: the sidecar at "+b.r.base+": "+err.Error(), nil))
		}
	}()
}

// post sends one message and relays what answers it.
func (b *stdioBridge) post(ctx context.Context, line []byte, m bridged) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.r.base+"/mcp", bytes.NewReader(line))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	b.setHeaders(req.Header, m)
	resp, err := b.r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if m.Method == protocol.MethodInitialize {
		b.mu.Lock()
		b.session = resp.Header.Get("Mcp-Session-Id")
		b.mu.Unlock()
	}
	switch ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); {
	case resp.StatusCode == http.StatusAccepted:
		return nil
	case ct == "text/event-stream":
		return b.relayEvents(resp.Body, nil)
	case ct == "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, bridgeMaxFrame))
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(body)) > 0 {
			b.deliver(body)
			return nil
		}
	}
	if resp.StatusCode >= 300 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// setHeaders sets what the sidecar needs to know of the session and, for
// a modern request, the headers its revision mirrors from the body.
func (b *stdioBridge) setHeaders(h http.Header, m bridged) {
	h.Set("Authorization", "Bearer "+b.r.token)
	b.mu.Lock()
	session, version := b.session, b.version
	var params []protocol.ParamHeader
	if m.Method == protocol.MethodToolsCall {
		if name, ok := nameOf(m); ok {
			params = b.paramHeaders[name]
		}
	}
	b.mu.Unlock()
	if session != "" {
		h.Set("Mcp-Session-Id", session)
	}
	if v := modernVersionOf(m.Params); v != "" {
		version = v
	}
	if version != "" {
		h.Set("MCP-Protocol-Version", version)
	}
	if m.Method == "" || !protocol.IsModern(version) {
		return
	}
	h.Set("Mcp-Method", m.Method)
	if name, ok := nameOf(m); ok {
		h.Set("Mcp-Name", protocol.EncodeHeaderValue(name))
	}
	if len(params) > 0 {
		var p struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p)
		for _, f := range protocol.ParamHeaderValues(params, p.Arguments) {
			h.Set(f.Name, f.Value)
		}
	}
}

// nameOf is what Mcp-Name mirrors of a request, when it names something.
func nameOf(m bridged) (string, bool) { return protocol.MirroredName(m.Method, m.Params) }

// modernVersionOf is the protocol version a modern request's _meta names.
func modernVersionOf(params json.RawMessage) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(p.Meta[protocol.MetaProtocolVersion], &v)
	return v
}

// relayEvents writes each event of an SSE body to stdout; lastID, when
// not nil, keeps the id of the last event (for the GET stream's resume).
func (b *stdioBridge) relayEvents(body io.Reader, lastID *string) error {
	rd := sse.NewReader(body, bridgeMaxFrame)
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if lastID != nil && ev.ID != "" {
			*lastID = ev.ID
		}
		if len(bytes.TrimSpace(ev.Data)) > 0 {
			b.deliver(ev.Data)
		}
	}
}

// deliver writes a message from the sidecar to the client, learning what
// it needs on the way: the negotiated version from initialize's result
// (then it listens on the GET stream), and the tools' param headers from
// tools/list's.
func (b *stdioBridge) deliver(msg []byte) {
	var m bridged
	if json.Unmarshal(msg, &m) == nil && len(m.ID) > 0 && m.Method == "" && len(m.Result) > 0 {
		b.learn(m)
	}
	b.write(msg)
}

func (b *stdioBridge) learn(m bridged) {
	var res struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Tools           []protocol.Tool `json:"tools"`
		NextCursor      *string         `json:"nextCursor"`
	}
	if json.Unmarshal(m.Result, &res) != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if res.ProtocolVersion != "" && b.version == "" {
		b.version = res.ProtocolVersion
		if b.session != "" && !b.listening {
			b.listening = true
			b.wg.Add(1)
			go b.listen()
		}
	}
	if b.listing[string(m.ID)] {
		delete(b.listing, string(m.ID))
		for _, t := range res.Tools {
			if hs, err := protocol.ParamHeaders(t.InputSchema); err == nil && len(hs) > 0 {
				b.paramHeaders[t.Name] = hs
			}
		}
	}
}

// listen relays the session's GET stream (the sidecar's requests and
// notifications), opened again with Last-Event-ID when it drops, until
// the bridge ends.
func (b *stdioBridge) listen() {
	defer b.wg.Done()
	ctx := b.listenCtx
	var lastID string
	for attempt := 0; ; attempt++ {
		b.mu.Lock()
		session, version := b.session, b.version
		b.mu.Unlock()
		if session == "" {
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.r.base+"/mcp", nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+b.r.token)
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", version)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := b.r.client.Do(req)
		if err == nil {
			if resp.StatusCode == http.StatusOK {
				attempt = 0
				_ = b.relayEvents(resp.Body, &lastID)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound {
				return
			}
		}
		if !b.sleep(time.Duration(min(attempt+1, 10)) * 200 * time.Millisecond) {
			return
		}
	}
}

// sleep waits d unless the bridge ends first.
func (b *stdioBridge) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-b.listenCtx.Done():
		return false
	}
}

// endSession deletes the session and ends its GET stream.
func (b *stdioBridge) endSession() {
	defer b.stopListening()
	b.mu.Lock()
	session := b.session
	b.session = ""
	b.mu.Unlock()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, b.r.base+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+b.r.token)
	req.Header.Set("Mcp-Session-Id", session)
	if resp, err := b.r.client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// write writes one message and its newline to the client.
func (b *stdioBridge) write(msg []byte) {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	msg = bytes.TrimSpace(msg)
	if _, err := b.out.Write(append(msg[:len(msg):len(msg)], '\n')); err != nil {
		b.logger.Debug("stdio: writing to the client", "err", err)
	}
}
