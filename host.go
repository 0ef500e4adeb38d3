package mcpvisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/elicit"
	"github.com/mcpvisor/mcpvisor/internal/flows"
	"github.com/mcpvisor/mcpvisor/internal/hosttools"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/internal/registry"
	"github.com/mcpvisor/mcpvisor/internal/secrets"
	"github.com/mcpvisor/mcpvisor/internal/serverlog"
	"github.com/mcpvisor/mcpvisor/internal/signin"
	"github.com/mcpvisor/mcpvisor/internal/toolpin"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/pipeline"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// Re-exported runtime types: the public API never shows actor-system types.
type (
	// Tool is one tool in the catalog, named as it is exposed:
	// mcp__<server>__<tool>, or its own name for a server with
	// "prefix": false.
	Tool = actors.Tool
	// ServerStatus is a point-in-time view of one server.
	ServerStatus = actors.ServerStatus
	// ContainmentStatus is how a stdio server's processes are held: its
	// cgroup, or its process group and why; with its resource limits.
	ContainmentStatus = actors.ContainmentStatus
	// State is where a server is in its life.
	State = actors.State
	// Event is a server notification or state change.
	Event = actors.Event
	// EventKind tells what an Event reports.
	EventKind = actors.EventKind
	// RestartPolicy is how a failed server is restarted.
	RestartPolicy = supervision.RestartPolicy
)

// Server states.
const (
	StateStarting     = actors.StateStarting
	StateInitializing = actors.StateInitializing
	StateReady        = actors.StateReady
	StateBackoff      = actors.StateBackoff
	StateStopped      = actors.StateStopped
	StateDisabled     = actors.StateDisabled
	StateFailed       = actors.StateFailed
	StateNeedsAuth    = actors.StateNeedsAuth
)

// Event kinds.
const (
	EventNotification = actors.EventNotification
	EventState        = actors.EventState
	EventTools        = actors.EventTools
)

// DefaultDataDir is where a Host keeps its files when Options.DataDir is "".
const DefaultDataDir = ".mcpvisor"

// Options configure a Host. The zero value is a host with no servers.
type Options struct {
	// Config lists the servers to start. nil: none (add them with Register).
	Config *Config
	// DataDir holds per-server logs (DataDir/logs). "": DefaultDataDir.
	DataDir string
	// Logger receives the host's logs. nil: slog.Default().
	Logger *slog.Logger
	// OnEvent receives server notifications and state changes in order, on a
	// goroutine the host owns, from the first server's start on: a
	// subscriber (see Host.Subscribe) that misses nothing. It should return
	// quickly: events queue behind it and, past a bound, are dropped and
	// counted.
	OnEvent func(Event)
	// EventRate bounds the events each server may push, per method
	// (notifications, log messages, resource updates): the excess is
	// dropped, counted (Host.EventsRateLimited) and summarised once a
	// second as an "mcpvisor/events_dropped" event with "reason": "rate",
	// so a flooding server cannot starve its neighbours. Zero: 1,000 per
	// second per method, bursts of 2,000; PerSecond < 0: unbounded.
	EventRate EventRate
	// Restart overrides the restart policy of every server (zero fields:
	// defaults: 500 ms doubling to 60 s with jitter, reset after 60 s ready,
	// at most 10 restarts in 5 minutes before a server is failed).
	Restart RestartPolicy
	// StopGrace and TermGrace are the stop ladder's waits: after closing a
	// server's stdin, and after SIGTERM. Zero: 2 s each.
	StopGrace, TermGrace time.Duration
	// ProcessGroupsOnly holds each stdio server by its process group and
	// an environment marker, never a cgroup v2 of its own, even where the
	// host could create one (docs/processes.md). The environment variable
	// MCPVISOR_CONTAINMENT=process-group does the same.
	ProcessGroupsOnly bool
	// ReapOrphans makes the host's process a child subreaper (Linux's
	// PR_SET_CHILD_SUBREAPER) while the host is open: orphans of its
	// servers' processes become its children, and it reaps them. This
	// changes the whole process, so only a program that is the host should
	// set it (the CLI does), not a library.
	ReapOrphans bool
	// MaxFrame bounds one JSON-RPC frame from a server, in bytes. Zero: 16 MiB.
	MaxFrame int
	// MaxToolName is the budget, in bytes, of the whole name a tool or a
	// gateway's prompt is exposed by (mcp__<server>__<tool>, or the bare
	// name of a server with "prefix": false). A name over it, or with a
	// character outside [a-zA-Z0-9_-], is exposed under a stable mapped
	// name (see Tool); calls by it reach the server's own. Zero:
	// DefaultMaxToolName (64, what model APIs accept); negative: no
	// length limit, characters still mapped.
	MaxToolName int
	// LookupEnv and Environ resolve ${VAR} references and build children's
	// environments. nil: the process's own (os.LookupEnv, os.Environ).
	LookupEnv func(string) (string, bool)
	Environ   []string

	// Journal configures the journal in DataDir/journal: retention, the
	// ingestion bound, call history.
	Journal JournalOptions
	// AlwaysOn lists tool groups (server names) every session sees and may
	// call without activating them; AllGroups among them stands for every
	// server, present and future (not ConfigGroup, which is only ever named).
	AlwaysOn []string
	// SmallCatalogOn turns every server's group on for every session while
	// the catalog is small: the enabled servers list at most
	// SearchToolsOver tools, so a client that lists tools sees them all and
	// calls them without activate_tools. Past it, sessions see what they
	// activate (and AlwaysOn), and search_tools finds the rest. The CLI's
	// serve and stdio set it unless --lazy.
	SmallCatalogOn bool
	// Only, when not nil, starts only the named servers of the registry; the
	// others keep their rows and are not started (the CLI's call uses it).
	Only []string

	// Elicitation answers servers' requests for input from a person. With
	// it (or Inbox) the host declares elicitation (form and url modes);
	// without either, servers are told it is not supported.
	Elicitation ElicitationHandler
	// AskInput answers a config input (${input:ID}, VS Code's "inputs") a
	// starting server needs and nobody has answered: the environment
	// (InputEnvName) and the answers kept from earlier runs come first.
	// It is called at once, from Open or Register; the answer is kept in
	// the data directory for later runs. nil: the question goes to the
	// person the host's elicitations go to (Elicitation or Inbox), while
	// the server waits in StateNeedsInput; with neither, such a server
	// does not start (see inputs.go).
	AskInput func(context.Context, InputRequest) (string, error)
	// Inbox turns on the built-in broker instead: pending elicitations are
	// listed by Elicitations and answered with ResolveElicitation.
	Inbox bool
	// ElicitationDeadline is how long a person has to answer before the
	// host answers cancel. Zero: DefaultElicitationDeadline (5 minutes).
	ElicitationDeadline time.Duration
	// MaxInputRounds bounds the rounds of a multi round-trip request
	// (2026-07-28): a server that still answers input_required after that
	// many is refused with ErrInputRounds. Zero: DefaultMaxInputRounds.
	MaxInputRounds int
	// Sampling and Roots are hooks for sampling/createMessage and
	// roots/list; each capability is declared only when its hook is set.
	Sampling SamplingHandler
	Roots    RootsProvider
	// CallSampling declares sampling to servers without a Sampling hook,
	// for calls that bring their own (CallOptions.Sampling, as a gateway's
	// do); a request that belongs to no such call is refused.
	CallSampling bool
	// CallRoots declares roots to servers without a Roots hook, for calls
	// that bring their own (CallOptions.Roots, as a gateway's do when its
	// client lists roots); a roots/list that belongs to no such call is
	// answered with Options.Roots, or no roots.
	CallRoots bool
	// LegacyIdle is how long a server's legacy incarnation lives without a
	// request. A modern server that also speaks a legacy revision serves
	// the calls of legacy clients that answer a server's questions
	// (CallOptions.LegacyClient, as a gateway sets for its 2025-11-25
	// clients) through a second process spoken to in that revision,
	// started on the first such call. 0: 5 minutes.
	LegacyIdle time.Duration

	// MediaURL is the URL prefix of media files written from tool results
	// (DataDir/media/<id>.<ext>). "": /v1/media/, as the sidecar serves them.
	MediaURL string
	// MaxMediaBytes bounds one decoded media item; a larger one is not
	// written. Zero: 32 MiB.
	MaxMediaBytes int64

	// NoHostTools hides the host's own tools (activate_tools, search_tools,
	// and the config group's register_mcp, delete_mcp, toggle_item and
	// list_items) from sessions; calling one is then ErrUnknownTool.
	NoHostTools bool
	// ToolPolicy pins the tool definitions of every server that sets no
	// policy of its own: ToolPolicyOff, ToolPolicyWarn or ToolPolicyHold.
	// "": the environment's MCPVISOR_TOOL_POLICY (through LookupEnv), so
	// every command on a data directory applies the same one; else off.
	// Anything else fails Open with ErrConfig.
	ToolPolicy string
	// SearchToolsOver is the catalog size past which sessions are shown
	// search_tools and Session.Catalog mentions it: the number of tools
	// of the enabled servers. Zero: DefaultSearchToolsOver; negative:
	// always. search_tools answers whether listed or not.
	SearchToolsOver int
	// Embedder, when set, adds semantic recall to search_tools: every
	// enabled server's tools are embedded in the background (cached by
	// their definition's text, so a server listing the same tools again
	// costs nothing), and a search fuses the ranking of its words with
	// that of its meaning (reciprocal rank fusion). Never on a tool call's
	// path; a query that cannot be embedded within 2 s ranks by words.
	// modelapi.OpenAIEmbedder is one for any OpenAI-compatible endpoint.
	Embedder Embedder
	// EmbedderWeight is what the meaning's ranking counts against the
	// words' (0 means 1: alike, right for a model that ranks tools about
	// as well as the words do). A weaker one helps only weighed lower: on
	// the tool corpus the Universal Sentence Encoder (lite) fuses best at
	// 0.25 and GloVe's word vectors at 0.1, and both rank worse than the
	// words alone at 1. internal/toolsearch's BenchmarkCorpusFusionUSE
	// measures any OpenAI-compatible endpoint's model (make bench-search).
	EmbedderWeight float64
	// Approve decides each host-tool call before it runs, with the model's
	// full arguments. A pending decision does not count against the call's
	// timeout. nil: ApprovalInbox decides; without it every call runs.
	Approve ApprovalFunc
	// ApprovalInbox holds the host-tool calls that change the registry
	// (register_mcp, delete_mcp, toggle_item) until ResolveApproval, or
	// until ApprovalDeadline passes (denied); list_items and activate_tools
	// run at once. Ignored when Approve is set.
	ApprovalInbox bool
	// ApprovalDeadline is how long a call waits in the approval inbox.
	// Zero: DefaultApprovalDeadline (5 minutes).
	ApprovalDeadline time.Duration

	// CallMiddleware are the embedder's stages of the call pipeline, the
	// first outermost. They see every call, whoever makes it (Host.Call,
	// sessions, the gateway, the sidecar), after the call history stage
	// and before the host's own checks (grants, arguments, host tools).
	CallMiddleware []CallMiddleware

	// TracerProvider makes a span of every call ("tools/call <tool>"),
	// whoever makes it, as the pipeline's outermost stage; the span is the
	// parent the server sees in _meta's traceparent. nil: the global
	// provider (otel.GetTracerProvider), a no-op unless the program set
	// one, which costs a call nothing.
	TracerProvider trace.TracerProvider

	// Cluster, when set, makes the host one member of a cluster of hosts
	// that behave as one: each server runs on one member, and a call on
	// any member reaches it. Set it to a cluster.Options (package
	// github.com/mcpvisor/mcpvisor/cluster); nil: a host on its own, which
	// links none of the cluster machinery.
	Cluster Cluster

	// SignIn, when set, signs in by itself whenever a remote server needs
	// OAuth authorization: it receives the authorization URL (to open for
	// the platform's user) and returns the redirect's query, or nil to let
	// the host's loopback listener receive it. nil: a server that needs
	// sign-in waits in state needs_auth for BeginSignIn or SignInWith.
	SignIn SignInFunc
	// SignInCallback is the redirect URI sign-ins use when a server's
	// configuration names none (oauth.callbackPort): a URL the embedder
	// serves itself (a sidecar's public URL + "/oauth/callback"), handing
	// the redirect's query to CompleteSignInRedirect. No loopback listener
	// is opened then. "": a loopback listener per sign-in.
	SignInCallback string
	// SecretKey encrypts DataDir/secrets.json (tokens, client secrets,
	// sealed credentials) with AES-256-GCM: 32 bytes. nil: the key in
	// MCPVISOR_SECRET_KEY or the file MCPVISOR_SECRET_KEY_FILE names, if
	// any; otherwise the file is plaintext, protected by its mode (0600).
	SecretKey []byte
}

// AllGroups, in Options.AlwaysOn, turns every server's group on for every
// session (mcpvisor serve|stdio --activate all).
const AllGroups = "*"

// DefaultCallTimeout bounds a tool call when neither the server's config
// nor CallOptions set a timeout.
const DefaultCallTimeout = actors.DefaultCallTimeout

// Host supervises MCP servers and routes namespaced tool calls to them. All
// methods are safe for concurrent use.
type Host struct {
	opts     Options
	rt       *actors.Runtime
	journal  *Journal
	grants   actors.Grants
	alwaysOn map[string]bool

	broker    *elicit.Broker
	approvals *hosttools.Inbox
	flows     *flows.Flows // servers' requests, answered
	secrets   *secrets.Store
	auth      *signin.Authorizers
	tasks     *actors.TaskPoller
	hostTools *hosttools.Toolset
	prompts   actors.PromptNames // the last prompt lists of servers
	reg       *registry.Registry // the servers' rows, and their entries resolved
	pipe      *pipeline.Pipeline // the request pipeline

	bg      context.Context // background task pollers; cancelled by Close
	stopBg  context.CancelFunc
	cluster member.Replica // cluster mode; nil otherwise
	closing chan struct{}
	closed  sync.Once
	// inputs are the servers waiting for answers to config inputs.
	inputs *flows.Inputs[ServerConfig]
}

// Open starts a host and every enabled server of opts.Config, concurrently.
// It returns at once: servers become ready in the background (see WaitReady),
// and calls to a server still starting wait for it.
func Open(ctx context.Context, opts Options) (*Host, error) {
	if opts.DataDir == "" {
		opts.DataDir = DefaultDataDir
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	if v, ok := opts.LookupEnv(ToolPolicyEnv); ok && opts.ToolPolicy == "" {
		opts.ToolPolicy = v
	}
	policy, err := toolpin.ParsePolicy(opts.ToolPolicy)
	if err != nil {
		return nil, fmt.Errorf("%w: ToolPolicy (or %s): %v", ErrConfig, ToolPolicyEnv, err)
	}
	// The data directory holds the journal, servers' logs and the secret
	// store: its user's alone, whichever command makes it.
	logDir := filepath.Join(opts.DataDir, "logs")
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	// The journal's lock first: it makes this process the only one that
	// reads or writes the data directory's secret store until Close, so
	// the store read next is current and stays so. OAuth refreshes rely on
	// it: a store read before another process let go of the lock could
	// hold a refresh token that process has since spent.
	journal, err := OpenJournal(opts.DataDir, opts.Journal, opts.Logger)
	if err != nil {
		return nil, err
	}
	secrets, err := secrets.OpenHost(opts.DataDir, opts.SecretKey, opts.LookupEnv)
	if err != nil {
		_ = journal.Close()
		return nil, err
	}
	h := &Host{
		secrets:   secrets,
		opts:      opts,
		journal:   journal,
		alwaysOn:  map[string]bool{},
		closing:   make(chan struct{}),
		broker:    elicit.NewBroker(elicit.BrokerOptions{Deadline: opts.ElicitationDeadline, Logger: opts.Logger}),
		approvals: hosttools.NewInbox(opts.ApprovalDeadline, opts.Logger),
	}
	h.bg, h.stopBg = context.WithCancel(context.Background())
	h.flows = h.newFlows()
	var ask func(context.Context, flows.Input) (string, error)
	if opts.AskInput != nil {
		ask = func(ctx context.Context, q flows.Input) (string, error) { return opts.AskInput(ctx, InputRequest(q)) }
	}
	h.inputs = flows.NewInputs[ServerConfig](inputsHost{h}, h.flows, ask)
	caps, handlers, notify := h.flows.Hooks()
	var placement actors.Placement
	if opts.Cluster != nil {
		// Made before the servers are registered, so that each starts
		// where the cluster places it.
		if h.cluster, err = opts.Cluster.NewReplica(clusterHost{h}, opts.Logger); err != nil {
			h.stopBg()
			_ = journal.Close()
			return nil, err
		}
		placement = h.cluster.Placement
	}
	h.rt = actors.New(actors.Options{
		Placement:     placement,
		Logger:        opts.Logger,
		LogDir:        logDir,
		OnEvent:       opts.OnEvent,
		EventRate:     opts.EventRate,
		Journal:       journal,
		Capabilities:  caps,
		Handlers:      handlers,
		Notifications: notify,
		HostTool:      IsHostTool,
		MaxToolName:   opts.MaxToolName,
		Containment:   supervision.ContainmentOptions{ProcessGroupsOnly: opts.ProcessGroupsOnly},
		ReapOrphans:   opts.ReapOrphans,
		ToolPolicy:    policy,
		LegacyIdle:    opts.LegacyIdle,
	})
	h.hostTools = h.newHostTools()
	h.auth = h.newAuthorizers()
	h.tasks = h.newTaskPoller()
	h.reg = registry.New(journal, secrets, h.rt, registry.Specs{Restart: opts.Restart,
		StopGrace: opts.StopGrace, TermGrace: opts.TermGrace, MaxFrame: opts.MaxFrame, Environ: opts.Environ,
		Lookup: h.lookupFor, Inputs: h.inputs, Authorize: h.auth.Authorize}, opts.Logger)
	h.pipe = h.newPipeline()
	for _, g := range opts.AlwaysOn {
		h.alwaysOn[g] = true
	}
	h.traceLifecycle()
	specs, err := h.reg.Load(ctx, h.opts.Config, h.opts.Only)
	if err == nil {
		var grants []persistence.GrantRecord
		if grants, err = journal.Store().Grants(); err == nil {
			h.grants.Load(grants)
			if err = h.rt.Register(ctx, specs...); err == nil {
				h.inputs.AskAll(h.bg)
				err = h.tasks.Resume(func(server string) bool { _, ok := h.rt.ServerStatus(server); return ok })
			}
			if err == nil && h.cluster != nil {
				err = h.cluster.Join(h.rt)
			}
		}
	}
	if err != nil {
		_ = h.Close()
		return nil, err
	}
	return h, nil
}

// isAlwaysOn reports whether group is on for every session.
func (h *Host) isAlwaysOn(group string) bool {
	return h.alwaysOn[group] || (h.alwaysOn[AllGroups] || h.smallCatalog()) && group != ConfigGroup || h.rt.IsAlwaysOn(group)
}

// smallCatalog reports whether every server is on for every session
// because the catalog is small (Options.SmallCatalogOn): search_tools is
// listed exactly when it is not.
func (h *Host) smallCatalog() bool {
	return h.opts.SmallCatalogOn && h.hostTools != nil && !h.hostTools.SearchListed()
}

// Close stops every server and returns when no process started by the host
// is left and its goroutines have exited. It is bounded in time (each
// server's stop ladder, in parallel, plus a margin) and idempotent.
func (h *Host) Close() error {
	bound := h.opts.StopGrace + h.opts.TermGrace
	if bound <= 0 {
		bound = actors.DefaultStopGrace + actors.DefaultTermGrace
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound+10*time.Second)
	defer cancel()
	// Task pollers stop first, without cancelling their tasks (the next
	// start resumes them); pending elicitations are answered cancel.
	h.closed.Do(func() { close(h.closing) })
	h.stopBg()
	if h.tasks != nil {
		h.tasks.Close() // without cancelling the tasks: the next start resumes them
	}
	if h.cluster != nil {
		h.cluster.Leave() // the other members place its servers
	}
	if h.auth != nil {
		// Sign-ins in progress end (a browser hook's context is
		// cancelled); users' instances are unregistered.
		h.auth.Close()
	}
	if h.hostTools != nil {
		h.hostTools.Close() // the tools' embedding under way
	}
	h.broker.Close()
	h.approvals.Close()
	h.inputs.Close()
	// Servers next: their last transitions reach the journal, which then
	// commits what is queued and closes.
	return errors.Join(h.rt.Close(ctx), h.journal.Close())
}

// LogFile is the path of the named server's log file: its stderr, log
// messages and lifecycle, one line each. The file may not exist yet.
func (h *Host) LogFile(name string) string {
	return filepath.Join(h.opts.DataDir, "logs", serverlog.SanitizeName(name)+".log")
}

// Journal is the host's journal: events, history, the registry.
func (h *Host) Journal() *Journal { return h.journal }

// JournalRecovery says what opening the journal found wrong with its
// files and did about it; its Damaged method is false for a journal that
// opened whole. It does not block.
func (h *Host) JournalRecovery() JournalRecovery { return h.journal.Store().Recovery() }

// Register adds a server or replaces the one of the same name (upsert), and
// starts it at once; calls to it wait until it is ready. The config is
// validated as a config file entry is. A disabled server is registered but
// not started. An enabled server with "prefix": false whose tools are
// known (it ran before) is refused with ErrNameCollision when it would
// expose a name another such server exposes (see ServerConfig.Prefix).
//
// The server is written to the registry (origin api) before it starts, and
// Register returns once that is durable: it is started again after a host
// restart. A server the config file also names is overwritten by the
// file's entry at the next start.
func (h *Host) Register(ctx context.Context, sc ServerConfig) error {
	spec, err := h.reg.Resolve(ctx, sc)
	if err != nil {
		return err
	}
	if err := h.checkExposure(spec); err != nil {
		return err
	}
	if err := h.reg.Put(ctx, sc, persistence.OriginAPI); err != nil {
		return err
	}
	if err := h.rt.Register(ctx, spec); err != nil {
		return err
	}
	h.inputs.AskAll(h.bg)
	if r := h.replicating(ctx); r != nil {
		r.ServerChanged(member.ServerChange{Name: sc.Name, Config: &sc, Enabled: sc.Enabled, Provenance: provenance(ctx)})
	}
	return nil
}

// Unregister removes a server and stops its process; it returns once the
// process is gone. Irreversible: the server's configuration is dropped.
//
// The registry row and the last known catalog are deleted first, durably.
func (h *Host) Unregister(ctx context.Context, name string) error {
	if _, ok, err := h.reg.Row(name); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	if err := h.reg.Delete(ctx, name); err != nil {
		return err
	}
	if err := h.secrets.Set(name, nil); err != nil {
		return err
	}
	if err := h.secrets.DropOAuth(name); err != nil {
		return err
	}
	h.auth.Drop(name)
	h.prompts.Forget(name)
	h.reg.Forget(name)
	h.inputs.Forget(name)
	if err := h.rt.Unregister(ctx, name); err != nil && !errors.Is(err, ErrUnknownServer) {
		return err // a server Options.Only left unstarted has no actor to stop
	}
	if r := h.replicating(ctx); r != nil {
		r.ServerChanged(member.ServerChange{Name: name, Deleted: true})
	}
	return nil
}

// SetEnabled turns a server on or off at once, no restart of the host
// needed. Disabling returns once its process is gone; enabling a failed
// server resets its restart history.
//
// The change is written to the registry first, durably, and survives a
// restart, even for a server from the config file (until its entry there
// changes). Enabling a server with "prefix": false that would expose a
// known tool name another such server exposes fails with
// ErrNameCollision, and changes nothing.
func (h *Host) SetEnabled(ctx context.Context, name string, enabled bool) error {
	if enabled {
		if err := h.rt.CheckEnable(name); err != nil {
			return err
		}
	}
	if err := h.reg.SetEnabled(ctx, name, enabled); err != nil {
		return err
	}
	sc, unresolved := h.reg.Unresolved(name)
	if enabled && unresolved {
		sc.Enabled = true
		return h.Register(ctx, sc)
	}
	if err := h.rt.SetEnabled(ctx, name, enabled); err != nil && !errors.Is(err, ErrUnknownServer) {
		return err // a server Options.Only left unstarted: the registry row is what changes
	}
	if !enabled {
		h.auth.StopUsersOf(name) // a per-user server's instances go with it
	}
	if r := h.replicating(ctx); r != nil {
		r.ServerChanged(member.ServerChange{Name: name, Enabled: enabled})
	}
	return nil
}

// Restart stops a server's process (or drops its HTTP connection) and
// starts it again at once, whatever state it is in short of disabled: an
// operator's restart of a wedged or failed server. Its calls in flight fail
// with ErrUnavailable; its restart count and backoff start afresh. It
// returns once the server is starting: WaitReady waits for the rest.
//
// In a cluster, the member the server runs on restarts it.
func (h *Host) Restart(ctx context.Context, name string) error {
	if owner := h.remoteOwner(name); owner != "" {
		return h.cluster.Restart(ctx, owner, name)
	}
	return h.rt.Restart(ctx, name)
}

// Tools lists every tool of the enabled servers, in server registration
// order, then each server's own order, under the names they are exposed
// by: namespaced, or their own for a server with "prefix": false (less any
// such tool another server's hides).
func (h *Host) Tools() []Tool { return h.rt.Tools() }

// PendingCalls counts the requests in flight on each ready server's
// connection. It never waits on a server.
func (h *Host) PendingCalls() map[string]int { return h.rt.PendingCalls() }

// Status returns each server's state. It never waits on a server, however
// that server behaves.
func (h *Host) Status() []ServerStatus {
	sts := h.rt.Status()
	for i := range sts {
		if note, ok := h.inputs.Status(sts[i].Name); ok {
			sts[i].State, sts[i].Enabled, sts[i].LastError = StateNeedsInput, true, note
		}
	}
	return sts
}

// StatusChanged returns a channel closed at the next change to what Status
// returns: a server's state, restarts, error or tool count, or a server
// registered or removed. Take the channel before calling Status, and a new
// one once it fires. It never blocks.
func (h *Host) StatusChanged() <-chan struct{} { return h.rt.StatusChanged() }

// WaitReady blocks until the named servers (every enabled one when none is
// named) are ready, one of them can no longer become ready (failed,
// disabled), or ctx ends.
func (h *Host) WaitReady(ctx context.Context, names ...string) error {
	return h.rt.WaitReady(ctx, names...)
}

// Call calls a tool by a name it is exposed under: mcp__<server>__<tool>,
// a tool's own name for a server with "prefix": false (see ResolveTool),
// or one of the host's own tools; args is a JSON object (nil means {}).
// It blocks until the result, the server's call timeout, or ctx ends; an
// abandoned call is cancelled at the server.
//
// A tool's own failure is a Result with IsError, not an error. Errors are
// ErrUnknownTool, ErrUnknownServer, ErrUnavailable, ErrTimeout, ErrCancelled,
// ErrFrameTooLarge, ErrNotReading, ErrConnectionLost, a JSON-RPC error from
// the server (*protocol.Error; -32042 comes as *URLElicitationRequiredError),
// a *SchemaError for structuredContent that does not match the tool's
// outputSchema, or for a task ErrTaskFailed, ErrTaskCancelled or
// ErrTaskLost, each wrapped with its context.
//
// Call ignores grants: it is the embedder's own call. Session.Call is a
// model's, limited to the groups granted to its scope.
func (h *Host) Call(ctx context.Context, tool string, args json.RawMessage) (*Result, error) {
	return h.call(ctx, Scope{}, tool, args, nil)
}

// CallWith is Call with options: progress, timeouts, detached tasks.
func (h *Host) CallWith(ctx context.Context, tool string, args json.RawMessage, opts CallOptions) (*Result, error) {
	return h.call(ctx, Scope{}, tool, args, &opts)
}

// newPipeline builds the host's request pipeline (package pipeline) over
// its runtime, once that is up.
func (h *Host) newPipeline() *pipeline.Pipeline {
	o := h.opts
	cfg := pipeline.Config{
		Runtime: h.rt, Transport: h.transport(), Flows: h.flows.Calls(h.cluster != nil), Tasks: h.tasks,
		KeepPayloads: o.Journal.KeepCallPayloads, Middleware: o.CallMiddleware,
		Granted: func(scope Scope, group string) bool {
			return h.isAlwaysOn(group) || h.grants.Get(scope).Has(group)
		},
		Validates: h.reg.Validates,
		MediaDir:  filepath.Join(o.DataDir, "media"), MediaURL: o.MediaURL, MaxMediaBytes: o.MaxMediaBytes,
		MaxInputRounds: o.MaxInputRounds, TracerProvider: o.TracerProvider, Logger: o.Logger,
	}
	if !o.Journal.NoCallHistory {
		cfg.Journal = h.journal
	}
	if !o.NoHostTools {
		cfg.HostTools = h.hostToolStage
	}
	return pipeline.New(cfg)
}

// TraceRequest opens the server span of an inbound MCP request that a
// server in front of the host (the gateway, or an embedder's own) answers
// by calling it: "<method> <target>", tools/call and the tool as the
// client named it, say. The span is a child of ctx's (the caller's, from
// TraceFromHeaders or TraceFromMeta) and the parent of the host's own call
// span. end records the outcome (ok, tool_error or error; never the error
// text) and ends the span; call it once. With tracing off it returns ctx
// and a no-op end, at no cost.
func (h *Host) TraceRequest(ctx context.Context, method, target string) (_ context.Context, end func(*Result, error)) {
	return h.pipe.TraceRequest(ctx, method, target)
}

// TraceFromHeaders returns ctx with the caller's trace context and baggage
// from the W3C headers of an inbound HTTP request (traceparent,
// tracestate, baggage), so the span of a call made with it is the
// caller's child; ctx itself when h carries none, at no cost.
func TraceFromHeaders(ctx context.Context, h http.Header) context.Context {
	return pipeline.TraceFromHeaders(ctx, h)
}

// TraceFromMeta is TraceFromHeaders for a request's _meta (SEP-414):
// ctx with the trace context and baggage meta carries, or ctx itself when
// it carries no valid traceparent or baggage.
func TraceFromMeta(ctx context.Context, meta json.RawMessage) context.Context {
	return pipeline.TraceFromMeta(ctx, meta)
}

// transport is where the host's requests go (member.Transport).
func (h *Host) transport() member.Transport {
	return member.Transport{Runtime: h.rt, Replica: h.cluster, Instance: h.auth.InstanceFor}
}

// Embedder turns texts into vectors whose cosine similarity says how
// alike their meanings are: an embeddings model (Options.Embedder). Embed
// returns one vector per text, in order; it may block on the network and
// must honour ctx.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
