package tracing

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// States names the runtime's server states the lifecycle tracer tells
// apart (actors.State values). The caller gives them, since this package
// sits below the runtime and may not import it; any other state ends a
// start attempt that has begun.
type States struct {
	Backoff, Starting, Initializing, Ready string
}

// Lifecycle makes a trace of every start of a server, from its state
// changes: "server start <name>", or "server restart <name>" after a
// backoff, a root span from the moment it began (or began to wait) to
// ready, or to the state it fell into instead, with its phases as
// children: "backoff" (the wait before a restart), "spawn" (the process,
// or the HTTP connection, until the handshake began) and "handshake"
// (initialize or server/discover, and the tool listing). Only names and
// states are recorded: a failure's reason may quote a server's stderr.
// Safe for concurrent use.
type Lifecycle struct {
	tp     trace.TracerProvider
	states States
	tc     Tracers

	mu      sync.Mutex
	servers map[string]*startAttempt
}

// startAttempt is a start under way: when each phase began.
type startAttempt struct {
	backoff, starting, initializing time.Time
}

// NewLifecycle returns a lifecycle tracer over tp (nil: the global
// provider, see Provider) that reads states as the runtime names them.
func NewLifecycle(tp trace.TracerProvider, states States) *Lifecycle {
	return &Lifecycle{tp: tp, states: states, servers: map[string]*startAttempt{}}
}

// Observe takes server's change to state at t, in the order the runtime
// reported them.
func (lt *Lifecycle) Observe(server, state string, t time.Time) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	a := lt.servers[server]
	switch state {
	case lt.states.Backoff:
		if a != nil && !a.starting.IsZero() {
			lt.end(server, state, t, a) // the attempt under way failed
		}
		lt.servers[server] = &startAttempt{backoff: t}
	case lt.states.Starting:
		if a == nil || !a.starting.IsZero() {
			if a != nil {
				lt.end(server, state, t, a) // started again before it was ready (a restart by request)
			}
			a = &startAttempt{}
			lt.servers[server] = a
		}
		a.starting = t
	case lt.states.Initializing:
		if a != nil {
			a.initializing = t
		}
	default: // ready, or a state that ends the attempt
		if a != nil && !a.starting.IsZero() {
			lt.end(server, state, t, a)
		}
		delete(lt.servers, server)
	}
}

// end records attempt a of server as ending in state at t. lt.mu is held.
func (lt *Lifecycle) end(server, state string, t time.Time, a *startAttempt) {
	tp := Provider(lt.tp)
	if tp == nil {
		return
	}
	name, begin := "server start "+server, a.starting
	if !a.backoff.IsZero() {
		name, begin = "server restart "+server, a.backoff
	}
	ctx, span := lt.tc.Tracer(tp).Start(context.Background(), name, trace.WithNewRoot(), trace.WithTimestamp(begin),
		trace.WithAttributes(Server.String(server), Restart.Bool(!a.backoff.IsZero()),
			State.String(state)))
	if !span.IsRecording() {
		span.End()
		return
	}
	ready := state == lt.states.Ready
	if !a.backoff.IsZero() {
		Interval(ctx, "backoff", a.backoff, a.starting, "")
	}
	spawned := t
	if !a.initializing.IsZero() {
		spawned = a.initializing
		failed := ""
		if !ready {
			failed = state
		}
		Interval(ctx, "handshake", a.initializing, t, failed)
	}
	spawnFailed := ""
	if a.initializing.IsZero() && !ready {
		spawnFailed = state
	}
	Interval(ctx, "spawn", a.starting, spawned, spawnFailed)
	if !ready {
		Fail(span, state)
	}
	span.End(trace.WithTimestamp(t))
}
