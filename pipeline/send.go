package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/tracing"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// send is the pipeline's last stage: the request goes to its server
// (Config.Transport), and the server's raw answer is left in c.raw for the
// stages above.
func (p *Pipeline) send(ctx context.Context, c *Call) (*Result, error) {
	o := c.Options
	meta := p.callMeta(ctx, c.Server, o.ClientCapabilities)
	if !c.ToolCall() {
		params := c.Params
		if len(meta) > 0 {
			var err error
			if params, err = joinParamsMeta(params, meta); err != nil {
				return nil, err
			}
		}
		c.ro = actors.CallOptions{Timeout: o.Timeout, Legacy: o.asksAsLegacy()}
		ro := &c.ro
		var err error
		c.raw, err = c.timed(ctx, func() (json.RawMessage, error) {
			return p.cfg.Transport.Request(ctx, c.Server, c.Method, withInput(params, c.input), ro)
		})
		return nil, err
	}
	// Kept in the call, not allocated: a plain call's send makes nothing.
	c.ro = actors.CallOptions{
		OnProgress:             o.OnProgress,
		Timeout:                o.Timeout,
		ResetTimeoutOnProgress: o.ResetTimeoutOnProgress,
		MaxTotalTimeout:        o.MaxTotalTimeout,
		Task:                   taskField(o.TaskTTL), // used if the tool runs as a task
		Progress:               c.progress,
		Input:                  c.input,
		Legacy:                 o.asksAsLegacy(),
	}
	ro := &c.ro
	var err error
	c.raw, err = c.timed(ctx, func() (json.RawMessage, error) {
		return p.cfg.Transport.Call(ctx, c, meta, ro)
	})
	return nil, err
}

// asksAsLegacy reports whether the call is made for a legacy client that
// answers a server's questions (CallOptions.LegacyClient).
func (o *CallOptions) asksAsLegacy() bool {
	return o.LegacyClient && (o.Elicitation != nil || o.Sampling != nil || o.Roots != nil)
}

// timed runs send, which sends with c.ro, adds to c.ServerStart the time
// the request was held for its server to start, and records the
// request's phases (traceSend) when ctx is traced. c.timing is the
// call's own, reused by each of its requests (the runtime clears it).
func (c *Call) timed(ctx context.Context, send func() (json.RawMessage, error)) (json.RawMessage, error) {
	c.ro.Timing = &c.timing
	begin := time.Now()
	raw, err := send()
	end := time.Now()
	if from, until := c.timing.Held(); !from.IsZero() {
		if until.IsZero() || until.After(end) { // never let go: the start failed, or the caller stopped waiting
			until = end
		}
		c.ServerStart += until.Sub(from)
	}
	if tracing.Recording(ctx) {
		traceSend(ctx, &c.timing, begin, end, err)
	}
	return raw, err
}

// traceSend records a traced request's phases as child spans of ctx's:
// "queue wait" until its frame was written (a server still starting, the
// actor's mailbox, the encoding), "send" the write itself, and "server
// time" from then to the answer. A request never written is one "queue
// wait", failed.
func traceSend(ctx context.Context, t *actors.CallTiming, begin, end time.Time, err error) {
	start, sent := t.Sent()
	if start.IsZero() {
		tracing.Interval(ctx, "queue wait", begin, end, errorType(err))
		return
	}
	tracing.Interval(ctx, "queue wait", begin, start, "")
	tracing.Interval(ctx, "send", start, sent, "")
	tracing.Interval(ctx, "server time", sent, end, errorType(err))
}

// callMeta is the _meta a request to server carries besides the modern
// era's own: the caller's trace context, and, for a modern server, the
// capabilities of the client the request is made for.
func (p *Pipeline) callMeta(ctx context.Context, server string, clientCaps json.RawMessage) json.RawMessage {
	meta := TraceMeta(ctx)
	if len(clientCaps) == 0 || server == "" {
		return meta
	}
	if st, ok := p.cfg.Runtime.ServerStatus(server); !ok || !protocol.IsModern(st.ProtocolVersion) {
		return meta
	}
	caps, err := protocol.MergeMeta(nil, protocol.MetaClientCapabilities, clientCaps)
	if err != nil {
		return meta
	}
	if joined, err := protocol.JoinMeta(meta, caps); err == nil {
		return joined
	}
	return meta
}

// joinParamsMeta adds meta's members to params' _meta (params' own win).
func joinParamsMeta(params, meta json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	joined, err := protocol.JoinMeta(meta, p.Meta)
	if err != nil {
		return nil, err
	}
	return protocol.MergeMeta(params, "_meta", joined)
}

// ProgressToken is sub's token ("" without one).
func ProgressToken(sub *actors.ProgressSub) string {
	if sub == nil {
		return ""
	}
	return sub.Token()
}
