// Package pipeline is the host's request pipeline: the Call every request
// becomes, whoever makes it (Host.Call, a session, the gateway, the
// sidecar), the stages it passes on its way to its server and back, and
// the contract of a stage (Middleware over Func) that an embedder adds its
// own through (mcpvisor.Options.CallMiddleware).
//
// A Call is a tools/call, or a resources/read, prompts/get or
// completion/complete. The stages that only make sense for a tool (grants,
// arguments, host tools, result decoding, tasks) pass the other methods on
// untouched; trace, history, the embedder's stages, flows and the input
// rounds serve them all.
//
// The root package builds the host's pipeline with New; the types here
// are its public API's (mcpvisor.Call, mcpvisor.Result, mcpvisor.CallOptions
// are aliases of them).
package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/media"
	"github.com/mcpvisor/mcpvisor/internal/tracing"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Scope is who holds grants: a session and one of its stack frames.
type Scope = persistence.Scope

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
	// another method. A call by the name a tool is exposed under, when
	// that differs (an unprefixed server's bare name, or a mapped one: see
	// actors.Tool.Name), gets this name here, so every stage, the history
	// and the grants see one identity; a name no server exposes is kept as
	// the caller gave it.
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
	// ID names the request among the host's, for a person: the inbox shows
	// it beside an elicitation the call waits on, and its history record
	// keeps it. Set by NewCall and NewRequest.
	ID string

	// ServerStart is how long the call's requests were held while their
	// server started (or was signed in): the server's time, which Latency
	// leaves out. Set by the last stage as each request returns.
	ServerStart time.Duration

	wait personWait // the time spent waiting for a person (Waited)

	def      *actors.Tool        // the catalog's entry for Tool, once known; never changed
	opts     CallOptions         // Options when the caller gave none
	raw      json.RawMessage     // the server's CallToolResult, once received
	input    json.RawMessage     // an input round's inputResponses and requestState, for the retry
	progress *actors.ProgressSub // the call's progress, kept through a task's polling
	ro       actors.CallOptions  // what send sends with, in the call's own allocation
	timing   actors.CallTiming   // ro.Timing, likewise
}

// Func runs a call: it returns the tool's result, or an error as
// Host.Call documents them. A nil error comes with a non-nil Result: an
// embedder's stage that returns neither is answered with ErrNoResult.
type Func func(ctx context.Context, c *Call) (*Result, error)

// Middleware is one stage of the pipeline: it wraps the stages after it.
// It may act before and after calling next, or answer itself (a tool error
// for a refused call, say) without calling next.
type Middleware func(next Func) Func

// ToolCall reports whether c is a tools/call (a Call made without a Method
// is one).
func (c *Call) ToolCall() bool { return c.Method == "" || c.Method == protocol.MethodToolsCall }

// Raw is the server's answer as it wrote it, once a stage below received
// it (nil before, and for a call no server answered).
func (c *Call) Raw() json.RawMessage { return c.raw }

// Transport sends a request to its server: through the runtime, or, in a
// cluster, to the member the server runs on; for a per-user server, to
// the user's own instance.
type Transport interface {
	// Call sends tools/call of c's tool with c's arguments, meta and ro.
	Call(ctx context.Context, c *Call, meta json.RawMessage, ro *actors.CallOptions) (json.RawMessage, error)
	// Request sends a request of another method to server.
	Request(ctx context.Context, server, method string, params json.RawMessage, ro *actors.CallOptions) (json.RawMessage, error)
}

// Flows ties a call's own handlers (CallOptions.Elicitation, Sampling) to
// the requests its server sends while it runs, and answers a modern
// server's input requests with them or the host's.
type Flows interface {
	// Attach ties c's handlers to its server's requests until detach is
	// called; the context it returns carries them to a server on another
	// member.
	Attach(ctx context.Context, c *Call) (_ context.Context, detach func())
	// TaskStarted notes that the call ctx belongs to runs as task id: the
	// server's requests that name the task are the call's.
	TaskStarted(ctx context.Context, id string)
	// Fulfil answers one input request of an input_required result for the
	// call ctx belongs to.
	Fulfil(ctx context.Context, server string, req protocol.InputRequest) (json.RawMessage, error)
}

// Config is what New builds a host's pipeline from.
type Config struct {
	Runtime   *actors.Runtime
	Transport Transport
	Flows     Flows
	// Tasks polls the tasks servers run calls as.
	Tasks *actors.TaskPoller
	// Journal keeps the history; nil: no history.
	Journal *actors.Journal
	// KeepPayloads keeps each call's arguments and result in its history
	// record (a host tool's secrets redacted).
	KeepPayloads bool
	// Granted reports whether scope holds group (a server's name, the
	// config group, or one tool's namespaced name), granted or always on.
	Granted func(scope Scope, group string) bool
	// Validates reports whether server's arguments are checked against
	// their inputSchema (validateArguments).
	Validates func(server string) bool
	// HostTools answers the host's own tools; nil: none.
	HostTools Middleware
	// Middleware are the embedder's stages, the first outermost.
	Middleware []Middleware
	// MediaDir is where the media items of results are written, linked as
	// MediaURL+name ("": /v1/media/), each at most MaxMediaBytes decoded
	// (0: 32 MiB); MediaDir "": none are.
	MediaDir, MediaURL string
	MaxMediaBytes      int64
	// MaxInputRounds bounds a request's input rounds (0:
	// DefaultMaxInputRounds).
	MaxInputRounds int
	// TracerProvider makes the span of every request; nil: the global one.
	TracerProvider trace.TracerProvider
	Logger         *slog.Logger
}

// Pipeline is a host's request pipeline, built once.
type Pipeline struct {
	cfg      Config
	media    *media.Store // nil: no media files
	schemas  schemaCache
	inbound  tracing.Tracers // TraceRequest's
	run      Func
	inflight inflight // the calls past the flows stage, by server (InFlight)
	taskCaps capsMemo // clients' capabilities with the tasks extension (taskStage)
}

// New builds the pipeline, outermost stage first (the stages marked * pass
// methods other than tools/call on untouched):
//
//	trace        a span of the request (Config.TracerProvider)
//	record       the history, for every request (Config.Journal)
//	Config.Middleware, in order: the embedder's stages
//	grants*      a session's call needs its tool's group granted
//	arguments*   valid JSON; inputSchema when the server validates arguments
//	host tools*  the host's own tools, answered here (Config.HostTools)
//	flows        the request's own elicitation and sampling handlers; progress
//	result*      decoding, outputSchema, media files, -32042
//	tasks*       a call the server runs as a task, polled to its end
//	input        input_required answers (2026-07-28): fulfilled, then retried
//	send         the server: the request itself (Config.Transport)
//
// Every concern a request must pass through is one stage here, so no
// early return can skip it, and no method has a loop of its own.
func New(cfg Config) *Pipeline {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Pipeline{cfg: cfg}
	if cfg.MediaDir != "" {
		p.media = media.New(cfg.MediaDir, cfg.MediaURL, cfg.MaxMediaBytes)
	}
	stages := []Middleware{p.traceStage, p.recordStage}
	for _, mw := range cfg.Middleware {
		stages = append(stages, answered(mw))
	}
	stages = append(stages, p.grantStage, p.argumentStage)
	if cfg.HostTools != nil {
		stages = append(stages, cfg.HostTools)
	}
	stages = append(stages, p.flowStage, p.resultStage, p.taskStage, p.inputStage)
	p.run = Chain(p.send, stages...)
	return p
}

// Run runs c through the pipeline. The stages' context carries c
// (CallOf).
func (p *Pipeline) Run(ctx context.Context, c *Call) (*Result, error) {
	return p.run(context.WithValue(ctx, callKey{}, c), c)
}

// answered holds an embedder's stage to Func's contract, so the stages
// around it never see a call with neither a result nor an error.
func answered(mw Middleware) Middleware {
	return func(next Func) Func {
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

// Chain wraps last in stages, the first outermost.
func Chain(last Func, stages ...Middleware) Func {
	for i := len(stages) - 1; i >= 0; i-- {
		last = stages[i](last)
	}
	return last
}

// NewCall makes the pipeline's record of a call. An exposed name is
// resolved here, once: a host tool's stays as it is; an unprefixed
// server's bare name, or a mapped one, becomes the namespaced name with the
// server's own name for the tool, and is kept as CalledAs. opts nil: the
// defaults.
func (p *Pipeline) NewCall(scope Scope, tool string, args json.RawMessage, opts *CallOptions) *Call {
	c := &Call{Method: protocol.MethodToolsCall, Tool: tool, Arguments: args, Scope: scope, Options: opts, Start: time.Now(),
		ID: newCallID()}
	if opts == nil {
		c.Options = &c.opts // one allocation for both
	}
	if server, name, ok := p.cfg.Runtime.ResolveTool(tool); ok {
		c.Server, c.Name = server, name
		if !spells(tool, server, name) {
			c.Tool, c.CalledAs = actors.ToolName(server, name), tool
		}
	} else if server, name, ok := actors.SplitToolName(tool); ok {
		c.Server, c.Name = server, name // a server the runtime does not list: it says why
	} else {
		c.Name = tool
	}
	return c
}

// NewRequest makes the pipeline's record of a request of another method
// to server; subject is what it is about (Call.Name). opts nil: the
// defaults.
func NewRequest(scope Scope, server, method, subject string, params json.RawMessage, opts *CallOptions) *Call {
	c := &Call{Method: method, Server: server, Name: subject, Params: params, Scope: scope, Options: opts, Start: time.Now(),
		ID: newCallID()}
	if opts == nil {
		c.Options = &c.opts
	}
	return c
}

// spells reports whether tool is ToolName(server, name), without building
// that string: the usual call names its tool in full.
func spells(tool, server, name string) bool {
	rest, ok := strings.CutPrefix(tool, actors.ToolPrefix)
	if !ok || len(rest) != len(server)+2+len(name) {
		return false
	}
	return rest[:len(server)] == server && rest[len(server):len(server)+2] == "__" && rest[len(server)+2:] == name
}
