package actors

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/protoactor/actor"

	"github.com/mcpvisor/mcpvisor/internal/broadcast"
	"github.com/mcpvisor/mcpvisor/internal/protolog"
	"github.com/mcpvisor/mcpvisor/internal/serverlog"
	"github.com/mcpvisor/mcpvisor/internal/toolpin"
	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// Options configure a Runtime. The zero value works: no logs, no events.
type Options struct {
	// Logger receives the runtime's own logs and protoactor's. nil: discarded.
	Logger *slog.Logger
	// Placement, in cluster mode, says which servers run here: a server
	// placed elsewhere starts in StateElsewhere, and Place moves it.
	Placement Placement
	// LogDir holds one log file per server. "": no per-server files.
	LogDir string
	// ClientInfo is sent in initialize. Zero: mcpvisor.
	ClientInfo protocol.Implementation
	// OnEvent receives server notifications and state changes, in order, on
	// one goroutine the runtime owns, before any subscriber (Subscribe).
	// Slow handlers make events queue; past EventQueue they are dropped
	// and counted (see DroppedEvents). With neither OnEvent nor a
	// subscriber, events are not queued at all.
	OnEvent    func(Event)
	EventQueue int // 0: 4096
	// EventRate bounds each server's events per method (notifications,
	// log messages, resource updates); the excess is dropped, counted and
	// summarised in the journal and the event stream. Zero: the defaults.
	EventRate EventRate
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

	// HostTool reports whether name is one of the host's own tools: an
	// unprefixed server's tool of that name is reachable only by its
	// namespaced name (exposure.go). nil: the host has none.
	HostTool func(name string) bool
	// MaxToolName is the budget, in bytes, of the whole name a tool is
	// exposed by; names over it, or with characters model APIs refuse, are
	// mapped (NameMap). 0: DefaultMaxToolName; negative: no length limit.
	MaxToolName int

	// Containment chooses how stdio servers' processes are held together
	// (containment.go): a cgroup each where the host may create them,
	// process groups otherwise. The runtime owns the result; Close removes
	// it.
	Containment supervision.ContainmentOptions
	// ToolPolicy is the tool-pinning policy of servers that set none
	// (pins.go); unset: off.
	ToolPolicy toolpin.Policy

	// ReapOrphans makes the process a child subreaper while the runtime
	// runs, reaping its servers' orphans (supervision.StartSubreaper). It
	// is process-wide: for a program that is the host, not a library.
	ReapOrphans bool

	// LegacyIdle is how long a server's legacy incarnation, started for
	// the requests of legacy clients that answer server requests, lives
	// without one (twin.go). 0: DefaultLegacyIdle.
	LegacyIdle time.Duration

	// dial replaces how stdio servers are started (nil: dialStdio). It is
	// the package's test seam: a fake connection scripts the server.
	dial dialFunc
}

// Runtime is the actor system that supervises servers: a registry actor and
// one actor per server. Its methods are safe for concurrent use.
type Runtime struct {
	logger     *slog.Logger
	logs       *serverlog.Dir // the per-server log files; nil: none
	system     *actor.ActorSystem
	registry   *actor.PID
	snap       atomic.Pointer[snapshot]
	initParams json.RawMessage
	caps       protocol.ClientCapabilities // declared in initialize and in every modern request's _meta
	info       protocol.Implementation
	// legacyOrigins caches the era verdict of remote servers: the HTTP
	// endpoints that answered as legacy (era.go).
	legacyOrigins sync.Map

	wg      sync.WaitGroup // goroutines started on behalf of actors
	closed  atomic.Bool
	closeMu sync.Mutex
	done    chan struct{}

	events     chan Event
	eventsDone chan struct{}
	dropped    atomic.Uint64
	onEvent    func(Event)
	subs       subscribers // Subscribe
	rate       *rateSummaries
	journal    *Journal
	handlers   map[string]Handler
	notify     map[string]func(server string, params json.RawMessage)
	dial       dialFunc
	hostTool   func(string) bool
	// maxToolName is the budget of exposed names (NameBudget).
	maxToolName int
	placement   Placement

	statusChanged broadcast.Signal // any server's status, or the set of servers
	legacyIdle    time.Duration    // Options.LegacyIdle

	pins *pinBook // tool definitions approved and seen (pins.go)

	containment *supervision.Containment // how stdio servers are held (containment.go)
	subreaper   *supervision.Subreaper   // nil unless Options.ReapOrphans
}

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
		initParams: params,
		caps:       opts.Capabilities,
		info:       info,
		done:       make(chan struct{}),
		onEvent:    opts.OnEvent,
		journal:    opts.Journal,
		handlers:   opts.Handlers,
		notify:     opts.Notifications,
		dial:       opts.dial,
		hostTool:   opts.HostTool,

		maxToolName: NameBudget(opts.MaxToolName),
		placement:   opts.Placement,
		legacyIdle:  cmp.Or(opts.LegacyIdle, DefaultLegacyIdle),
	}
	r.pins = newPinBook(opts.ToolPolicy, opts.Journal, logger)
	r.startContainment(opts) // before any server starts: it reclaims a crashed life's leftovers
	if r.dial == nil {
		r.dial = r.dialStdio
	}
	if opts.LogDir != "" {
		logs, err := serverlog.OpenDir(serverlog.Options{Dir: opts.LogDir})
		if err != nil {
			logger.Warn("per-server logs unavailable", "err", err)
		}
		r.logs = logs
	}
	protoLogger := protolog.Logger(logger)
	r.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return protoLogger }))
	r.snap.Store(&snapshot{byName: map[string]*serverEntry{}})
	n := opts.EventQueue
	if n <= 0 {
		n = 4096
	}
	r.events = make(chan Event, n)
	r.eventsDone = make(chan struct{})
	go r.dispatchEvents()
	r.rate = newRateSummaries(r, opts.EventRate)
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
	r.stopContainment()
	if r.logs != nil {
		r.logs.Close() // the servers have closed their files: only the writer is left
	}
	close(r.done)
	r.rate.stop() // it emits: before the events channel closes
	close(r.events)
	<-r.eventsDone
	r.system.Shutdown()
	return errors.Join(errs...)
}

// EmitRelayed hands ev, an event of a server another member of the
// cluster runs, to this runtime's observers, in order with its own.
func (r *Runtime) EmitRelayed(ev Event) { r.emit(ev) }

func (r *Runtime) emit(ev Event) {
	if !r.listening() {
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
		r.deliver(ev)
	}
}
