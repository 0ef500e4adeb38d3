package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/protocol/sse"
)

// readStream reads an SSE reply until the response to request id arrived,
// resuming with GET and Last-Event-ID when the stream ends early.
func (c *httpConn) readStream(ctx context.Context, body io.ReadCloser, reqID json.RawMessage, id int64) {
	lastID := ""
	var retry time.Duration
	for attempt := 0; ; attempt++ {
		done, last, r := c.consume(body, id)
		body.Close()
		if last != "" {
			lastID = last
		}
		if r > 0 {
			retry = r
		}
		if done || ctx.Err() != nil {
			return
		}
		if c.modern() {
			// 2026-07-28 streams are not resumable: the request is lost.
			c.deliverError(reqID, "the server closed the stream before the response")
			return
		}
		if attempt >= maxResumes || lastID == "" {
			c.deliverError(reqID, fmt.Sprintf("the server closed the stream before the response (%d reconnection(s))", attempt))
			return
		}
		if !waitRetry(ctx, retry, attempt) {
			return
		}
		resp, err := c.get(ctx, lastID)
		if err != nil {
			c.deliverError(reqID, "resuming the stream: "+c.redact(err.Error()))
			return
		}
		if resp.StatusCode == http.StatusMethodNotAllowed {
			drain(resp)
			c.deliverError(reqID, "the stream closed before the response and the server does not allow resuming it (GET 405)")
			return
		}
		if resp.StatusCode != http.StatusOK {
			drain(resp)
			c.deliverError(reqID, fmt.Sprintf("resuming the stream: HTTP %d", resp.StatusCode))
			return
		}
		body = resp.Body
	}
}

// consume delivers the events of one SSE stream. It reports whether the
// response to id was among them, the last event id and the last retry.
func (c *httpConn) consume(body io.Reader, id int64) (done bool, lastID string, retry time.Duration) {
	r := sse.NewReader(body, c.spec.MaxFrame)
	for {
		ev, err := r.Next()
		if err != nil {
			var tl *sse.TooLargeError
			if errors.As(err, &tl) {
				if tl.HasEventID {
					lastID = tl.EventID
				}
				// Only the event that answers this request ends the wait; an
				// oversized notification before it is dropped and logged.
				evID := tl.ID()
				if id >= 0 && (len(evID) == 0 || string(evID) == fmt.Sprint(id)) {
					c.router.oversized([]byte(fmt.Sprint(id)), tl.Size, tl.Limit)
					return true, lastID, retry
				}
				c.router.oversized(evID, tl.Size, tl.Limit)
				continue
			}
			return false, lastID, retry
		}
		if ev.HasID {
			lastID = ev.ID
		}
		if ev.HasRetry {
			retry = ev.Retry
		}
		if len(ev.Data) == 0 {
			continue // a priming event: its id and retry are all it carries
		}
		msg, err := protocol.Classify(ev.Data)
		if err != nil {
			continue
		}
		if msg.Kind == protocol.KindResponse {
			if rid, ok := msg.IntID(); ok && rid == id {
				done = true
			}
		}
		c.deliverMsg(msg, len(ev.Data))
		if done {
			return true, lastID, retry
		}
	}
}

// ready opens the GET stream for server-initiated messages once the
// session is ready. Frames sent after ready wait (briefly) until the GET
// has its answer, so the standalone stream is in place before any call: a
// server may otherwise route a call's resumed stream to it.
func (c *httpConn) ready() {
	c.mu.Lock()
	if c.getStarted || c.legacyPost != "" || c.era != nil {
		c.mu.Unlock()
		return
	}
	c.getStarted = true
	gate := make(chan struct{})
	c.gate = gate
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.standalone(gate)
	}()
}

// standalone keeps the GET stream open, resuming with Last-Event-ID. A 4xx
// answer (405: no stream offered; other client errors: the server does not
// take GETs) ends it; network and server errors are retried with backoff.
func (c *httpConn) standalone(gate chan struct{}) {
	openGate := sync.OnceFunc(func() { close(gate) })
	defer openGate()
	lastID := ""
	var retry time.Duration
	for attempt := 0; c.ctx.Err() == nil; attempt++ {
		resp, err := c.get(c.ctx, lastID)
		openGate()
		switch {
		case err != nil:
		case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
			drain(resp)
			return // no standalone stream: stop asking
		case resp.StatusCode != http.StatusOK:
			drain(resp)
		default:
			attempt = 0
			_, last, r := c.consume(resp.Body, -1)
			drain(resp)
			if last != "" {
				lastID = last
			}
			if r > 0 {
				retry = r
			}
		}
		if attempt >= maxResumes || !waitRetry(c.ctx, retry, attempt) {
			return
		}
	}
}

// waitRetry waits before reconnecting a stream: exactly the server's retry
// when it gave one ("C MUST respect retry"), else a capped backoff. It
// reports false if ctx ended first.
func waitRetry(ctx context.Context, retry time.Duration, attempt int) bool {
	wait := retry
	if wait <= 0 {
		wait = min(defaultResumeDelay<<attempt, maxResumeDelay)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *httpConn) get(ctx context.Context, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	c.setHeaders(req, nil, true)
	if lastID != "" {
		req.Header.Set(headerLastEventID, lastID)
	}
	return c.client.Do(req)
}
