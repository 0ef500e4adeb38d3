package mcpserve

import (
	"bytes"
	"context"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Request is an incoming request or notification as middleware sees it.
type Request struct {
	ID     json.RawMessage // nil for a notification
	Method string
	Params json.RawMessage // nil when absent
}

// IsNotification reports whether the message has no id.
func (r *Request) IsNotification() bool { return r.ID == nil }

// Handler handles one incoming message. For a request the result is sent as
// the response ("result":{} when nil); for a notification it is ignored.
// Requests run on their own goroutine; notifications run on the reading
// goroutine, in order, and must not block.
type Handler func(ctx context.Context, req *Request) (any, error)

// Middleware wraps a Handler.
type Middleware func(Handler) Handler

// Options configure a Server. The zero value is usable.
type Options struct {
	Name         string // serverInfo.name; "" means "mcpserve"
	Version      string // serverInfo.version; "" means "0.0.0"
	Title        string // serverInfo.title
	Instructions string // InitializeResult.instructions

	// NegotiateVersion picks the protocolVersion answered to initialize from
	// the one the client requested; "" leaves the field out. Nil means
	// NegotiateVersion (echo a supported version, else the latest).
	NegotiateVersion func(requested string) string
	// PageSize is the tools/list page size; 0 lists every tool at once.
	PageSize int
	// MaxLineBytes bounds an input line; 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// Middleware wraps the built-in dispatcher; the first is outermost.
	Middleware []Middleware
	// Logger receives diagnostics (malformed input, cancellations). Nil
	// discards them. Servers usually log to stderr.
	Logger *slog.Logger

	// Tasks declares capabilities.tasks (list, cancel, tools/call) and
	// answers tasks/get, tasks/result, tasks/cancel and tasks/list; a
	// tools/call with a "task" member then runs as a task if the tool's
	// TaskSupport allows it. Without Tasks the "task" member is ignored.
	Tasks bool
	// AdvisoryTaskSupport runs a tool whose TaskSupport is required when
	// it is called without a task, as any other: the declaration is for a
	// client in front that serves tasks of its own (a gateway).
	AdvisoryTaskSupport bool
	// TaskPollInterval is the pollInterval tasks report; 0 means
	// DefaultTaskPollInterval.
	TaskPollInterval time.Duration
	// TaskTTL is the ttl of a task whose request asks for none; 0 means
	// DefaultTaskTTL, negative means unlimited (ttl null). A requested ttl
	// is granted as asked.
	TaskTTL time.Duration
	// TaskStateDir, when set, keeps each task as <dir>/<taskId>.json,
	// rewritten on every change. A server started on the same directory
	// answers for the tasks it finds there and resumes the working ones of
	// Resumable tools (others fail). Created if missing.
	TaskStateDir string

	// Modern makes the server dual-era: besides initialize it answers
	// server/discover and serves requests that declare the 2026-07-28
	// revision in their _meta, without a handshake; ToolCall.Call then
	// asks through input_required results (see ToolCall.Call). Without
	// Modern, server/discover is an unknown method, as for any legacy
	// server.
	Modern bool
	// TasksExtension, with Modern, serves the 2026-07-28 tasks extension
	// (io.modelcontextprotocol/tasks): declared in server/discover, a
	// modern tools/call that declares it runs as a task if the tool's
	// TaskSupport allows it (tasks_ext.go).
	TasksExtension bool
}

// SupportedVersions are the revisions NegotiateVersion echoes.
var SupportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// NegotiateVersion echoes requested if it is in SupportedVersions, else
// answers LatestProtocolVersion, as the lifecycle section prescribes.
func NegotiateVersion(requested string) string {
	if slices.Contains(SupportedVersions, requested) {
		return requested
	}
	return LatestProtocolVersion
}

// Implementation is serverInfo.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	ProtocolVersion string         `json:"protocolVersion,omitempty"`
	Capabilities    map[string]any `json:"capabilities"`
	ServerInfo      Implementation `json:"serverInfo"`
	Instructions    string         `json:"instructions,omitempty"`
}

// logLevels are the RFC 5424 levels of notifications/message, lowest first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

type inflightRequest struct {
	method    string
	cancel    context.CancelFunc
	cancelled bool // by the client's notifications/cancelled; guarded by Server.mu
}

// Server is an MCP stdio server. Configure it (AddTool) and call Serve once.
// Its methods are safe for concurrent use.
type Server struct {
	opts    Options
	handler Handler
	log     *slog.Logger

	toolsMu sync.RWMutex
	tools   []Tool

	writeMu sync.Mutex
	out     io.Writer

	mu          sync.Mutex
	serving     bool
	done        chan struct{} // closed when Serve returns
	inflight    map[string]*inflightRequest
	pending     map[string]chan *incoming
	nextID      int64
	logLevel    int // index into logLevels; messages below it are not sent
	initialized bool

	stopRequested atomic.Bool // StopReading was called

	serveCtx   context.Context // Serve's; set before any handler runs
	background sync.WaitGroup  // task handlers; Serve waits for them
	tasksMu    sync.Mutex
	tasks      map[string]*serverTask
	extTasks   map[string]*extTask // the tasks extension's; guarded by tasksMu

	clientCaps json.RawMessage // declared in initialize; guarded by mu
	stateAEAD  cipher.AEAD     // seals requestState; set with Options.Modern
}

// StopReading makes Serve read no further input once the line being handled
// now is done; the server stays alive until its context ends. Used to play a
// server whose read loop died while the process lives on.
func (s *Server) StopReading() { s.stopRequested.Store(true) }

// New returns a server with no tools.
func New(opts Options) *Server {
	if opts.Name == "" {
		opts.Name = "mcpserve"
	}
	if opts.Version == "" {
		opts.Version = "0.0.0"
	}
	if opts.NegotiateVersion == nil {
		opts.NegotiateVersion = NegotiateVersion
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.PageSize < 0 {
		panic("mcpserve: negative PageSize")
	}
	if opts.TaskPollInterval <= 0 {
		opts.TaskPollInterval = DefaultTaskPollInterval
	}
	if opts.TaskTTL == 0 {
		opts.TaskTTL = DefaultTaskTTL
	}
	opts.Middleware = slices.Clone(opts.Middleware)
	s := &Server{
		opts:     opts,
		log:      opts.Logger,
		done:     make(chan struct{}),
		inflight: make(map[string]*inflightRequest),
		pending:  make(map[string]chan *incoming),
		tasks:    make(map[string]*serverTask),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.Modern {
		s.stateAEAD = newStateAEAD()
	}
	h := Handler(s.dispatch)
	for i := len(opts.Middleware) - 1; i >= 0; i-- {
		h = opts.Middleware[i](h)
	}
	s.handler = h
	return s
}

// AddTool adds t, or replaces the tool with the same name. It may be called
// while serving; the caller sends notifications/tools/list_changed.
func (s *Server) AddTool(t Tool) {
	if t.Name == "" || t.Handler == nil {
		panic("mcpserve: tool needs a name and a handler")
	}
	switch t.TaskSupport {
	case "", TaskSupportForbidden, TaskSupportOptional, TaskSupportRequired:
	default:
		panic("mcpserve: tool " + t.Name + ": unknown TaskSupport " + strconv.Quote(t.TaskSupport))
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	for i := range s.tools {
		if s.tools[i].Name == t.Name {
			s.tools[i] = t
			return
		}
	}
	s.tools = append(s.tools, t)
}

// Tool returns the tool called name.
func (s *Server) Tool(name string) (Tool, bool) {
	s.toolsMu.RLock()
	defer s.toolsMu.RUnlock()
	for _, t := range s.tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Initialized reports whether notifications/initialized has arrived.
func (s *Server) Initialized() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initialized
}

// Serve reads messages from in and writes messages to out until in ends
// (EOF: the client's signal to shut down), reading fails, or ctx ends. After
// a handler returned ErrStopReading it reads nothing more and returns when
// ctx ends. Before returning it cancels every running handler and waits for
// them: results already computed are still sent, interrupted ones are not.
// Task handlers are cancelled and waited for too; an interrupted task is
// left working (in Options.TaskStateDir as well). Serve first loads the
// tasks of TaskStateDir.
//
// Lines are read on a helper goroutine in lock step with their handling. If
// Serve returns (ctx ended) while that goroutine is blocked in in.Read, the
// goroutine exits when the read returns; for os.Stdin that is at process
// exit. Serve may be called only once.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	s.mu.Lock()
	if s.serving {
		s.mu.Unlock()
		panic("mcpserve: Serve called twice")
	}
	s.serving = true
	s.mu.Unlock()
	s.writeMu.Lock()
	s.out = out
	s.writeMu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	var handlers sync.WaitGroup
	defer func() {
		cancel()
		handlers.Wait()
		s.background.Wait()
		close(s.done)
	}()
	s.serveCtx = ctx
	s.loadTasks()

	type lineResult struct {
		line []byte
		err  error
	}
	lines := make(chan lineResult)
	more := make(chan struct{}) // the line was handled: read the next one
	go func() {
		r := newLineReader(in, s.opts.MaxLineBytes)
		for {
			line, err := r.next()
			select {
			case lines <- lineResult{line, err}:
			case <-s.done:
				return
			}
			if err != nil && !errors.Is(err, errLineTooLong) {
				return
			}
			select {
			case <-more:
			case <-s.done:
				return
			}
		}
	}()

	for {
		var r lineResult
		select {
		case r = <-lines:
		case <-ctx.Done():
			return nil
		}
		switch {
		case errors.Is(r.err, errLineTooLong):
			s.log.Warn("skipped input line over the size limit", "limit", s.opts.MaxLineBytes)
		case errors.Is(r.err, io.EOF):
			return nil
		case r.err != nil:
			return fmt.Errorf("mcpserve: read: %w", r.err)
		case s.stopRequested.Load():
			s.log.Info("stopped reading input")
			<-ctx.Done()
			return nil
		case s.handleLine(ctx, r.line, &handlers):
			s.log.Info("stopped reading input")
			<-ctx.Done()
			return nil
		}
		more <- struct{}{}
	}
}

// handleLine classifies one line and handles it; it reports whether reading
// must stop.
func (s *Server) handleLine(ctx context.Context, line []byte, handlers *sync.WaitGroup) (stop bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return false
	}
	var m incoming
	if err := json.Unmarshal(line, &m); err != nil {
		if json.Valid(line) {
			s.log.Warn("invalid JSON-RPC message", "err", err)
			s.writeError(jsonNull, Errorf(CodeInvalidRequest, "Invalid Request: not a JSON-RPC message object (batches are not supported)"))
		} else {
			s.log.Warn("unparseable input line", "err", err, "len", len(line))
			s.writeError(jsonNull, Errorf(CodeParseError, "Parse error"))
		}
		return false
	}
	switch {
	case m.Method != "" && m.hasID():
		if m.JSONRPC != "2.0" {
			s.writeError(m.ID, Errorf(CodeInvalidRequest, `Invalid Request: jsonrpc must be "2.0"`))
			return false
		}
		s.startRequest(ctx, &m, handlers)
	case m.Method != "":
		req := &Request{Method: m.Method, Params: m.Params}
		if _, err := s.handler(ctx, req); err != nil {
			if errors.Is(err, ErrStopReading) {
				return true
			}
			s.log.Warn("notification handler failed", "method", m.Method, "err", err)
		}
	case m.hasID() && (m.Result != nil || m.Error != nil):
		s.deliver(&m)
	default:
		s.log.Warn("invalid JSON-RPC message", "line", truncate(line, 200))
		s.writeError(jsonNull, Errorf(CodeInvalidRequest, "Invalid Request"))
	}
	return false
}

func (s *Server) startRequest(ctx context.Context, m *incoming, handlers *sync.WaitGroup) {
	key := string(m.ID)
	s.mu.Lock()
	if _, dup := s.inflight[key]; dup {
		s.mu.Unlock()
		s.log.Warn("request id reused while in flight", "id", key, "method", m.Method)
		s.writeError(m.ID, Errorf(CodeInvalidRequest, "Invalid Request: id %s is already in use", key))
		return
	}
	rctx, rcancel := context.WithCancel(ctx)
	entry := &inflightRequest{method: m.Method, cancel: rcancel}
	s.inflight[key] = entry
	s.mu.Unlock()

	req := &Request{ID: m.ID, Method: m.Method, Params: m.Params}
	handlers.Add(1)
	go func() {
		defer handlers.Done()
		defer rcancel()
		result, err := s.handler(rctx, req)
		s.mu.Lock()
		delete(s.inflight, key)
		cancelled := entry.cancelled
		s.mu.Unlock()
		switch {
		case cancelled:
			// The spec: the receiver of a cancel sends no response.
			s.log.Info("dropped response to cancelled request", "id", key, "method", req.Method)
		case err != nil && rctx.Err() != nil:
			// Interrupted by shutdown (input ended); a finished result still goes out.
			s.log.Info("request interrupted by shutdown", "id", key, "method", req.Method)
		case errors.Is(err, ErrNoResponse):
		case err != nil:
			var rpcErr *Error
			if !errors.As(err, &rpcErr) {
				rpcErr = Errorf(CodeInternalError, "Internal error: %v", err)
			}
			s.writeError(req.ID, rpcErr)
		default:
			if result == nil {
				result = struct{}{}
			}
			if werr := s.write(outgoing{JSONRPC: "2.0", ID: req.ID, Result: result}); werr != nil {
				s.log.Warn("write response failed", "id", key, "err", werr)
			}
		}
	}()
}

// dispatch is the innermost handler: the MCP methods this framework knows.
func (s *Server) dispatch(ctx context.Context, req *Request) (any, error) {
	if s.opts.Modern && !req.IsNotification() {
		var res any
		var handled bool
		var err error
		if ctx, res, handled, err = s.dispatchModern(ctx, req); handled {
			return res, err
		}
	}
	switch req.Method {
	case "initialize":
		return s.initialize(req)
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		return s.listTools(req)
	case "tools/call":
		return s.callTool(ctx, req)
	case "logging/setLevel":
		return s.setLogLevel(req)
	case "notifications/initialized":
		s.mu.Lock()
		s.initialized = true
		s.mu.Unlock()
		return nil, nil
	case "notifications/cancelled":
		s.cancelRequest(req.Params)
		return nil, nil
	case "tasks/get":
		if s.opts.Tasks {
			return s.getTask(req)
		}
	case "tasks/result":
		if s.opts.Tasks {
			return s.taskResult(ctx, req)
		}
	case "tasks/cancel":
		if s.opts.Tasks {
			return s.cancelTask(req)
		}
	case "tasks/list":
		if s.opts.Tasks {
			return s.listTasks(req)
		}
	}
	if req.IsNotification() {
		return nil, nil
	}
	return nil, Errorf(CodeMethodNotFound, "Method not found: %s", req.Method)
}

func (s *Server) initialize(req *Request) (any, error) {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
	}
	if err := unmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.clientCaps = p.Capabilities
	s.mu.Unlock()
	caps := map[string]any{
		"tools":   map[string]any{"listChanged": true},
		"logging": map[string]any{},
	}
	if s.opts.Tasks {
		caps["tasks"] = map[string]any{
			"list":     map[string]any{},
			"cancel":   map[string]any{},
			"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
		}
	}
	return &InitializeResult{
		ProtocolVersion: s.opts.NegotiateVersion(p.ProtocolVersion),
		Capabilities:    caps,
		ServerInfo:      s.serverInfo(),
		Instructions:    s.opts.Instructions,
	}, nil
}

// Cursors are opaque to the client; this one is the offset of the page.
const cursorPrefix = "offset:"

func encodeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.Itoa(offset)))
}

func decodeCursor(cursor string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

func (s *Server) listTools(req *Request) (any, error) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if err := unmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	s.toolsMu.RLock()
	tools := slices.Clone(s.tools)
	s.toolsMu.RUnlock()

	start := 0
	if p.Cursor != nil {
		n, ok := decodeCursor(*p.Cursor)
		if !ok || n > len(tools) {
			return nil, Errorf(CodeInvalidParams, "Invalid params: invalid cursor %q", *p.Cursor)
		}
		start = n
	}
	res := &ListToolsResult{Tools: tools[start:]}
	if size := s.opts.PageSize; size > 0 && len(res.Tools) > size {
		res.Tools = res.Tools[:size]
		res.NextCursor = encodeCursor(start + size)
	}
	if res.Tools == nil {
		res.Tools = []Tool{}
	}
	return res, nil
}

func (s *Server) callTool(ctx context.Context, req *Request) (any, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      json.RawMessage `json:"_meta"`
		Task      json.RawMessage `json:"task"`
		// A modern retry's answers (MRTR).
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   *string                    `json:"requestState"`
	}
	if err := unmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, Errorf(CodeInvalidParams, "Invalid params: missing tool name")
	}
	tool, ok := s.Tool(p.Name)
	if !ok {
		return nil, Errorf(CodeInvalidParams, "Unknown tool: %s", p.Name)
	}
	args := p.Arguments
	if len(args) == 0 || bytes.Equal(args, jsonNull) {
		args = json.RawMessage("{}")
	}
	if args[0] != '{' {
		return nil, Errorf(CodeInvalidParams, "Invalid params: arguments must be an object")
	}
	if bytes.Equal(p.Meta, jsonNull) {
		p.Meta = nil
	}
	call := &ToolCall{Server: s, RequestID: req.ID, Name: p.Name, Arguments: args, Meta: p.Meta}
	asTask := s.opts.Tasks && len(p.Task) > 0 && !bytes.Equal(p.Task, jsonNull)
	if mr := modernFrom(ctx); mr != nil {
		round, err := s.openRound(p.Name, args, p.InputResponses, p.RequestState)
		if err != nil {
			return nil, err
		}
		call.ProtocolVersion, call.ClientCapabilities, call.input = mr.version, mr.caps, round
		asTask = false // the legacy tasks utility is not offered to modern clients
		if s.opts.TasksExtension && (tool.TaskSupport == TaskSupportOptional || tool.TaskSupport == TaskSupportRequired) {
			if declaresTasks(mr.caps) {
				call.input = nil // the task's asks are its inputRequests
				return s.createExtTask(tool, call)
			}
			if tool.TaskSupport == TaskSupportRequired {
				return nil, missingTasks("tool " + p.Name)
			}
		}
	} else {
		s.mu.Lock()
		call.ClientCapabilities = s.clientCaps
		s.mu.Unlock()
	}
	switch {
	case asTask && (tool.TaskSupport == TaskSupportOptional || tool.TaskSupport == TaskSupportRequired):
		return s.createTask(tool, call, p.Task)
	case asTask:
		// The spec: for a tool without task support the server SHOULD answer -32601.
		return nil, Errorf(CodeMethodNotFound, "Task augmentation not supported: tool %s cannot run as a task", p.Name)
	case tool.TaskSupport == TaskSupportRequired && !s.opts.AdvisoryTaskSupport:
		// The spec: a required tool called without a task MUST get -32601.
		return nil, Errorf(CodeMethodNotFound, "Task augmentation required: tool %s must be called as a task", p.Name)
	}
	res, err := s.runTool(ctx, tool, call)
	if call.input == nil {
		return res, err
	}
	// An unanswered ask decides the outcome, whatever the handler made of
	// its ErrInputRequired.
	if call.input.pending() != nil && ctx.Err() == nil {
		return s.inputRequired(call.input)
	}
	if err != nil {
		return nil, err
	}
	res.ResultType = ResultComplete
	return res, nil
}

// runTool runs the handler and normalises its outcome: a nil result
// becomes an empty one, an error other than *Error, ErrNoResponse or an
// interruption becomes an IsError result.
func (s *Server) runTool(ctx context.Context, tool Tool, call *ToolCall) (*CallToolResult, error) {
	res, err := tool.Handler(ctx, call)
	if err != nil {
		var rpcErr *Error
		if errors.As(err, &rpcErr) || ctx.Err() != nil || errors.Is(err, ErrNoResponse) {
			return nil, err
		}
		return ErrorResult("%s", err.Error()), nil
	}
	if res == nil {
		res = &CallToolResult{}
	}
	if res.Content == nil {
		res.Content = []any{}
	}
	return res, nil
}

func (s *Server) setLogLevel(req *Request) (any, error) {
	var p struct {
		Level string `json:"level"`
	}
	if err := unmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	i := slices.Index(logLevels, p.Level)
	if i < 0 {
		return nil, Errorf(CodeInvalidParams, "Invalid params: unknown log level %q", p.Level)
	}
	s.mu.Lock()
	s.logLevel = i
	s.mu.Unlock()
	return struct{}{}, nil
}

func (s *Server) cancelRequest(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if err := json.Unmarshal(params, &p); err != nil || len(p.RequestID) == 0 {
		s.log.Warn("ignored malformed notifications/cancelled", "params", truncate(params, 200))
		return
	}
	key := string(p.RequestID)
	s.mu.Lock()
	r, ok := s.inflight[key]
	if ok && r.method != "initialize" {
		r.cancelled = true
	}
	s.mu.Unlock()
	switch {
	case !ok:
		s.log.Info("ignored cancel of unknown or finished request", "id", key, "reason", p.Reason)
	case r.method == "initialize":
		s.log.Warn("ignored cancel of initialize (clients must not cancel it)", "id", key)
	default:
		s.log.Info("request cancelled", "id", key, "method", r.method, "reason", p.Reason)
		r.cancel()
	}
}

func unmarshalParams(params json.RawMessage, v any) error {
	if len(params) == 0 || bytes.Equal(params, jsonNull) {
		return nil
	}
	if err := json.Unmarshal(params, v); err != nil {
		return Errorf(CodeInvalidParams, "Invalid params: %v", err)
	}
	return nil
}

// Notify sends the client a notification; params may be nil.
func (s *Server) Notify(method string, params any) error {
	return s.write(outgoing{JSONRPC: "2.0", Method: method, Params: params})
}

// Log sends notifications/message unless level is below the level the client
// set with logging/setLevel (debug until then). It reports whether it sent.
func (s *Server) Log(level, logger string, data any) (bool, error) {
	i := slices.Index(logLevels, level)
	if i < 0 {
		panic("mcpserve: unknown log level " + level)
	}
	s.mu.Lock()
	min := s.logLevel
	s.mu.Unlock()
	if i < min {
		return false, nil
	}
	params := map[string]any{"level": level, "data": data}
	if logger != "" {
		params["logger"] = logger
	}
	return true, s.Notify("notifications/message", params)
}

// Call sends the client a request with a fresh id and waits for the answer.
// A JSON-RPC error answer is returned as *Error.
func (s *Server) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	s.mu.Lock()
	s.nextID++
	id := fmt.Sprintf("mcpserve-%d", s.nextID)
	s.mu.Unlock()
	return s.CallWithID(ctx, id, method, params)
}

// CallWithID is Call with a chosen id (a string or an integer), for tests
// that need ids which collide with the client's own.
func (s *Server) CallWithID(ctx context.Context, id any, method string, params any) (json.RawMessage, error) {
	rawID, err := json.Marshal(id)
	if err != nil {
		return nil, fmt.Errorf("mcpserve: request id: %w", err)
	}
	key := string(rawID)
	reply := make(chan *incoming, 1)
	s.mu.Lock()
	if _, busy := s.pending[key]; busy {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrIDInUse, key)
	}
	s.pending[key] = reply
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, key)
		s.mu.Unlock()
	}()

	if err := s.write(outgoing{JSONRPC: "2.0", ID: rawID, Method: method, Params: params}); err != nil {
		return nil, err
	}
	select {
	case m := <-reply:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done:
		return nil, ErrClosed
	}
}

func (s *Server) deliver(m *incoming) {
	key := string(m.ID)
	s.mu.Lock()
	reply, ok := s.pending[key]
	delete(s.pending, key)
	s.mu.Unlock()
	if !ok {
		s.log.Warn("response to no pending request", "id", key)
		return
	}
	reply <- m
}

// WriteRaw writes p to the output as is, between whole frames. It is for
// servers that misbehave on purpose (a frame without a newline, a banner).
func (s *Server) WriteRaw(p []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.out == nil {
		return ErrNotServing
	}
	_, err := s.out.Write(p)
	return err
}

func (s *Server) write(v outgoing) error {
	frame, err := encodeFrame(v)
	if err != nil {
		return fmt.Errorf("mcpserve: encode %s: %w", describe(v), err)
	}
	return s.WriteRaw(frame)
}

func (s *Server) writeError(id json.RawMessage, e *Error) {
	if err := s.write(outgoing{JSONRPC: "2.0", ID: id, Error: e}); err != nil {
		s.log.Warn("write error response failed", "id", string(id), "err", err)
	}
}

func describe(v outgoing) string {
	if v.Method != "" {
		return v.Method
	}
	return "response " + string(v.ID)
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
