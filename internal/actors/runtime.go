package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mcpvisor/mcpvisor/internal/broadcast"
	"github.com/mcpvisor/mcpvisor/internal/serverlog"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Options configure a Runtime. The zero value works: no logs, no events.
type Options struct {
	// Logger receives the runtime's own logs and protoactor's. nil: discarded.
	Logger *slog.Logger
	// LogDir holds one log file per server. "": no per-server files.
	LogDir string
	// ClientInfo is sent in initialize. Zero: mcpvisor.
	ClientInfo protocol.Implementation
	// OnEvent receives server notifications and state changes, in order, on
	// one goroutine the runtime owns. Slow handlers make events queue; past
	// EventQueue they are dropped and counted (see DroppedEvents).
	OnEvent    func(Event)
	EventQueue int // 0: 4096
	// Journal, when set, receives every server's events (notifications
	// that are not protocol plumbing), lifecycle transitions and catalogs.
	// The runtime writes to it and never closes it.
	Journal *Journal

	// Capabilities are declared in every initialize: declare exactly what
	// Handlers serve (elicitation, sampling, roots).
	Capabilities protocol.ClientCapabilities
	// Handlers serve requests servers send to the host, by method. A
	// method without one is answered -32601 (ping is always answered).
	Handlers map[string]Handler
	// Notifications receive protocol notifications the runtime does not
	// handle itself (e.g. notifications/elicitation/complete), by method,
	// in the server's actor: they must not block.
	Notifications map[string]func(server string, params json.RawMessage)
}

// Runtime is the actor system that supervises servers: a registry actor and
// one actor per server. Its methods are safe for concurrent use.
type Runtime struct {
	logger     *slog.Logger
	logDir     string
	system     *actor.ActorSystem
	registry   *actor.PID
	snap       atomic.Pointer[snapshot]
	initParams json.RawMessage

	wg      sync.WaitGroup // goroutines started on behalf of actors
	closed  atomic.Bool
	closeMu sync.Mutex
	done    chan struct{}

	events     chan Event
	eventsDone chan struct{}
	dropped    atomic.Uint64
	onEvent    func(Event)
	journal    *Journal
	handlers   map[string]Handler
	notify     map[string]func(server string, params json.RawMessage)

	statusChanged broadcast.Signal // any server's status, or the set of servers
}

// snapshot is the routing table: immutable, replaced on every registry
// change, read without locks on the call path.
type snapshot struct {
	order  []*serverEntry
	byName map[string]*serverEntry
}

// serverEntry is the shared face of one server actor: what readers need
// without going through its mailbox.
type serverEntry struct {
	name    string
	spec    ServerSpec
	pid     *actor.PID
	log     lineLog
	status  atomic.Pointer[ServerStatus]
	catalog atomic.Pointer[catalog]
	fast    atomic.Pointer[fastPath] // set while ready

	changed broadcast.Signal  // fired on every status change
	any     *broadcast.Signal // the runtime's statusChanged

	stopped  chan struct{} // closed once the server's process is gone for good
	stopOnce sync.Once

	stderr stderrTail // the last lines of stderr, for the exit record

	progress sync.Map   // progress token → *ProgressSub
	clock    pauseClock // time the server's call timeouts stood still
}

func (e *serverEntry) setStatus(st *ServerStatus) {
	e.status.Store(st)
	e.changed.Notify()
	e.any.Notify()
}

func (e *serverEntry) markStopped() { e.stopOnce.Do(func() { close(e.stopped) }) }

// New starts a runtime with no servers.
func New(opts Options) *Runtime {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	info := opts.ClientInfo
	if info.Name == "" {
		info = protocol.Implementation{Name: "mcpvisor", Title: "mcpvisor", Version: Version}
	}
	params, err := json.Marshal(protocol.InitializeParams{
		ProtocolVersion: protocol.ProtocolVersion,
		Capabilities:    opts.Capabilities,
		ClientInfo:      info,
	})
	if err != nil {
		panic(err) // static types: cannot fail
	}
	r := &Runtime{
		logger:     logger,
		logDir:     opts.LogDir,
		initParams: params,
		done:       make(chan struct{}),
		onEvent:    opts.OnEvent,
		journal:    opts.Journal,
		handlers:   opts.Handlers,
		notify:     opts.Notifications,
	}
	protoLogger := slog.New(demoteInfo{logger.Handler()}).With("lib", "protoactor")
	r.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return protoLogger }))
	r.snap.Store(&snapshot{byName: map[string]*serverEntry{}})
	if r.onEvent != nil {
		n := opts.EventQueue
		if n <= 0 {
			n = 4096
		}
		r.events = make(chan Event, n)
		r.eventsDone = make(chan struct{})
		go r.dispatchEvents()
	}
	r.registry = r.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &registryActor{rt: r} }))
	return r
}

// Version is the client version sent in initialize.
var Version = "0.1.0"

func (r *Runtime) send(pid *actor.PID, msg any) { r.system.Root.Send(pid, msg) }

// goroutine runs fn on a goroutine that Close joins.
func (r *Runtime) goroutine(fn func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fn()
	}()
}

// ask sends a registry message and waits for its reply or ctx.
func ask[T any](ctx context.Context, r *Runtime, msg any, reply chan T) (T, error) {
	var zero T
	if r.closed.Load() {
		return zero, ErrClosed
	}
	r.send(r.registry, msg)
	select {
	case v := <-reply:
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-r.done:
		return zero, ErrClosed
	}
}

// Register adds servers, or replaces the ones of the same name whose spec
// differs (the old processes are stopped first). The server starts at
// once; calls to it queue until it is ready. Register returns when the
// server's actor exists, not when it is ready (see WaitReady).
func (r *Runtime) Register(ctx context.Context, specs ...ServerSpec) error {
	seen := make(map[string]bool, len(specs))
	for i := range specs {
		if err := ValidateServerName(specs[i].Name); err != nil {
			return err
		}
		if seen[specs[i].Name] {
			return fmt.Errorf("%w: %q given twice", ErrDuplicateServer, specs[i].Name)
		}
		seen[specs[i].Name] = true
		specs[i] = specs[i].WithDefaults()
	}
	// One message and one snapshot for the lot: registering n servers one
	// by one would copy the routing table n times.
	reply := make(chan regReply, 1)
	rep, err := ask(ctx, r, &regMsg{specs: specs, reply: reply}, reply)
	if err != nil {
		return err
	}
	if rep.err != nil {
		return rep.err
	}
	for _, old := range rep.old {
		if err := waitStopped(ctx, old); err != nil {
			return err
		}
	}
	return nil
}

// Unregister removes a server and stops its process; it returns once the
// process is gone (or ctx ends). Calls in flight fail with ErrUnavailable.
func (r *Runtime) Unregister(ctx context.Context, name string) error {
	reply := make(chan *serverEntry, 1)
	e, err := ask(ctx, r, &unregMsg{name: name, reply: reply}, reply)
	if err != nil {
		return err
	}
	if e == nil {
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	return waitStopped(ctx, e)
}

// SetEnabled turns a server on or off at once. Disabling returns once its
// process is gone; enabling returns once it is starting.
func (r *Runtime) SetEnabled(ctx context.Context, name string, enabled bool) error {
	e := r.snap.Load().byName[name]
	if e == nil {
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	done := make(chan struct{})
	r.send(e.pid, &setEnabledMsg{enabled: enabled, done: done})
	select {
	case <-done:
		return nil
	case <-e.stopped:
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func waitStopped(ctx context.Context, e *serverEntry) error {
	select {
	case <-e.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("server %q still stopping: %w", e.name, ctx.Err())
	}
}

// Call runs tools/call for a namespaced tool and returns the raw result.
// It blocks until the result, the call's timeout, or ctx; an abandoned call
// is cancelled at the server (notifications/cancelled). opts may be nil.
func (r *Runtime) Call(ctx context.Context, name string, args, meta json.RawMessage, opts *CallOptions) (json.RawMessage, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	server, tool, ok := SplitToolName(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a namespaced tool name (mcp__<server>__<tool>)", ErrUnknownTool, name)
	}
	e := r.snap.Load().byName[server]
	if e == nil {
		return nil, fmt.Errorf("%w: %q (tool %q)", ErrUnknownServer, server, name)
	}
	if cat := e.catalog.Load(); cat != nil {
		if _, ok := cat.lookup(tool); !ok {
			return nil, fmt.Errorf("%w: server %q has no tool %q", ErrUnknownTool, server, tool)
		}
	}
	m := &callMsg{tool: tool, args: args, meta: meta, reply: make(chan callReply, 1)}
	if opts != nil {
		m.task = opts.Task
	}
	return r.do(ctx, e, name, m, opts)
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
	m := &callMsg{method: method, params: params, reply: make(chan callReply, 1)}
	return r.do(ctx, e, method, m, opts)
}

// do sends m (directly when the server is ready, else through its actor)
// and waits for its answer.
func (r *Runtime) do(ctx context.Context, e *serverEntry, what string, m *callMsg, opts *CallOptions) (json.RawMessage, error) {
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
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	if f := e.fast.Load(); f != nil {
		// Ready: send it from this goroutine; the reader answers it here.
		if m.method == "" {
			t, ok := f.cat.lookup(m.tool)
			if !ok {
				return nil, fmt.Errorf("%w: server %q has no tool %q", ErrUnknownTool, e.name, m.tool)
			}
			if err := m.applyTask(t, f.tasks); err != nil {
				return nil, err
			}
		}
		if err := startCall(f.conn, m); err != nil {
			return nil, fmt.Errorf("server %q: %w", e.name, err)
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
	timer := time.NewTimer(o.Timeout)
	defer timer.Stop()
	var resumed <-chan struct{}
	for {
		select {
		case rep := <-m.reply:
			drainProgress(progress, o.OnProgress)
			return rep.result, rep.err
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
					return nil, fmt.Errorf("%s: %w: over the maximum total of %s", what, ErrTimeout, o.MaxTotalTimeout)
				}
				return nil, fmt.Errorf("%s: %w after %s", what, ErrTimeout, o.Timeout)
			}
		case <-ctx.Done():
			r.send(e.pid, &cancelMsg{call: m, reason: "cancelled by the caller"})
			return nil, fmt.Errorf("%s: %w: %w", what, ErrCancelled, ctx.Err())
		case <-e.stopped:
			// The actor stopped before it could answer (unregistered, closed).
			select {
			case rep := <-m.reply:
				return rep.result, rep.err
			default:
			}
			return nil, fmt.Errorf("%w: server %q was stopped", ErrUnavailable, e.name)
		}
	}
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

// Tools lists the tools of every enabled server that has listed them (its
// last known catalog while it restarts), in registration order.
func (r *Runtime) Tools() []Tool {
	var out []Tool
	for _, e := range r.snap.Load().order {
		st := e.status.Load()
		if st == nil || !st.Enabled || st.State == StateFailed || st.State == StateStopped || st.State == StateDisabled {
			continue
		}
		out = appendTools(out, e, st)
	}
	return out
}

// ToolsOf lists prefix, then the tools of the named servers among the
// enabled ones, in registration order: the view of a session holding those
// groups. It costs the servers in the snapshot plus the tools returned,
// copied once into a new slice.
func (r *Runtime) ToolsOf(prefix []Tool, servers func(name string) bool) []Tool {
	type pick struct {
		e  *serverEntry
		st *ServerStatus
	}
	var picked []pick
	n := 0
	for _, e := range r.snap.Load().order {
		if !servers(e.name) {
			continue
		}
		st := e.status.Load()
		if st == nil || !st.Enabled || st.State == StateFailed || st.State == StateStopped || st.State == StateDisabled {
			continue
		}
		if cat := e.catalog.Load(); cat != nil {
			n += len(cat.tools)
		}
		picked = append(picked, pick{e, st})
	}
	// One allocation of the final size: the tools are copied once.
	out := make([]Tool, 0, len(prefix)+n)
	out = append(out, prefix...)
	for _, p := range picked {
		out = appendTools(out, p.e, p.st)
	}
	return out
}

// appendTools appends e's catalog, each tool marked available when the
// server is ready (a restored or last known catalog is listed, not callable
// yet).
func appendTools(out []Tool, e *serverEntry, st *ServerStatus) []Tool {
	cat := e.catalog.Load()
	if cat == nil {
		return out
	}
	n := len(out)
	out = append(out, cat.tools...)
	if st.State == StateReady {
		for i := n; i < len(out); i++ {
			out[i].Available = true
		}
	}
	return out
}

// StatusChanged returns a channel closed at the next change to any
// server's status or to the set of servers. Take it before reading Status,
// then take it again once it fires. It never blocks.
func (r *Runtime) StatusChanged() <-chan struct{} { return r.statusChanged.C() }

// Status returns every server's status, in registration order. It never
// waits on a server.
func (r *Runtime) Status() []ServerStatus {
	snap := r.snap.Load()
	out := make([]ServerStatus, 0, len(snap.order))
	for _, e := range snap.order {
		if st := e.status.Load(); st != nil {
			out = append(out, *st)
		}
	}
	return out
}

// WaitReady blocks until the named servers (all enabled ones if none are
// named) are ready. It returns early with an error when one of them is
// disabled, failed or stopped, and with the states of the rest when ctx ends.
func (r *Runtime) WaitReady(ctx context.Context, names ...string) error {
	snap := r.snap.Load()
	var entries []*serverEntry
	if len(names) == 0 {
		for _, e := range snap.order {
			if st := e.status.Load(); st != nil && st.Enabled {
				entries = append(entries, e)
			} else if st == nil && e.spec.Enabled {
				entries = append(entries, e)
			}
		}
	} else {
		for _, n := range names {
			e := snap.byName[n]
			if e == nil {
				return fmt.Errorf("%w: %q", ErrUnknownServer, n)
			}
			entries = append(entries, e)
		}
	}
	for _, e := range entries {
		for {
			ch := e.changed.C()
			if done, err := settled(e.status.Load()); done {
				if err != nil {
					return err
				}
				break
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return r.notReady(entries, ctx.Err())
			}
		}
	}
	return nil
}

// settled reports whether a server waited for is ready (nil) or will not
// become ready without an operator (an error).
func settled(st *ServerStatus) (bool, error) {
	if st == nil {
		return false, nil
	}
	switch st.State {
	case StateReady:
		return true, nil
	case StateFailed, StateDisabled, StateStopped:
		return true, &UnavailableError{Server: st.Name, State: st.State, Reason: st.LastError}
	}
	return false, nil
}

func (r *Runtime) notReady(entries []*serverEntry, cause error) error {
	var parts []string
	for _, e := range entries {
		st := e.status.Load()
		if st == nil {
			parts = append(parts, fmt.Sprintf("%s: not started", e.name))
			continue
		}
		if st.State == StateReady {
			continue
		}
		s := fmt.Sprintf("%s: %s", st.Name, st.State)
		if st.LastError != "" {
			s += " (" + st.LastError + ")"
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return fmt.Errorf("%w: not ready: %s: %w", ErrUnavailable, strings.Join(parts, "; "), cause)
}

// DroppedEvents counts events dropped because OnEvent fell behind.
func (r *Runtime) DroppedEvents() uint64 { return r.dropped.Load() }

// Close stops every server (the stop ladder, in parallel) and the actor
// system. It returns when every process started by the runtime is gone and
// every goroutine it started has exited, or when ctx ends. Idempotent.
func (r *Runtime) Close(ctx context.Context) error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.closed.Load() {
		return nil
	}
	reply := make(chan []*serverEntry, 1)
	r.send(r.registry, &closeMsg{reply: reply})
	entries := <-reply // the registry always answers: it never blocks
	r.closed.Store(true)
	var errs []error
	for _, e := range entries {
		if err := waitStopped(ctx, e); err != nil {
			errs = append(errs, err)
		}
	}
	_ = r.system.Root.StopFuture(r.registry).Wait()
	joined := make(chan struct{})
	go func() { r.wg.Wait(); close(joined) }()
	select {
	case <-joined:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("waiting for server goroutines: %w", ctx.Err()))
	}
	close(r.done)
	if r.events != nil {
		close(r.events)
		<-r.eventsDone
	}
	r.system.Shutdown()
	return errors.Join(errs...)
}

func (r *Runtime) emit(ev Event) {
	if r.events == nil {
		return
	}
	select {
	case r.events <- ev:
	default:
		r.dropped.Add(1)
	}
}

func (r *Runtime) dispatchEvents() {
	defer close(r.eventsDone)
	for ev := range r.events {
		r.onEvent(ev)
	}
}

// Registry actor messages.
type regMsg struct {
	specs []ServerSpec
	reply chan regReply
}

type regReply struct {
	old []*serverEntry // the servers these replaced, being stopped
	err error
}

type unregMsg struct {
	name  string
	reply chan *serverEntry
}

type closeMsg struct{ reply chan []*serverEntry }

// registryActor owns the set of servers: it spawns and stops server actors
// and publishes the routing snapshot. It never waits for a server.
type registryActor struct {
	rt     *Runtime
	closed bool
}

func (g *registryActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *regMsg:
		m.reply <- g.register(m.specs)
	case *unregMsg:
		m.reply <- g.remove(m.name, fmt.Errorf("%w: server %q was unregistered", ErrUnavailable, m.name))
	case *closeMsg:
		g.closed = true
		snap := g.rt.snap.Load()
		for _, e := range snap.order {
			g.rt.send(e.pid, &stopServerMsg{err: ErrClosed})
		}
		g.rt.snap.Store(&snapshot{byName: map[string]*serverEntry{}})
		m.reply <- snap.order
	}
}

func (g *registryActor) register(specs []ServerSpec) regReply {
	if g.closed {
		return regReply{err: ErrClosed}
	}
	var rep regReply
	var added []*serverEntry
	for _, spec := range specs {
		old := g.rt.snap.Load().byName[spec.Name]
		if old != nil && sameSpec(old.spec, spec) {
			continue
		}
		if old != nil {
			// Replaced in place: it keeps its position in the order.
			g.rt.send(old.pid, &stopServerMsg{err: fmt.Errorf("%w: server %q was replaced", ErrUnavailable, spec.Name)})
			rep.old = append(rep.old, old)
		}
		added = append(added, g.spawn(spec))
	}
	if len(added) > 0 {
		g.publish(func(s *snapshot) {
			for _, e := range added {
				if old := s.byName[e.name]; old != nil {
					s.order[indexOf(s.order, e.name)] = e
				} else {
					s.order = append(s.order, e)
				}
				s.byName[e.name] = e
			}
		})
	}
	return rep
}

// spawn creates a server's entry and actor.
func (g *registryActor) spawn(spec ServerSpec) *serverEntry {
	e := &serverEntry{
		name:    spec.Name,
		spec:    spec,
		any:     &g.rt.statusChanged,
		stopped: make(chan struct{}),
	}
	initial := StateStarting
	if !spec.Enabled {
		initial = StateDisabled
	}
	// Tools counts the last known catalog until the server lists its own,
	// so a disabled server reports what it had, before and after a restart.
	e.status.Store(&ServerStatus{Name: spec.Name, FriendlyName: spec.FriendlyName, Description: spec.Description,
		Transport: spec.Transport, Enabled: spec.Enabled, State: initial, Since: time.Now(), Tools: len(spec.LastCatalog)})
	if len(spec.LastCatalog) > 0 {
		// The last known catalog answers Tools at once, marked unavailable
		// until the server has listed its tools again.
		e.catalog.Store(restoredCatalog(spec.LastCatalog))
	}
	e.log = discardLog{}
	if g.rt.logDir != "" {
		f, err := serverlog.Open(spec.Name, serverlog.Options{Dir: g.rt.logDir})
		if err != nil {
			g.rt.logger.Warn("per-server log unavailable", "server", spec.Name, "err", err)
		} else {
			e.log = f
		}
	}
	// Spawned from the root, not as the registry's child: a server actor
	// stops itself once its process is gone, and a parent stopping later
	// would signal an actor that no longer exists (a dead letter).
	e.pid = g.rt.system.Root.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor {
		return newServerActor(g.rt, e, spec)
	}), spec.Name+"-")
	return e
}

func (g *registryActor) remove(name string, why error) *serverEntry {
	e := g.rt.snap.Load().byName[name]
	if e == nil {
		return nil
	}
	g.publish(func(s *snapshot) {
		if i := indexOf(s.order, name); i >= 0 {
			s.order = append(s.order[:i], s.order[i+1:]...)
		}
		delete(s.byName, name)
	})
	g.rt.send(e.pid, &stopServerMsg{err: why})
	return e
}

// publish copies the snapshot, applies change and stores it.
func (g *registryActor) publish(change func(*snapshot)) {
	old := g.rt.snap.Load()
	s := &snapshot{
		order:  append([]*serverEntry(nil), old.order...),
		byName: make(map[string]*serverEntry, len(old.byName)+1),
	}
	for k, v := range old.byName {
		s.byName[k] = v
	}
	change(s)
	g.rt.snap.Store(s)
	g.rt.statusChanged.Notify()
}

// sameSpec reports whether registering b over a changes nothing: the last
// known catalog is a hint, not part of what the server is.
func sameSpec(a, b ServerSpec) bool {
	a.LastCatalog, b.LastCatalog = nil, nil
	return reflect.DeepEqual(a, b)
}

func indexOf(order []*serverEntry, name string) int {
	for i, e := range order {
		if e.name == name {
			return i
		}
	}
	return -1
}

// demoteInfo passes protoactor's records through one level lower (info →
// debug), so its start-up chatter stays out of an operator's info log.
type demoteInfo struct{ slog.Handler }

func (h demoteInfo) Enabled(ctx context.Context, l slog.Level) bool {
	if l < slog.LevelWarn {
		l -= 4
	}
	return h.Handler.Enabled(ctx, l)
}

func (h demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		r.Level -= 4
	}
	return h.Handler.Handle(ctx, r)
}

func (h demoteInfo) WithAttrs(as []slog.Attr) slog.Handler {
	return demoteInfo{h.Handler.WithAttrs(as)}
}

func (h demoteInfo) WithGroup(name string) slog.Handler {
	return demoteInfo{h.Handler.WithGroup(name)}
}

// Lookup finds a namespaced tool in its server's catalog (the last known one
// while the server starts), with the server's status.
func (r *Runtime) Lookup(name string) (Tool, ServerStatus, bool) {
	server, tool, ok := SplitToolName(name)
	if !ok {
		return Tool{}, ServerStatus{}, false
	}
	e := r.snap.Load().byName[server]
	if e == nil {
		return Tool{}, ServerStatus{}, false
	}
	st := e.status.Load()
	t, ok := e.catalog.Load().lookup(tool)
	if !ok || st == nil {
		return Tool{}, ServerStatus{}, false
	}
	return *t, *st, true
}

// ServerStatus returns one server's status.
func (r *Runtime) ServerStatus(name string) (ServerStatus, bool) {
	e := r.snap.Load().byName[name]
	if e == nil {
		return ServerStatus{}, false
	}
	st := e.status.Load()
	if st == nil {
		return ServerStatus{}, false
	}
	return *st, true
}

// Notify sends a notification to every connected server (e.g.
// notifications/roots/list_changed).
func (r *Runtime) Notify(method string, params json.RawMessage) {
	for _, e := range r.snap.Load().order {
		r.send(e.pid, &notifyMsg{method: method, params: params})
	}
}

// notifyMsg asks the actor to send a notification to its server.
type notifyMsg struct {
	method string
	params json.RawMessage
}

// PendingCalls counts, per ready server, the requests in flight on its
// connection (calls, and the task polls and other requests of the host).
func (r *Runtime) PendingCalls() map[string]int {
	out := map[string]int{}
	for _, e := range r.snap.Load().order {
		if f := e.fast.Load(); f != nil {
			out[e.name] = f.conn.pending().size()
		}
	}
	return out
}
