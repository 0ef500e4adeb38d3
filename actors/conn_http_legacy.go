package actors

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpvisor/mcpvisor/protocol/sse"
)

// fallBackToLegacy switches to the 2024-11-05 transport: GET the SSE
// stream, wait for the endpoint event, then POST the initialize again there.
func (c *httpConn) fallBackToLegacy(init outMsg) {
	resp, err := c.get(c.ctx, "")
	if err != nil {
		c.fail(fmt.Errorf("legacy HTTP+SSE: %s", c.redact(err.Error())))
		return
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		drain(resp)
		c.fail(fmt.Errorf("initialize refused, and no legacy HTTP+SSE stream either (GET answered HTTP %d)", resp.StatusCode))
		return
	}
	r := sse.NewReader(resp.Body, c.spec.MaxFrame)
	var endpoint string
	for endpoint == "" {
		ev, err := r.Next()
		if err != nil {
			drain(resp)
			c.fail(fmt.Errorf("legacy HTTP+SSE: the stream ended before the endpoint event: %v", err))
			return
		}
		if ev.Type == "endpoint" {
			endpoint = strings.TrimSpace(string(ev.Data))
		}
	}
	base, _ := url.Parse(c.endpoint)
	ep, err := base.Parse(endpoint)
	if err != nil || ep.Scheme != base.Scheme || ep.Host != base.Host {
		drain(resp)
		c.fail(permanent(fmt.Errorf("legacy HTTP+SSE: the endpoint event names another origin or an invalid URL")))
		return
	}
	c.mu.Lock()
	c.legacyPost = ep.String()
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer drain(resp)
		for {
			ev, err := r.Next()
			if err != nil {
				// An oversized event ends the stream (the reader abandons
				// it): the call it answered fails as too large, the others
				// with the connection.
				var tl *sse.TooLargeError
				if errors.As(err, &tl) {
					c.tooLarge(tl, -1)
				}
				if c.ctx.Err() == nil {
					c.fail(fmt.Errorf("legacy HTTP+SSE: the stream ended: %v", err))
				}
				return
			}
			if len(ev.Data) > 0 && (ev.Type == "" || ev.Type == "message") {
				c.deliverFrame(ev.Data)
			}
		}
	}()
	c.post(init)
}
