package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
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
		end := c.consume(body, id)
		body.Close()
		if end.lastID != "" {
			lastID = end.lastID
		}
		if end.retry > 0 {
			retry = end.retry
		}
		if end.done || ctx.Err() != nil {
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
		if !waitRetry(ctx, retryDelay(retry, attempt, false)) {
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

// streamEnd is how one SSE stream ended.
type streamEnd struct {
	done   bool          // the request's response came, or the request failed
	lastID string        // the last event id
	retry  time.Duration // the last retry the server asked for
	cut    bool          // an event passed the frame limit: the stream was abandoned
}

// consume delivers the events of one SSE stream: the reply to request id,
// or the standalone stream (id < 0). At the first event over the frame
// limit it stops reading, fails what that event answered, and returns with
// cut set: the caller closes the body at once, dropping the connection, so
// that the rest of the event is never read.
func (c *httpConn) consume(body io.Reader, id int64) (end streamEnd) {
	r := sse.NewReader(body, c.spec.MaxFrame)
	for {
		ev, err := r.Next()
		if err != nil {
			var tl *sse.TooLargeError
			if errors.As(err, &tl) {
				if tl.HasEventID {
					end.lastID = tl.EventID
				}
				c.tooLarge(tl, id)
				end.cut, end.done = true, id >= 0
			}
			return end
		}
		if ev.HasID {
			end.lastID = ev.ID
		}
		if ev.HasRetry {
			end.retry = ev.Retry
		}
		if len(ev.Data) == 0 {
			continue // a priming event: its id and retry are all it carries
		}
		msg, err := protocol.Classify(ev.Data)
		if err != nil {
			// An answer that cannot be read fails its request now;
			// anything else is skipped, counted.
			failed, ok := c.router.unreadable(ev.Data, err)
			if !ok {
				c.router.skip(ev.Data, err, c.ctx.Done())
			} else if id >= 0 && failed == id {
				end.done = true
				return end
			}
			continue
		}
		if msg.Kind == protocol.KindResponse {
			if rid, ok := msg.IntID(); ok && rid == id {
				end.done = true
			}
		}
		c.deliverMsg(msg, len(ev.Data))
		if end.done {
			return end
		}
	}
}

// tooLarge fails what an oversized event answered: the request its id
// names, if any, and on a request's own stream (id >= 0) that request,
// whose response can no longer come on a stream that is being dropped.
func (c *httpConn) tooLarge(tl *sse.TooLargeError, id int64) {
	evID := tl.ID()
	if id < 0 {
		c.router.oversized(evID, tl.Size, tl.Limit)
		return
	}
	own := strconv.FormatInt(id, 10)
	if len(evID) > 0 && string(evID) != own {
		c.router.oversized(evID, tl.Size, tl.Limit)
	}
	c.router.oversized([]byte(own), tl.Size, tl.Limit)
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
// take GETs) ends it. Network and server errors, and a stream dropped for
// an event over the frame limit, are failures: retried with a backoff that
// grows with each one in a row, at most maxResumes times. A stream that
// ends cleanly resets the count.
func (c *httpConn) standalone(gate chan struct{}) {
	openGate := sync.OnceFunc(func() { close(gate) })
	defer openGate()
	lastID := ""
	var retry time.Duration
	for attempt := 0; c.ctx.Err() == nil; attempt++ {
		resp, err := c.get(c.ctx, lastID)
		openGate()
		failed := true
		switch {
		case err != nil:
		case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
			drain(resp)
			return // no standalone stream: stop asking
		case resp.StatusCode != http.StatusOK:
			drain(resp)
		default:
			end := c.consume(resp.Body, -1)
			if end.cut {
				resp.Body.Close() // drops the connection: the event is not read on
			} else {
				drain(resp)
				failed, attempt = false, 0
			}
			if end.lastID != "" {
				lastID = end.lastID
			}
			if end.retry > 0 {
				retry = end.retry
			}
		}
		if attempt >= maxResumes || !waitRetry(c.ctx, retryDelay(retry, attempt, failed)) {
			return
		}
	}
}

// retryDelay is how long to wait before reconnecting a stream: the
// server's retry when it gave one ("C MUST respect retry"), else a backoff
// that doubles with each attempt, capped. After a failure the wait is
// never shorter than the backoff, whatever retry the server asked for: a
// server that fails every stream is not reconnected to faster than one
// that fails any other way.
func retryDelay(retry time.Duration, attempt int, failed bool) time.Duration {
	backoff := min(defaultResumeDelay<<min(attempt, 16), maxResumeDelay)
	switch {
	case retry <= 0:
		return backoff
	case failed:
		return max(retry, backoff)
	}
	return retry
}

// waitRetry waits d before reconnecting a stream. It reports false if ctx
// ended first.
func waitRetry(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
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
