package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// Call runs tools/call for a namespaced tool and returns the raw result.
// name may end in the name the tool is exposed by or the server's own; the
// server is sent its own. It blocks until the result, the call's timeout,
// or ctx; an abandoned call is cancelled at the server
// (notifications/cancelled). opts may be nil.
func (r *Runtime) Call(ctx context.Context, name string, args, meta json.RawMessage, opts *CallOptions) (json.RawMessage, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	server, tool, ok := SplitToolName(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q is neither a namespaced tool name (mcp__<server>__<tool>) nor one a server exposes by its own name", ErrUnknownTool, name)
	}
	e := r.snap.Load().byName[server]
	if e == nil {
		return nil, fmt.Errorf("%w: %q (tool %q)", ErrUnknownServer, server, name)
	}
	if cat := e.catalog.Load(); cat != nil {
		t, ok := cat.resolve(tool)
		switch {
		case ok:
			tool = t.Tool
		case cat.restored:
			// Decided against the live catalog once the server is ready.
		default:
			if err := cat.withheld(server, tool); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: server %q has no tool %q", ErrUnknownTool, server, tool)
		}
	}
	e, release := r.laneFor(e, opts)
	if release != nil {
		defer release()
	}
	m := e.newCallMsg()
	m.tool, m.args, m.meta = tool, args, meta
	if opts != nil {
		m.task, m.timing = opts.Task, opts.Timing
		if m.timing != nil {
			m.timing.clear()
		}
		if len(opts.Input) > 0 {
			if err := m.addInput(opts.Input); err != nil {
				return nil, err
			}
		}
	}
	return r.do(ctx, e, name, m, opts)
}

// newCallMsg is a call message with its reply channel: a spent one
// (recycle), or a new one.
func (e *serverEntry) newCallMsg() *callMsg {
	if m, _ := e.msgs.Get().(*callMsg); m != nil {
		return m
	}
	return &callMsg{reply: make(chan callReply, 1)}
}

// recycle keeps m for another call, once nothing refers to it any more: its
// one answer came on its reply channel, which is empty again, and it went
// by a ready stdio connection, whose reader lets go of a call when it
// answers it. A call cancelled or timed out is left to the garbage
// collector: the actor may yet hold it (cancelMsg), and so may the
// AfterFunc of a leader whose context ended.
func (e *serverEntry) recycle(m *callMsg) {
	frame := m.frame
	if cap(frame) > maxKeptFrame {
		frame = nil
	}
	*m = callMsg{reply: m.reply, frame: frame[:0], kick: m.kick}
	e.msgs.Put(m)
}

// maxKeptFrame bounds the frame buffer a recycled call message keeps.
const maxKeptFrame = 4 << 10

// newTimer is a timer set to fire in d: a spent one, or a new one.
func (e *serverEntry) newTimer(d time.Duration) *time.Timer {
	if t, _ := e.timers.Get().(*time.Timer); t != nil {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

// keepTimer stops t and keeps it for newTimer, with nothing left in its
// channel (a program built for Go before 1.23 has asynchronous timer
// channels, which Stop does not drain).
func (e *serverEntry) keepTimer(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	e.timers.Put(t)
}

// Request sends one request of any method to a server (resources/read,
// tasks/get, logging/setLevel…) and returns its raw result. It waits for a
// server still starting, like a call, and is bounded the same way. opts may
// be nil.
func (r *Runtime) Request(ctx context.Context, server, method string, params json.RawMessage, opts *CallOptions) (json.RawMessage, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	e := r.snap.Load().byName[server]
	if e == nil {
		return nil, errUnknownServer(server)
	}
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	e, release := r.laneFor(e, opts)
	if release != nil {
		defer release()
	}
	m := e.newCallMsg()
	m.method, m.params = method, params
	if opts != nil {
		if m.timing = opts.Timing; m.timing != nil {
			m.timing.clear()
		}
	}
	return r.do(ctx, e, method, m, opts)
}

// do sends m (directly when the server is ready, else through its actor)
// and waits for its answer.
func (r *Runtime) do(ctx context.Context, e *serverEntry, what string, m *callMsg, opts *CallOptions) (json.RawMessage, error) {
	raw, spent, err := r.wait(ctx, e, what, m, opts)
	if spent && ctx.Err() == nil {
		// A leader's AfterFunc on ctx was stopped before it could run.
		e.recycle(m)
	}
	return raw, err
}

// wait is do's sending and waiting; spent reports that m was answered
// on its reply channel over a ready stdio connection (recycle).
func (r *Runtime) wait(ctx context.Context, e *serverEntry, what string, m *callMsg, opts *CallOptions) (_ json.RawMessage, spent bool, _ error) {
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	sub := o.Progress
	if sub == nil && o.OnProgress != nil {
		sub = e.watchProgress()
		defer sub.Close()
	}
	var progress <-chan Progress
	if sub != nil {
		progress = sub.c
		if err := m.addMeta(protocol.MetaProgressToken, sub.tokJSON); err != nil {
			return nil, false, fmt.Errorf("%s: %w", what, err)
		}
	}
	var rd *stdoutReader // set when this caller may read its own response
	if f := e.fast.Load(); f != nil {
		// Ready: send it from this goroutine; the reader answers it here.
		var headers []protocol.ParamHeader
		if m.method == "" {
			// Resolved again: the catalog was not known when Call looked.
			t, ok := f.cat.resolve(m.tool)
			if !ok {
				if err := f.cat.withheld(e.name, m.tool); err != nil {
					return nil, false, err
				}
				return nil, false, fmt.Errorf("%w: server %q has no tool %q", ErrUnknownTool, e.name, m.tool)
			}
			m.tool = t.Tool
			if err := m.applyTask(t, f.tasks); err != nil {
				return nil, false, err
			}
			headers = f.cat.paramHeaders(m.tool)
		}
		if err := startCall(f.conn, m, f.era, headers); err != nil {
			return nil, false, fmt.Errorf("server %q: %w", e.name, err)
		}
		if c, ok := f.conn.(*stdioConn); ok {
			rd = c.rd // over stdio it may read the pipe itself
		}
	} else {
		r.send(e.pid, m) // starting (the actor queues it) or unavailable
	}
	if o.Timeout <= 0 {
		o.Timeout = e.spec.CallTimeout
	}
	if o.MaxTotalTimeout <= 0 {
		o.MaxTotalTimeout = e.spec.MaxTotalTimeout
	}
	o.ResetTimeoutOnProgress = o.ResetTimeoutOnProgress || e.spec.ResetTimeoutOnProgress
	t := newCallTimer(&e.clock, o.Timeout, o.MaxTotalTimeout)
	var lead <-chan struct{} // the read token, when this call is in line for it
	if rd != nil {
		// A call that watches progress waits the ordinary way, so that
		// each notification reaches it while it waits.
		if lead = rd.enqueue(m, progress == nil); lead != nil {
			defer rd.leave(m)
			select {
			case <-lead:
				// The token was free: read at once, with no timer to set.
				lead = nil
				if rep, ok := rd.lead(ctx, m, leadDeadline(&t)); ok {
					return answerOf(ctx, what, rep, rd != nil)
				}
			default:
			}
		}
	}
	left, _, _ := t.remaining() // less than o.Timeout if this call has led
	timer := e.newTimer(max(left, 0))
	defer e.keepTimer(timer)
	var resumed <-chan struct{}
	for {
		select {
		case <-lead:
			lead = nil
			if rep, ok := rd.lead(ctx, m, leadDeadline(&t)); ok {
				return answerOf(ctx, what, rep, rd != nil)
			}
			// Not answered yet: the cases below say why, or wait for it.
		case rep := <-m.reply:
			drainProgress(progress, o.OnProgress)
			return answerOf(ctx, what, rep, rd != nil)
		case p := <-progress:
			if o.OnProgress != nil {
				o.OnProgress(p)
			}
			if o.ResetTimeoutOnProgress {
				t.progressed()
			}
		case <-resumed:
			resumed = nil
			timer.Reset(0) // look again now that the clock runs
		case <-timer.C:
			left, wait, total := t.remaining()
			switch {
			case wait != nil:
				resumed = wait // stood still: nothing counts until it runs
			case left > 0:
				timer.Reset(left)
			default:
				r.send(e.pid, &cancelMsg{call: m, reason: "timeout"})
				if total {
					return nil, false, fmt.Errorf("%s: %w: over the maximum total of %s", what, ErrTimeout, o.MaxTotalTimeout)
				}
				return nil, false, fmt.Errorf("%s: %w after %s", what, ErrTimeout, o.Timeout)
			}
		case <-ctx.Done():
			r.send(e.pid, &cancelMsg{call: m, reason: "cancelled by the caller"})
			return nil, false, fmt.Errorf("%s: %w: %w", what, ErrCancelled, ctx.Err())
		case <-e.stopped:
			// The actor stopped before it could answer (unregistered, closed).
			select {
			case rep := <-m.reply:
				return rep.result, false, rep.err
			default:
			}
			return nil, false, fmt.Errorf("%w: server %q was stopped", ErrUnavailable, e.name)
		}
	}
}

// answerOf is answered, and whether m is spent (wait): stdio, when its
// answer came over a ready stdio connection.
func answerOf(ctx context.Context, what string, rep callReply, stdio bool) (json.RawMessage, bool, error) {
	raw, err := answered(ctx, what, rep)
	return raw, stdio, err
}

// answered is a call's answer, unless its caller cancelled it meanwhile:
// then the answer and the cancellation raced (a server that answers at
// once when told its question was withdrawn, say), and the call is
// cancelled whichever won, so that it reads the same in the history, the
// traces and the gateway every time.
func answered(ctx context.Context, what string, rep callReply) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil && rep.err == nil {
		return nil, fmt.Errorf("%s: %w: %w", what, ErrCancelled, err)
	}
	return rep.result, rep.err
}

// leadDeadline is when a caller reading its own response must stop to look
// at its timeout: when the time left now runs out, or never (zero: it does
// not lead) while a server request holds the clock still.
func leadDeadline(t *callTimer) time.Time {
	left, wait, _ := t.remaining()
	if wait != nil || left <= 0 {
		return time.Time{}
	}
	return time.Now().Add(left)
}

// drainProgress hands on the notifications that arrived before the answer.
func drainProgress(c <-chan Progress, fn func(Progress)) {
	if c == nil || fn == nil {
		return
	}
	for {
		select {
		case p := <-c:
			fn(p)
		default:
			return
		}
	}
}

func errUnknownServer(name string) error { return fmt.Errorf("%w: %q", ErrUnknownServer, name) }

// startCall sends m as a tools/call on c. It runs on the caller's
// goroutine when the server is ready (the fast path), or in the actor for
// calls queued during start-up. era is the server's modern era (nil for a
// legacy server) and headers the called tool's x-mcp-header annotations.
func startCall(c conn, m *callMsg, era *modernEra, headers []protocol.ParamHeader) error {
	meta, params := m.meta, m.params
	if era != nil {
		var err error
		if m.method == "" {
			meta, err = protocol.JoinMeta(era.meta, m.meta)
		} else {
			params, err = withEraMeta(m.params, era)
		}
		if err != nil {
			return fmt.Errorf("%s: _meta: %w", m.what(), err)
		}
	}
	p := &m.pending // started once: the message carries its table entry
	*p = pendingReq{kind: reqCall, call: m}
	id, err := c.pending().add(p)
	if err != nil {
		return err
	}
	var out outMsg
	if m.method == "" {
		m.frame = protocol.AppendCallTool(m.frameBuf(96+len(m.tool)+len(m.args)+len(meta)), id, m.tool, m.args, meta)
		out = requestOut(id, protocol.MethodToolsCall, m.frame)
	} else {
		m.frame = protocol.AppendRequest(m.frameBuf(64+len(m.method)+len(params)), id, m.method, params)
		out = requestOut(id, m.method, m.frame)
	}
	if era != nil {
		out.modern = era.version
		if era.http {
			out.name, out.headers = requestHeaders(m, headers)
		}
	}
	if m.timing != nil {
		m.timing.start.Store(time.Now().UnixNano())
	}
	if err := c.send(out); err != nil {
		c.pending().takeCall(m)
		return err
	}
	if m.timing != nil {
		m.timing.end.Store(time.Now().UnixNano())
	}
	return nil
}

// requestHeaders returns what a modern HTTP request mirrors into headers
// (SEP-2243): the Mcp-Name of tools/call, prompts/get, resources/read and
// the tasks methods, and a tool's x-mcp-header arguments.
func requestHeaders(m *callMsg, annotated []protocol.ParamHeader) (name string, headers []protocol.HeaderField) {
	if m.tool != "" && (m.method == "" || m.method == protocol.MethodToolsCall) {
		if len(annotated) > 0 {
			headers = protocol.ParamHeaderValues(annotated, m.args)
		}
		return m.tool, headers
	}
	name, _ = protocol.MirroredName(m.method, m.params)
	return name, nil
}

// fastPath is what a caller needs to send a call without the actor: the
// ready connection and its catalog. The actor publishes it on becoming
// ready and withdraws it on leaving ready.
type fastPath struct {
	conn  conn
	cat   *catalog
	tasks bool       // the server declared tasks.requests.tools.call
	era   *modernEra // nil: a legacy server
}
