package mcpvisor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/flows"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/internal/tracing"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Call is one request on its way through the host's request pipeline: a
// tool call (Method tools/call), or a resources/read, prompts/get or
// completion/complete made with Host.ReadResource, Host.GetPrompt or
// Host.Forward. The host makes one for every such request, whoever makes it
// (Host.Call, a Session, the gateway, the sidecar), and hands it down the
// pipeline's stages; a stage may read it, change Arguments or Params, or
// answer without calling on. The stages that only make sense for a tool
// (grants, arguments, host tools, result decoding, tasks) pass other
// methods on untouched.
type Call struct {
	// Method is the request's MCP method: tools/call, resources/read,
	// prompts/get or completion/complete.
	Method string
	// Tool is the tool's namespaced name with the server's own name for
	// it, mcp__<server>__<tool>, or one of the host's own tools; "" for
	// another method. A call by
	// the name a tool is exposed under, when that differs (an unprefixed
	// server's bare name, or a mapped one: see Tool.Name), gets this name
	// here, so every stage, the history and the grants see one identity;
	// a name no server exposes is kept as the caller gave it.
	Tool string
	// CalledAs is the name the caller used when it is not Tool: the name
	// the tool is exposed under, as a model saw it. "" when they are one.
	CalledAs string
	// Server and Name split Tool: the server and the server's own name for
	// the tool. A host tool has no Server and its own Name. For another
	// method, Name is what the request is about: the prompt's name, the
	// resource's URI ("" for completion/complete).
	Server, Name string
	// Arguments is a tool call's JSON object; nil means {}.
	Arguments json.RawMessage
	// Params is another method's params object, as the client gave it
	// (nil for tools/call).
	Params json.RawMessage
	// Scope is the calling session and stack frame; zero for Host.Call,
	// which no grant limits.
	Scope Scope
	// Options are the caller's; never nil.
	Options *CallOptions
	// Start is when the call entered the pipeline.
	Start time.Time

	def      *Tool // the catalog's entry for Tool, once known; never changed
	opts     CallOptions
	raw      json.RawMessage     // the server's CallToolResult, once received
	input    json.RawMessage     // an input round's inputResponses and requestState, for the retry
	asker    *flows.Asker        // the call's own elicitation or sampling handler
	progress *actors.ProgressSub // the call's progress, kept through a task's polling
}

// CallFunc runs a call: it returns the tool's result, or an error as
// Host.Call documents them. A nil error comes with a non-nil Result: an
// embedder's stage that returns neither is answered with ErrNoResult.
type CallFunc func(ctx context.Context, c *Call) (*Result, error)

// CallMiddleware is one stage of the call pipeline: it wraps the stages
// after it. It may act before and after calling next, or answer itself
// (a tool error for a refused call, say) without calling next.
type CallMiddleware func(next CallFunc) CallFunc

// pipeline builds the host's request pipeline, outermost stage first
// (the stages marked * pass methods other than tools/call on untouched):
//
//	trace        a span of the request (Options.TracerProvider)
//	record       the history, for every request (Journal.NoCallHistory)
//	Options.CallMiddleware, in order: the embedder's stages
//	grants*      a session's call needs its tool's group granted
//	arguments*   valid JSON; inputSchema when the server validates arguments
//	host tools*  the host's own tools, answered here
//	flows        the request's own elicitation and sampling handlers; progress
//	result*      decoding, outputSchema, media files, -32042
//	tasks*       a call the server runs as a task, polled to its end
//	input        input_required answers (2026-07-28): fulfilled, then retried
//	send         the server: the request itself
//
// Every concern a request must pass through is one stage here, so no
// early return can skip it, and no method has a loop of its own.
func (h *Host) pipeline() CallFunc {
	stages := []CallMiddleware{h.traceStage, h.recordStage}
	for _, mw := range h.opts.CallMiddleware {
		stages = append(stages, answered(mw))
	}
	stages = append(stages, h.grantStage, h.argumentStage, h.hostToolStage, h.flowStage, h.resultStage, h.taskStage, h.inputStage)
	return chain(h.send, stages...)
}

// answered holds an embedder's stage to CallFunc's contract, so the stages
// around it never see a call with neither a result nor an error.
func answered(mw CallMiddleware) CallMiddleware {
	return func(next CallFunc) CallFunc {
		inner := mw(next)
		return func(ctx context.Context, c *Call) (*Result, error) {
			res, err := inner(ctx, c)
			if res == nil && err == nil {
				err = fmt.Errorf("%s: %w", c.Tool, ErrNoResult)
			}
			return res, err
		}
	}
}

// chain wraps last in stages, the first outermost.
func chain(last CallFunc, stages ...CallMiddleware) CallFunc {
	for i := len(stages) - 1; i >= 0; i-- {
		last = stages[i](last)
	}
	return last
}

// newCall makes the pipeline's record of a call. An exposed name is
// resolved here, once: a host tool's stays as it is; an unprefixed
// server's bare name, or a mapped one, becomes the namespaced name with the
// server's own name for the tool, and is kept as CalledAs.
func (h *Host) newCall(scope Scope, tool string, args json.RawMessage, opts *CallOptions) *Call {
	c := &Call{Method: protocol.MethodToolsCall, Tool: tool, Arguments: args, Scope: scope, Options: opts, Start: time.Now()}
	if opts == nil {
		c.Options = &c.opts // one allocation for both
	}
	if server, name, ok := h.rt.ResolveTool(tool); ok {
		c.Server, c.Name = server, name
		if !spells(tool, server, name) {
			c.Tool, c.CalledAs = ToolName(server, name), tool
		}
	} else if server, name, ok := SplitToolName(tool); ok {
		c.Server, c.Name = server, name // a server the runtime does not list: it says why
	} else {
		c.Name = tool
	}
	return c
}

// newRequest makes the pipeline's record of a request of another method to
// server; subject is what it is about (Call.Name).
func (h *Host) newRequest(scope Scope, server, method, subject string, params json.RawMessage, opts *CallOptions) *Call {
	c := &Call{Method: method, Server: server, Name: subject, Params: params, Scope: scope, Options: opts, Start: time.Now()}
	if opts == nil {
		c.Options = &c.opts
	}
	return c
}

// toolCall reports whether c is a tools/call (a Call made without a Method
// is one).
func (c *Call) toolCall() bool { return c.Method == "" || c.Method == protocol.MethodToolsCall }

// spells reports whether tool is ToolName(server, name), without building
// that string: the usual call names its tool in full.
func spells(tool, server, name string) bool {
	rest, ok := strings.CutPrefix(tool, ToolPrefix)
	if !ok || len(rest) != len(server)+2+len(name) {
		return false
	}
	return rest[:len(server)] == server && rest[len(server):len(server)+2] == "__" && rest[len(server)+2:] == name
}

// call runs one call through the pipeline.
func (h *Host) call(ctx context.Context, scope Scope, tool string, args json.RawMessage, opts *CallOptions) (*Result, error) {
	return h.calls(ctx, h.newCall(scope, tool, args, opts))
}

// send is the pipeline's last stage: the call goes to its server's actor,
// and the server's raw answer is left in c.raw for the stages above.
func (h *Host) send(ctx context.Context, c *Call) (*Result, error) {
	o := c.Options
	if !c.toolCall() {
		return nil, h.sendRequest(ctx, c)
	}
	ro := &actors.CallOptions{
		OnProgress:             o.OnProgress,
		Timeout:                o.Timeout,
		ResetTimeoutOnProgress: o.ResetTimeoutOnProgress,
		MaxTotalTimeout:        o.MaxTotalTimeout,
		Task:                   taskField(o.TaskTTL), // used if the tool runs as a task
		Progress:               c.progress,
		Input:                  c.input,
	}
	tool := c.Tool
	if c.Server != "" {
		name, err := h.auth.InstanceFor(ctx, c.Server, o.User)
		if err != nil {
			return nil, err
		}
		if name != c.Server {
			tool = actors.ToolName(name, c.Name)
		}
	}
	var err error
	c.raw, err = timed(ctx, ro, func() (json.RawMessage, error) {
		if owner := h.remoteOwner(c.Server); owner != "" {
			// Placed on another member of the cluster: one hop there.
			return h.cluster.Forward(ctx, owner, member.Request{Server: c.Server, Tool: tool, Params: c.Arguments,
				Meta: h.callMeta(ctx, c.Server, o.ClientCapabilities), Timeout: o.Timeout, Task: ro.Task, Input: ro.Input,
				ResetTimeoutOnProgress: o.ResetTimeoutOnProgress, MaxTotalTimeout: o.MaxTotalTimeout, ProgressToken: progressToken(c.progress), OnProgress: o.OnProgress})
		}
		return h.rt.Call(ctx, tool, c.Arguments, h.callMeta(ctx, c.Server, o.ClientCapabilities), ro)
	})
	return nil, err
}

// sendRequest sends a request of another method, with the _meta a tool call
// carries (callMeta) and an input round's answers; the answer is left in
// c.raw.
func (h *Host) sendRequest(ctx context.Context, c *Call) error {
	params := c.Params
	if meta := h.callMeta(ctx, c.Server, c.Options.ClientCapabilities); len(meta) > 0 {
		var err error
		if params, err = joinParamsMeta(params, meta); err != nil {
			return err
		}
	}
	ro := &actors.CallOptions{Timeout: c.Options.Timeout}
	var err error
	c.raw, err = timed(ctx, ro, func() (json.RawMessage, error) {
		return h.serverRequest(ctx, c.Server, c.Method, withInput(params, c.input), ro)
	})
	return err
}

// timed runs send, which sends with ro, and records the request's phases
// (traceSend) when ctx is traced.
func timed(ctx context.Context, ro *actors.CallOptions, send func() (json.RawMessage, error)) (json.RawMessage, error) {
	if !tracing.Recording(ctx) {
		return send()
	}
	timing, begin := &actors.CallTiming{}, time.Now()
	ro.Timing = timing
	raw, err := send()
	traceSend(ctx, timing, begin, time.Now(), err)
	return raw, err
}

// progressToken is sub's token ("" without one).
func progressToken(sub *actors.ProgressSub) string {
	if sub == nil {
		return ""
	}
	return sub.Token()
}

// serverRequest sends a request of any method to a server: to the member of
// the cluster it runs on, when that is not this host.
func (h *Host) serverRequest(ctx context.Context, server, method string, params json.RawMessage, opts *actors.CallOptions) (json.RawMessage, error) {
	if owner := h.remoteOwner(server); owner != "" {
		r := member.Request{Server: server, Method: method, Params: params}
		if opts != nil {
			r.Timeout = opts.Timeout
		}
		return h.cluster.Forward(ctx, owner, r)
	}
	return h.rt.Request(ctx, server, method, params, opts)
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
