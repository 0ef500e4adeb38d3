package mcpvisor

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor/internal/tracing"
)

// lifecycleTracer makes a trace of every start of a server, from its state
// changes: "server start <name>", or "server restart <name>" after a
// backoff, a root span from the moment it began (or began to wait) to
// ready, or to the state it fell into instead, with its phases as
// children: "backoff" (the wait before a restart), "spawn" (the process,
// or the HTTP connection, until the handshake began) and "handshake"
// (initialize or server/discover, and the tool listing). Only names and
// states are recorded: a failure's reason may quote a server's stderr.
type lifecycleTracer struct {
	tp trace.TracerProvider
	tc tracing.Tracers

	mu      sync.Mutex
	servers map[string]*startAttempt
}

// startAttempt is a start under way: when each phase began.
type startAttempt struct {
	backoff, starting, initializing time.Time
}

// traceLifecycle subscribes the lifecycle tracer, when the host traces:
// Options.TracerProvider, or a global provider set before Open. Without
// one it subscribes nothing, so the runtime queues no events for it.
func (h *Host) traceLifecycle() {
	if tracing.Off(h.opts.TracerProvider) {
		return
	}
	lt := &lifecycleTracer{tp: h.opts.TracerProvider, servers: map[string]*startAttempt{}}
	h.Subscribe(lt.observe)
}

func (lt *lifecycleTracer) observe(ev Event) {
	if ev.Kind != EventState {
		return
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	a := lt.servers[ev.Server]
	switch ev.State {
	case StateBackoff:
		if a != nil && !a.starting.IsZero() {
			lt.end(ev, a) // the attempt under way failed
		}
		lt.servers[ev.Server] = &startAttempt{backoff: ev.Time}
	case StateStarting:
		if a == nil || !a.starting.IsZero() {
			if a != nil {
				lt.end(ev, a) // started again before it was ready (a restart by request)
			}
			a = &startAttempt{}
			lt.servers[ev.Server] = a
		}
		a.starting = ev.Time
	case StateInitializing:
		if a != nil {
			a.initializing = ev.Time
		}
	default: // ready, or a state that ends the attempt
		if a != nil && !a.starting.IsZero() {
			lt.end(ev, a)
		}
		delete(lt.servers, ev.Server)
	}
}

// end records attempt a as ending with ev. lt.mu is held.
func (lt *lifecycleTracer) end(ev Event, a *startAttempt) {
	tp := tracing.Provider(lt.tp)
	if tp == nil {
		return
	}
	name, begin := "server start "+ev.Server, a.starting
	if !a.backoff.IsZero() {
		name, begin = "server restart "+ev.Server, a.backoff
	}
	ctx, span := lt.tc.Tracer(tp).Start(context.Background(), name, trace.WithNewRoot(), trace.WithTimestamp(begin),
		trace.WithAttributes(tracing.Server.String(ev.Server), tracing.Restart.Bool(!a.backoff.IsZero()),
			tracing.State.String(string(ev.State))))
	if !span.IsRecording() {
		span.End()
		return
	}
	if !a.backoff.IsZero() {
		tracing.Interval(ctx, "backoff", a.backoff, a.starting, "")
	}
	spawned := ev.Time
	if !a.initializing.IsZero() {
		spawned = a.initializing
		failed := ""
		if ev.State != StateReady {
			failed = string(ev.State)
		}
		tracing.Interval(ctx, "handshake", a.initializing, ev.Time, failed)
	}
	spawnFailed := ""
	if a.initializing.IsZero() && ev.State != StateReady {
		spawnFailed = string(ev.State)
	}
	tracing.Interval(ctx, "spawn", a.starting, spawned, spawnFailed)
	if ev.State != StateReady {
		tracing.Fail(span, string(ev.State))
	}
	span.End(trace.WithTimestamp(ev.Time))
}
