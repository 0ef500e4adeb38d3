package mcpvisor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// Re-exported runtime types: the public API never shows actor-system types.
type (
	// Tool is one namespaced tool (mcp__<server>__<tool>) in the catalog.
	Tool = actors.Tool
	// ServerStatus is a point-in-time view of one server.
	ServerStatus = actors.ServerStatus
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
	// goroutine the host owns. It should return quickly: events queue behind
	// it and, past a bound, are dropped and counted.
	OnEvent func(Event)
	// Restart overrides the restart policy of every server (zero fields:
	// defaults: 500 ms doubling to 60 s with jitter, reset after 60 s ready,
	// at most 10 restarts in 5 minutes before a server is failed).
	Restart RestartPolicy
	// StopGrace and TermGrace are the stop ladder's waits: after closing a
	// server's stdin, and after SIGTERM. Zero: 2 s each.
	StopGrace, TermGrace time.Duration
	// MaxFrame bounds one JSON-RPC frame from a server, in bytes. Zero: 16 MiB.
	MaxFrame int
	// LookupEnv and Environ resolve ${VAR} references and build children's
	// environments. nil: the process's own (os.LookupEnv, os.Environ).
	LookupEnv func(string) (string, bool)
	Environ   []string
}

// Host supervises MCP servers and routes namespaced tool calls to them. All
// methods are safe for concurrent use.
type Host struct {
	opts Options
	rt   *actors.Runtime

	mu sync.Mutex
	// unresolved holds disabled servers whose variables could not be
	// resolved when registered; enabling one resolves it again.
	unresolved map[string]ServerConfig
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
	logDir := filepath.Join(opts.DataDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	h := &Host{
		opts:       opts,
		unresolved: map[string]ServerConfig{},
		rt: actors.New(actors.Options{
			Logger:  opts.Logger,
			LogDir:  logDir,
			OnEvent: opts.OnEvent,
		}),
	}
	if opts.Config != nil {
		specs := make([]actors.ServerSpec, 0, len(opts.Config.Servers))
		for _, sc := range opts.Config.Servers {
			spec, err := h.resolve(sc)
			if err != nil {
				_ = h.Close()
				return nil, err
			}
			specs = append(specs, spec)
		}
		if err := h.rt.Register(ctx, specs...); err != nil {
			_ = h.Close()
			return nil, err
		}
	}
	return h, nil
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
	return h.rt.Close(ctx)
}

// Register adds a server or replaces the one of the same name (upsert), and
// starts it at once; calls to it wait until it is ready. The config is
// validated as a config file entry is. A disabled server is registered but
// not started.
func (h *Host) Register(ctx context.Context, sc ServerConfig) error {
	spec, err := h.resolve(sc)
	if err != nil {
		return err
	}
	return h.rt.Register(ctx, spec)
}

// resolve validates sc and turns it into the runtime's spec, with the
// host's options applied.
func (h *Host) resolve(sc ServerConfig) (actors.ServerSpec, error) {
	if err := sc.Validate(); err != nil {
		return actors.ServerSpec{}, err
	}
	spec, err := sc.Spec(h.opts.LookupEnv, h.opts.Environ)
	if err != nil && sc.Enabled {
		return actors.ServerSpec{}, err
	}
	h.mu.Lock()
	delete(h.unresolved, sc.Name)
	if err != nil {
		// A disabled server may name variables this environment lacks: it
		// is listed, and resolved again when enabled.
		h.unresolved[sc.Name] = sc
		spec = actors.ServerSpec{Name: sc.Name, Transport: actors.Transport(sc.Type),
			Description: sc.Description, FriendlyName: sc.FriendlyName}
	}
	h.mu.Unlock()
	spec.Restart = h.opts.Restart
	spec.StopGrace, spec.TermGrace = h.opts.StopGrace, h.opts.TermGrace
	if h.opts.MaxFrame > 0 {
		spec.MaxFrame = h.opts.MaxFrame
	}
	return spec, nil
}

// Unregister removes a server and stops its process; it returns once the
// process is gone. Irreversible: the server's configuration is dropped.
func (h *Host) Unregister(ctx context.Context, name string) error {
	h.mu.Lock()
	delete(h.unresolved, name)
	h.mu.Unlock()
	return h.rt.Unregister(ctx, name)
}

// SetEnabled turns a server on or off at once, no restart of the host
// needed. Disabling returns once its process is gone; enabling a failed
// server resets its restart history.
func (h *Host) SetEnabled(ctx context.Context, name string, enabled bool) error {
	h.mu.Lock()
	sc, unresolved := h.unresolved[name]
	h.mu.Unlock()
	if enabled && unresolved {
		sc.Enabled = true
		return h.Register(ctx, sc)
	}
	return h.rt.SetEnabled(ctx, name, enabled)
}

// Tools lists every namespaced tool of the enabled servers, in server
// registration order, then each server's own order.
func (h *Host) Tools() []Tool { return h.rt.Tools() }

// Status returns each server's state. It never waits on a server, however
// that server behaves.
func (h *Host) Status() []ServerStatus { return h.rt.Status() }

// WaitReady blocks until the named servers (every enabled one when none is
// named) are ready, one of them can no longer become ready (failed,
// disabled), or ctx ends.
func (h *Host) WaitReady(ctx context.Context, names ...string) error {
	return h.rt.WaitReady(ctx, names...)
}

// Call calls a namespaced tool, mcp__<server>__<tool>, with args (a JSON
// object; nil means {}). It blocks until the result, the server's call
// timeout, or ctx ends; an abandoned call is cancelled at the server.
//
// A tool's own failure is a Result with IsError, not an error. Errors are
// ErrUnknownTool, ErrUnknownServer, ErrUnavailable, ErrTimeout, ErrCancelled,
// ErrFrameTooLarge, ErrNotReading, ErrConnectionLost or a JSON-RPC error from
// the server (*protocol.Error), each wrapped with its context.
func (h *Host) Call(ctx context.Context, tool string, args json.RawMessage) (*Result, error) {
	if len(args) > 0 && !json.Valid(args) {
		return nil, fmt.Errorf("%s: arguments are not valid JSON", tool)
	}
	raw, err := h.rt.Call(ctx, tool, args, nil)
	if err != nil {
		return nil, err
	}
	res, err := decodeResult(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	return res, nil
}
