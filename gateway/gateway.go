package gateway

import (
	"bytes"
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// ActivateTool is the host tool listed beside the session's namespaced
// tools: it grants tool groups (server names, or mcpvisor.ConfigGroup when
// Options.AllowConfigGroup) to the downstream session, so a client loads
// tools lazily through MCP itself. The config group adds the host's
// management tools (register_mcp, delete_mcp, toggle_item, list_items).
const ActivateTool = mcpvisor.ToolActivate

// notesQueue bounds the notifications waiting for a client's stream.
const notesQueue = 64

// endTimeout bounds ending a session's grants when the session goes away.
const endTimeout = 5 * time.Second

// Defaults of Options.IdleTimeout, Options.MaxSessions and
// Options.PageSize.
const (
	DefaultPageSize    = 500
	DefaultIdleTimeout = 30 * time.Minute
	DefaultMaxSessions = 1000
)

// Options configure a Gateway. The zero value is a gateway for local
// clients that logs to slog.Default().
type Options struct {
	// Logger receives the gateway's logs. nil: slog.Default().
	Logger *slog.Logger
	// AllowConfigGroup lets activate_tools grant mcpvisor.ConfigGroup, the
	// host's management tools (registering servers: running commands).
	// False: a downstream client cannot grant itself that group.
	AllowConfigGroup bool
	// ApproveWithClient puts each host-tool call that changes the servers
	// (register_mcp, delete_mcp, toggle_item) to the person at the client
	// that made it, as a form elicitation on the call's stream: what the
	// call does and, for a stdio registration, every argument of the
	// command line; accepting allows it. A client that did not declare
	// form elicitation cannot be asked, and such calls are refused. This is
	// asked after the Host's own approval (mcpvisor.Options.Approve or its
	// inbox), never in its place.
	ApproveWithClient bool
	// SettleWait is how long the first page of a tools/list waits for the
	// host's enabled servers to settle (each ready, or its start failed;
	// Host.WaitSettled), so that a client that lists once at connect (a
	// one-shot CLI, a client that ignores list_changed) sees the tools of
	// servers still starting. 0: it answers with what is ready at once.
	SettleWait time.Duration
	// IdleTimeout ends an HTTP session that has had no request in flight
	// and no open GET stream for this long: its calls are cancelled, its
	// grants deleted, and its id answers 404, so the client starts a new
	// session. Zero: DefaultIdleTimeout; negative: sessions never expire.
	IdleTimeout time.Duration
	// MaxSessions caps the HTTP sessions held at once. An initialize over
	// the cap ends the least recently used idle session to make room, or,
	// when every session is busy, is refused with 503. Zero:
	// DefaultMaxSessions; negative: no cap.
	MaxSessions int
	// AllowedOrigins lists the Origin header values the HTTP transport
	// accepts, exactly as browsers send them ("https://app.example").
	// Empty: only requests without Origin or from a loopback origin
	// (http://localhost:3000, http://127.0.0.1, http://[::1]). A request
	// with any other Origin is refused with 403.
	AllowedOrigins []string
	// AllowedHosts lists the Host header values (without port) a request
	// to a loopback listener may name besides localhost and loopback
	// addresses; any other is refused with 403, the defence against DNS
	// rebinding. Requests to other listeners are not checked.
	AllowedHosts []string
	// PageSize is how many tools one tools/list page holds; a larger
	// catalog is paged (nextCursor). Zero: DefaultPageSize; negative: one
	// page.
	PageSize int
	// TaskAfter is how long a modern client's call of a tool that declares
	// no task support may run before it becomes a task, when the client
	// declared the tasks extension. Zero: DefaultTaskAfter.
	TaskAfter time.Duration
	// TaskTTL is how long a gateway task stays readable (and may run).
	// Zero: DefaultTaskTTL.
	TaskTTL time.Duration
	// StateKey seals the requestState of a modern client's call to a
	// legacy server (AES-GCM; 16, 24 or 32 bytes), so a client cannot forge
	// or alter it. Replicas behind one address share it. Empty: a random
	// key of this gateway's own. New panics on another length.
	StateKey []byte
	// InputTimeout is how long such a call waits for the client's retry
	// with its answers before it is cancelled. Zero: DefaultInputTimeout.
	InputTimeout time.Duration
}

// Gateway serves every tool of a Host as one MCP server (revision
// 2025-11-25) over Streamable HTTP (Handler) and stdio (ServeStdio). Each
// downstream MCP session is one host session, with a random id, that sees
// the tools of the groups granted to it.
//
// All methods are safe for concurrent use.
type Gateway struct {
	h    *mcpvisor.Host
	opts Options
	log  *slog.Logger

	subMu sync.Mutex
	subs  map[string]int // upstream subscriptions: server NUL uri → sessions holding it

	now   func() time.Time // the clock of idle expiry
	sweep *time.Timer      // next idle sweep; nil when sessions never expire

	mu       sync.Mutex
	sessions map[string]*session // HTTP sessions by id
	local    map[*session]bool   // stdio sessions
	closed   bool
	done     chan struct{}  // closed by Close
	wg       sync.WaitGroup // request handlers and idle sweeps running

	listeners   map[*listener]bool // open subscriptions/listen streams
	bridges     map[string]*bridge // legacy-server calls awaiting a modern client's input, by id
	tasks       map[string]*task   // gateway tasks, by id (tasks.go)
	stateOnce   sync.Once
	aead        cipher.AEAD // seals requestStates (stateAEAD)
	modernTools string      // the tools modern clients were last told of

	unsubscribe func() // from the host's events
}

// New returns a gateway over h, subscribed to h's events (catalog and
// resource changes become notifications to its sessions) until Close. It
// starts nothing: sessions come with clients. opts is copied.
func New(h *mcpvisor.Host, opts Options) *Gateway {
	if h == nil {
		panic("gateway: New with a nil Host")
	}
	opts.AllowedOrigins = slices.Clone(opts.AllowedOrigins)
	opts.AllowedHosts = slices.Clone(opts.AllowedHosts)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	switch len(opts.StateKey) {
	case 0, 16, 24, 32:
		opts.StateKey = slices.Clone(opts.StateKey)
	default:
		panic(errStateKey)
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	g := &Gateway{h: h, opts: opts, log: opts.Logger, now: time.Now,
		sessions: map[string]*session{}, local: map[*session]bool{}, subs: map[string]int{}, done: make(chan struct{})}
	if opts.IdleTimeout > 0 {
		g.sweep = time.AfterFunc(sweepInterval(opts.IdleTimeout), g.sweepIdle)
	}
	g.unsubscribe = h.Subscribe(g.observe)
	return g
}

// Close ends every session: in-flight calls are cancelled, GET streams
// end, grants are deleted, and each ServeStdio returns ErrClosed. It
// returns once the gateway's HTTP handlers have returned (ServeStdio's
// caller joins its own call), and is idempotent; deleting grants is
// bounded in time. Later HTTP requests get 503.
func (g *Gateway) Close() error {
	g.unsubscribe()
	g.mu.Lock()
	if !g.closed {
		close(g.done)
	}
	g.closed = true
	if g.sweep != nil {
		g.sweep.Stop()
	}
	sessions := make([]*session, 0, len(g.sessions)+len(g.local))
	for _, s := range g.sessions {
		sessions = append(sessions, s)
	}
	for s := range g.local {
		sessions = append(sessions, s)
	}
	g.sessions = map[string]*session{}
	for _, b := range g.bridges {
		b.s.cancel()
	}
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	var errs []error
	for _, s := range sessions {
		errs = append(errs, s.end(ctx))
	}
	g.wg.Wait()
	return errors.Join(errs...)
}

// observe takes a host event: sessions whose tools it changes get
// notifications/tools/list_changed, and resource and prompt changes are
// forwarded. It never blocks.
func (g *Gateway) observe(ev mcpvisor.Event) {
	switch ev.Kind {
	case mcpvisor.EventTools, mcpvisor.EventState:
	case mcpvisor.EventNotification:
		switch ev.Method {
		case protocol.MethodResourcesUpdated, protocol.MethodResourcesListChanged, protocol.MethodPromptsListChanged, protocol.MethodLoggingMessage,
			protocol.MethodElicitationComplete:
		default:
			return
		}
	default:
		return
	}
	g.notifyListeners(ev)
	g.mu.Lock()
	sessions := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		sessions = append(sessions, s)
	}
	for s := range g.local {
		sessions = append(sessions, s)
	}
	g.mu.Unlock()
	for _, s := range sessions {
		if ev.Kind == mcpvisor.EventNotification {
			s.forward(ev)
		} else {
			s.listChanged(false)
		}
	}
}

// newSessionID is 16 random bytes, hex encoded: visible ASCII, as
// MCP-Session-Id requires, and unguessable.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// session is one downstream MCP session: a host session plus the calls in
// flight, which a notifications/cancelled may cancel.
type session struct {
	g  *Gateway
	id string
	hs mcpvisor.Session

	ctx    context.Context // cancelled when the session ends
	cancel context.CancelFunc

	// changed holds at most one pending list_changed: the notification is
	// idempotent, so pending ones coalesce and a signal never blocks.
	changed chan struct{}
	// notes queues other notifications for the client's stream.
	notes chan []byte

	nextOut atomic.Int64 // ids of the requests sent to the client

	// modern: a request of a 2026-07-28 client, which lives as long as
	// the request; rawCaps are the capabilities its _meta declares.
	modern  bool
	rawCaps json.RawMessage
	// bridge: a modern client's call to a legacy server, whose requests
	// to the client become input_required rounds (see bridge); awaiting
	// is its bridge's (bridge.awaiting).
	bridge   bool
	awaiting func() bool
	// downstream, for a modern request that came over a connection
	// (stdio), ends with that connection: a call bridged for it is
	// released then, as no retry can come any more.
	downstream context.Context

	// busy counts the HTTP requests and GET streams in progress; used is
	// when the last one ended (unix ns). An idle session may expire.
	busy atomic.Int32
	used atomic.Int64

	mu       sync.Mutex
	caps     clientCaps                       // from initialize
	inited   bool                             // initialize answered: a legacy session
	level    int                              // logging/setLevel's rank (levelRank); 0: no log messages
	inflight map[string]context.CancelFunc    // raw request id → cancel
	outbound map[string]chan protocol.Message // requests to the client, by id
	owners   map[string]string                // resource URI → the server that listed it
	subs     map[string]string                // subscribed URI → its server
	urls     map[string]string                // URL elicitations asked of the client: id → server
	// Resumable SSE streams (resume.go): a tools/call's, by id, the ids
	// of the last finished ones, and the GET stream's.
	streams    map[int64]*eventLog
	lastStream int64
	endedRing  endedRing
	standalone *eventLog
	// lastTools is the tool set the client was last told about (names),
	// to skip list_changed for host events that change nothing it sees.
	lastTools string
	ended     bool
}

func (g *Gateway) newSession() *session {
	id := newSessionID()
	ctx, cancel := context.WithCancel(context.Background())
	// The host session gets an id of its own: Mcp-Session-Id is a bearer
	// secret, and the journal's history keeps host session ids in clear.
	s := &session{
		g: g, id: id, hs: g.h.Session("mcp-"+newSessionID(), ""), ctx: ctx, cancel: cancel,
		changed: make(chan struct{}, 1), inflight: map[string]context.CancelFunc{},
		outbound: map[string]chan protocol.Message{}, owners: map[string]string{}, subs: map[string]string{},
		notes: make(chan []byte, notesQueue),
	}
	s.lastTools = s.toolSet()
	return s
}

// end cancels the session's calls and deletes its grants. Idempotent.
func (s *session) end(ctx context.Context) error {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return nil
	}
	s.ended = true
	s.mu.Unlock()
	s.cancel()
	s.releaseAll(ctx)
	if err := s.hs.End(ctx); err != nil {
		return fmt.Errorf("gateway: end session: %w", err)
	}
	return nil
}

// toolSet names the tools the session sees, as one comparable string.
func (s *session) toolSet() string {
	var b strings.Builder
	for _, t := range s.hs.Tools() {
		b.WriteString(t.Name)
		if !t.Available {
			b.WriteString("?")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// listChanged queues notifications/tools/list_changed if the session's
// tools differ from those it was last told about (or always, with force).
func (s *session) listChanged(force bool) {
	now := s.toolSet()
	s.mu.Lock()
	same := now == s.lastTools
	s.lastTools = now
	s.mu.Unlock()
	if same && !force {
		return
	}
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Frames the core writes.
var listChangedFrame = protocol.AppendNotification(nil, protocol.MethodToolsListChanged, nil)

// handle answers one classified frame from the client. Requests return
// their response frame; notifications and responses return nil, as does a
// request the client cancelled (the spec says to send no response). send
// writes notifications related to the request (progress) before the
// response; it is called on handle's goroutine. from is the context of the request that carried msg: its trace, if any,
// is the caller's (the W3C headers of an HTTP POST).
func (s *session) handle(from context.Context, msg protocol.Message, send func([]byte)) []byte {
	switch msg.Kind {
	case protocol.KindNotification:
		if msg.Method == protocol.MethodCancelled {
			s.cancelRequest(msg.Params)
		}
		// notifications/initialized and the rest need nothing from us.
		return nil
	case protocol.KindResponse:
		s.deliver(msg)
		return nil
	}
	ctx, done := s.track(msg.ID)
	defer done()
	return s.serve(withCallerOf(ctx, from), msg, send)
}

// begin registers a request for cancellation before it is served off the
// reading goroutine, so a notifications/cancelled read right after it
// finds it; run serves it.
func (s *session) begin(msg protocol.Message) (run func(send func([]byte)) []byte) {
	ctx, done := s.track(msg.ID)
	return func(send func([]byte)) []byte {
		defer done()
		return s.serve(ctx, msg, send)
	}
}

// serve answers one request; ctx ends when the client cancels it or the
// session ends. A cancelled request gets no response.
func (s *session) serve(ctx context.Context, msg protocol.Message, send func([]byte)) []byte {
	resp := s.dispatch(ctx, msg, send)
	if ctx.Err() != nil && s.ctx.Err() == nil {
		return nil // cancelled by the client
	}
	return resp
}

func (s *session) dispatch(ctx context.Context, msg protocol.Message, send func([]byte)) []byte {
	switch msg.Method {
	case protocol.MethodInitialize:
		return s.initialize(msg)
	case protocol.MethodPing:
		return protocol.AppendResult(nil, msg.ID, nil)
	case protocol.MethodToolsList:
		return s.listTools(ctx, msg)
	case protocol.MethodToolsCall:
		return s.callTool(ctx, msg, send)
	case protocol.MethodLoggingSetLevel:
		return s.setLevel(msg)
	case protocol.MethodResourcesList:
		return s.listResources(ctx, msg)
	case protocol.MethodResourcesTemplatesList:
		return s.listTemplates(ctx, msg)
	case protocol.MethodResourcesRead:
		return s.readResource(ctx, msg, send)
	case protocol.MethodResourcesSubscribe:
		return s.subscribe(ctx, msg, true)
	case protocol.MethodResourcesUnsubscribe:
		return s.subscribe(ctx, msg, false)
	case protocol.MethodPromptsList:
		return s.listPrompts(ctx, msg)
	case protocol.MethodPromptsGet:
		return s.getPrompt(ctx, msg, send)
	case protocol.MethodCompletionComplete:
		return s.complete(ctx, msg, send)
	case protocol.MethodServerDiscover:
		if s.modern {
			return s.discover(msg)
		}
	case protocol.MethodTasksGet, protocol.MethodTasksUpdate, protocol.MethodTasksCancel:
		if s.modern {
			return s.serveTasks(msg)
		}
	}
	return protocol.AppendError(nil, msg.ID, protocol.CodeMethodNotFound, "method not found: "+msg.Method, nil)
}

func (s *session) initialize(msg protocol.Message) []byte {
	var p protocol.InitializeParams
	if err := json.Unmarshal(orEmpty(msg.Params), &p); err != nil {
		return invalidParams(msg.ID, "initialize: %v", err)
	}
	version := protocol.ProtocolVersion
	if slices.Contains(protocol.SupportedVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	s.mu.Lock()
	s.caps = parseClientCaps(p.Capabilities)
	s.inited = true
	s.mu.Unlock()
	return result(msg.ID, protocol.InitializeResult{
		ProtocolVersion: version,
		Capabilities:    s.g.capabilities(),
		ServerInfo:      gatewayImplementation(),
		Instructions:    s.hs.Catalog(),
	})
}

// capabilities are the gateway's, in both eras: what it serves of every
// server behind it.
func (g *Gateway) capabilities() protocol.ServerCapabilities {
	return protocol.ServerCapabilities{
		Tools:       &protocol.ListChangedCapability{ListChanged: true},
		Resources:   &protocol.ResourcesCapability{Subscribe: true, ListChanged: true},
		Prompts:     &protocol.ListChangedCapability{ListChanged: true},
		Logging:     json.RawMessage(`{}`),
		Completions: json.RawMessage(`{}`),
	}
}

// listTools answers tools/list in pages of Options.PageSize, in the
// host's order (registration order, then the server's own): the same
// request gets the same page.
func (s *session) listTools(ctx context.Context, msg protocol.Message) []byte {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if err := json.Unmarshal(orEmpty(msg.Params), &p); err != nil {
		return invalidParams(msg.ID, "tools/list: %v", err)
	}
	if w := s.g.opts.SettleWait; w > 0 && p.Cursor == nil {
		wctx, cancel := context.WithTimeout(ctx, w)
		_ = s.g.h.WaitSettled(wctx) // past the wait, what is ready; list_changed tells the rest
		cancel()
	}
	start := 0
	if p.Cursor != nil {
		var ok bool
		if start, ok = parseCursor(*p.Cursor); !ok {
			return invalidParams(msg.ID, "tools/list: invalid cursor %q", *p.Cursor)
		}
	}
	tools := s.hs.Tools()
	if start > len(tools) {
		start = len(tools)
	}
	end := len(tools)
	if n := s.g.opts.PageSize; n > 0 && end-start > n {
		end = start + n
	}
	out := make([]protocol.Tool, 0, end-start)
	for _, t := range tools[start:end] {
		mt := t.MCP()
		if s.modern && !mcpvisor.IsHostTool(t.Name) {
			mt.Execution = toolExecution(t.TaskSupport)
		}
		out = append(out, mt)
	}
	res := protocol.ListToolsResult{Tools: out}
	if end < len(tools) {
		res.NextCursor = makeCursor(end)
	}
	s.mu.Lock()
	s.lastTools = s.toolSet()
	s.mu.Unlock()
	return result(msg.ID, res)
}

// A list cursor is the offset of the page's first item, opaque to the
// client.
const cursorPrefix = "mcpvisor.page."

func makeCursor(offset int) string {
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(offset)))
}

func parseCursor(c string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(c, cursorPrefix))
	if err != nil || !strings.HasPrefix(c, cursorPrefix) {
		return 0, false
	}
	n, err := strconv.Atoi(string(b))
	return n, err == nil && n >= 0
}

func (s *session) callTool(ctx context.Context, msg protocol.Message, send func([]byte)) []byte {
	var p protocol.CallToolParams
	if err := json.Unmarshal(orEmpty(msg.Params), &p); err != nil {
		return invalidParams(msg.ID, "tools/call: %v", err)
	}
	if p.Name == "" {
		return invalidParams(msg.ID, "tools/call: name is required")
	}
	ctx = mcpvisor.TraceFromMeta(ctx, p.Meta) // SEP-414: the caller's trace, per request
	ctx, traced := s.g.h.TraceRequest(ctx, protocol.MethodToolsCall, p.Name)
	hostTool := mcpvisor.IsHostTool(p.Name)
	if p.Name == ActivateTool && !s.g.opts.AllowConfigGroup && activatesConfig(p.Arguments) {
		return result(msg.ID, errorResult(fmt.Sprintf("%s: the group %q is not available through this gateway", ActivateTool, mcpvisor.ConfigGroup)))
	}
	var opts mcpvisor.CallOptions
	if token := progressToken(p.Meta); token != nil && send != nil {
		opts.OnProgress = func(pr mcpvisor.Progress) {
			params, err := json.Marshal(protocol.ProgressParams{ProgressToken: token, Progress: pr.Progress, Total: pr.Total, Message: pr.Message})
			if err == nil {
				send(protocol.AppendNotification(nil, protocol.MethodProgress, params))
			}
		}
	}
	if !hostTool && !s.knownServer(p.Name) && !s.knownOnceListed(ctx, p.Name) {
		return protocol.AppendError(nil, msg.ID, protocol.CodeInvalidParams, "unknown tool: "+p.Name, nil)
	}
	if s.modern {
		// The client answers the server's input requests itself and
		// retries: the server's input_required result goes to it.
		// A held call (a bridge, a task) asks through its handlers.
		opts.PassInput, opts.ClientCapabilities = !s.bridge, s.rawCaps
		if hasInputMembers(msg.Params) {
			opts.Resume = msg.Params
		}
	}
	if !s.modern || s.bridge {
		opts.Elicitation = s.elicitHandler(send)
		opts.Sampling = s.sampleHandler(send)
		opts.Roots = s.rootsHandler(send)
		// Modern clients share a scope: each bridged call is a client of
		// its own, so a server's question goes to no other call's client.
		opts.Client, opts.AwaitingClient = s.id, s.awaiting
		// A legacy client's call is served as a legacy session would be:
		// by the server's legacy incarnation when it runs modern.
		opts.LegacyClient = !s.modern
	}
	if hostTool && s.g.opts.ApproveWithClient {
		opts.Approve = s.approveWithClient(send)
	}
	res, err := s.hs.CallWith(ctx, p.Name, p.Arguments, opts)
	traced(res, err)
	if hostTool {
		// Activation changes what this session sees; registering or
		// toggling reaches the other sessions through the host's events.
		s.listChanged(false)
	}
	if err != nil {
		return s.callError(msg.ID, p.Name, err)
	}
	return protocol.AppendResult(nil, msg.ID, wireResult(res))
}

// hasInputMembers reports whether a request's params answer an
// input_required result (inputResponses or requestState): a retry.
func hasInputMembers(params json.RawMessage) bool {
	var p struct {
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   json.RawMessage `json:"requestState"`
	}
	return json.Unmarshal(orEmpty(params), &p) == nil && (len(p.InputResponses) > 0 || len(p.RequestState) > 0)
}

// knownServer reports whether tool names a registered server's tool
// (namespaced, or the bare name of a server exposed without a prefix), so
// a made-up server is an unknown tool, not a group to activate.
func (s *session) knownServer(tool string) bool {
	_, _, ok := s.g.h.ResolveTool(tool)
	return ok
}

// listWait bounds the wait for servers still starting when a call names a
// tool no ready server has.
const listWait = 30 * time.Second

// knownOnceListed waits, for a name no server exposes yet, until the
// session's servers that are still starting have listed their tools, and
// reports whether one exposes it then: a server without prefix is known by
// its tools' own names only once it has listed them (a client that calls
// right after connecting must not be told its tool is unknown).
func (s *session) knownOnceListed(ctx context.Context, tool string) bool {
	var starting []string
	active := map[string]bool{}
	for _, name := range s.hs.Servers() {
		active[name] = true
	}
	for _, st := range s.g.h.Status() {
		if active[st.Name] && st.Enabled && (st.State == mcpvisor.StateStarting || st.State == mcpvisor.StateInitializing) {
			starting = append(starting, st.Name)
		}
	}
	if len(starting) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, listWait)
	defer cancel()
	_ = s.g.h.WaitReady(ctx, starting...) // a server that fails is no owner
	return s.knownServer(tool)
}

// callError turns a host error into the client's answer: a JSON-RPC error
// for an unknown tool and for the server's own protocol errors (their
// codes and data pass through, -32042 included), otherwise a tool error
// result the model can read.
func (s *session) callError(id json.RawMessage, tool string, err error) []byte {
	if errors.Is(err, mcpvisor.ErrUnknownTool) || errors.Is(err, mcpvisor.ErrUnknownServer) {
		return protocol.AppendError(nil, id, protocol.CodeInvalidParams, "unknown tool: "+tool, nil)
	}
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return protocol.AppendError(nil, id, perr.Code, perr.Message, perr.Data)
	}
	s.g.log.Debug("gateway: call failed", "tool", tool, "err", err)
	return result(id, errorResult(err.Error()))
}

// activatesConfig reports whether activate_tools arguments name the config
// group.
func activatesConfig(args json.RawMessage) bool {
	var a struct {
		Groups []string `json:"groups"`
	}
	return json.Unmarshal(orEmpty(args), &a) == nil && slices.Contains(a.Groups, mcpvisor.ConfigGroup)
}

// track registers a call for cancellation by request id.
func (s *session) track(id json.RawMessage) (context.Context, func()) {
	ctx, cancel := context.WithCancel(s.ctx)
	key := string(id)
	s.mu.Lock()
	s.inflight[key] = cancel
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
		cancel()
	}
}

// cancelRequest applies notifications/cancelled; unknown or finished
// requests are ignored, as the spec says.
func (s *session) cancelRequest(params json.RawMessage) {
	var p protocol.CancelledParams
	if json.Unmarshal(orEmpty(params), &p) != nil || len(p.RequestID) == 0 {
		return
	}
	s.mu.Lock()
	cancel := s.inflight[string(bytes.TrimSpace(p.RequestID))]
	s.mu.Unlock()
	if cancel != nil {
		s.g.log.Debug("gateway: request cancelled by the client", "reason", p.Reason)
		cancel()
	}
}

// wireResult is the CallToolResult for the client: the server's own, byte
// for byte, when the host has it (content, structuredContent, isError and
// media pass through unchanged).
func wireResult(res *mcpvisor.Result) json.RawMessage {
	if len(res.Raw) > 0 {
		return res.Raw
	}
	ctr := protocol.CallToolResult{Content: res.Content, StructuredContent: res.JSON, IsError: res.IsError}
	if len(ctr.Content) == 0 && res.Text != "" {
		ctr.Content = []protocol.ContentBlock{{Type: protocol.ContentText, Text: res.Text}}
	}
	b, err := json.Marshal(ctr)
	if err != nil {
		b, _ = json.Marshal(errorResult(err.Error()))
	}
	return b
}

func errorResult(msg string) protocol.CallToolResult {
	return protocol.CallToolResult{Content: []protocol.ContentBlock{{Type: protocol.ContentText, Text: msg}}, IsError: true}
}

// progressToken is _meta.progressToken, a string or number; nil if absent.
func progressToken(meta json.RawMessage) json.RawMessage {
	var m struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(orEmpty(meta), &m) != nil || len(m.Token) == 0 {
		return nil
	}
	switch m.Token[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return m.Token
	}
	return nil
}

func result(id json.RawMessage, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return protocol.AppendError(nil, id, protocol.CodeInternalError, err.Error(), nil)
	}
	return protocol.AppendResult(nil, id, b)
}

func invalidParams(id json.RawMessage, format string, args ...any) []byte {
	return protocol.AppendError(nil, id, protocol.CodeInvalidParams, fmt.Sprintf(format, args...), nil)
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// moduleVersion is mcpvisor's version from the build info, "devel" when
// the binary does not say.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if bi.Main.Path == "github.com/mcpvisor/mcpvisor" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/mcpvisor/mcpvisor" {
			return d.Version
		}
	}
	return "devel"
}

// initialized reports whether the client sent initialize (a legacy
// session; a modern client never does).
func (s *session) initialized() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inited
}

func (s *session) clientCaps() clientCaps {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}
