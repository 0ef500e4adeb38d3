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
	"time"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/outbound"
	"github.com/mcpvisor/mcpvisor/protocol"
)

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
		c.fail(permanent(err))
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.setHeaders(req, &m, !isInit)
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
		c.fail(fmt.Errorf("%w: the server answered 404 to our session id", ErrSessionExpired))
		return
	case resp.StatusCode == http.StatusAccepted:
		if isRequest {
			c.deliverError(reqID, "the server answered 202 Accepted to a request")
		}
		return
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		if isRequest {
			if handled, body := c.deliverErrorBody(resp, reqID); !handled {
				c.deliverError(reqID, fmt.Sprintf("HTTP %d from %s: %s", resp.StatusCode, c.where(target), c.excerpt(body)))
			}
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
		// The body answers this request, whatever id it names.
		if id, ok := parseID(reqID); ok {
			c.router.failUnreadable(id, err)
		}
		return
	}
	c.deliverMsg(msg, len(b))
	// The answer must carry the id that was sent (seed 002, finding 3): a
	// server request, a notification or another id leaves this call open.
	if msg.Kind != protocol.KindResponse || !bytes.Equal(msg.ID, reqID) {
		c.deliverError(reqID, "the reply carried no response to this request")
	}
}

// deliverErrorBody delivers the JSON-RPC error response that an HTTP error
// status carries for request reqID (a modern server answers 400 with
// UnsupportedProtocolVersion or HeaderMismatch): era detection and the
// caller need the error itself, not the status. It reports whether there
// was one, and otherwise returns what it read of the body, for the message.
func (c *httpConn) deliverErrorBody(resp *http.Response, reqID json.RawMessage) (bool, io.Reader) {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return false, resp.Body
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return false, bytes.NewReader(b)
	}
	msg, err := protocol.Classify(b)
	if err != nil || msg.Kind != protocol.KindResponse || msg.Error == nil {
		return false, bytes.NewReader(b)
	}
	// A server that could not parse the request answers id null.
	msg.ID = reqID
	c.deliverMsg(msg, len(b))
	return true, nil
}

// deliverFrame classifies one inbound message (an SSE event's data) and
// hands it on. A frame that cannot be classified fails the request it
// answers, if its id names one in flight, and is otherwise skipped and
// counted. It reports whether the frame was a message.
func (c *httpConn) deliverFrame(b []byte) bool {
	msg, err := protocol.Classify(b)
	if err != nil {
		if _, ok := c.router.unreadable(b, err); !ok {
			c.router.skip(b, err, c.ctx.Done())
		}
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
	msg := protocol.Message{Kind: protocol.KindResponse, ID: id, Error: &protocol.Error{Code: codeTransport, Message: reason}}
	c.deliverMsg(msg, len(id)+len(reason))
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
	if errors.Is(err, oauth.ErrNeedsAuth) {
		// Only a sign-in helps: the actor parks the server until then.
		c.fail(permanent(err))
		return
	}
	text := c.redact(err.Error())
	if errors.Is(err, outbound.ErrPrivateAddress) {
		text += `; to allow it, add "allowPrivate": true to the server's entry`
	}
	for _, kind := range []error{outbound.ErrPrivateAddress, outbound.ErrRedirectRefused} {
		if errors.Is(err, kind) {
			c.fail(permanent(&redactedError{msg: text, kind: kind}))
			return
		}
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" || m.kind == outRequest && m.method == protocol.MethodInitialize {
		c.fail(fmt.Errorf("%s unreachable: %s", c.where(c.endpoint), text))
		return
	}
	if m.kind == outRequest {
		c.deliverError(m.rawID(), text)
	}
}
