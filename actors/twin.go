package actors

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// A server's legacy incarnation. A modern server asks for input inside its
// answers (input_required); a legacy client's call expects the server's own
// requests (elicitation, sampling, roots) instead, and a server written for
// both eras often asks that way only when a legacy session serves the call.
// So a request made for a legacy client that answers server requests
// (CallOptions.Legacy) goes, when its server is modern, lists a legacy
// revision among those it supports and is not pinned to one, to a second
// incarnation of that server spoken to in the legacy era: started on the
// first such request, stopped once no such request came for
// Options.LegacyIdle, and with its server (stopped, disabled, replaced).
// One that fails for good is stopped, and for LegacyIdle the server serves
// its legacy clients itself, as it can.
//
// It is the same server to everyone else: its spec is the server's, pinned
// to protocol.ProtocolVersion and hidden (not listed, its catalog not
// journaled, no exposure or pin reviews of its own); it announces no state
// changes; its lifecycle records and log lines name it "legacy
// incarnation"; its progress notifications reach the tokens of the server's
// entry; the requests it sends the host are marked ServerRequest.Legacy,
// so they are attributed among the calls that went to it.

// DefaultLegacyIdle is how long a legacy incarnation lives without a
// request (Options.LegacyIdle).
const DefaultLegacyIdle = 5 * time.Minute

// legacyLane is a server's legacy incarnation, as its entry keeps it.
type legacyLane struct {
	mu     sync.Mutex
	e      *serverEntry // nil: none running
	users  int          // requests under way on it
	last   time.Time    // when the last one ended
	reap   *time.Timer
	failed time.Time // when the last one failed for good
	closed bool      // the server stopped: no incarnation starts again
}

// laneFor is the entry a request with opts goes to: e, or e's legacy
// incarnation (started if need be) for a request made for a legacy client
// that answers server requests; with the latter, a func to call once the
// request has ended.
func (r *Runtime) laneFor(e *serverEntry, opts *CallOptions) (*serverEntry, func()) {
	if opts == nil || !opts.Legacy || !e.servesLegacyLane() {
		return e, nil
	}
	l := &e.legacy
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || r.closed.Load() {
		return e, nil
	}
	if l.e != nil && l.users == 0 {
		if st := l.e.status.Load(); st != nil && st.State == StateFailed {
			// It cannot start (its server's legacy revision is broken):
			// the server serves legacy clients as it can for a while.
			r.logger.Warn("the server's legacy incarnation failed; its legacy clients use the server itself", "server", e.name, "err", st.LastError)
			r.dropLane(l, fmt.Errorf("%w: server %q's legacy incarnation failed", ErrUnavailable, e.name))
			l.failed = time.Now()
		}
	}
	if l.e == nil && !l.failed.IsZero() && time.Since(l.failed) < r.legacyIdle {
		return e, nil
	}
	if l.e == nil {
		l.e = r.spawnLegacy(e)
		r.logger.Info("a legacy client's request: starting the server's legacy incarnation", "server", e.name)
	}
	l.users++
	return l.e, r.releaser(e, l.e)
}

// releaser is what ends a request on lane, e's legacy incarnation. Made
// here, not in laneFor: a closure there would move laneFor's variables
// to the heap on every call, legacy or not.
func (r *Runtime) releaser(e, lane *serverEntry) func() {
	return func() { r.releaseLane(e, lane) }
}

// servesLegacyLane reports whether e is ready as a modern server that also
// speaks a legacy revision, with no revision pinned.
func (e *serverEntry) servesLegacyLane() bool {
	if e.home != nil || e.spec.ProtocolVersion != "" || !e.dual.Load() {
		return false
	}
	st := e.status.Load()
	return st != nil && st.State == StateReady && protocol.IsModern(st.ProtocolVersion)
}

// speaksLegacy reports whether a server's supported versions include a
// legacy revision we speak.
func speaksLegacy(supported []string) bool {
	return slices.ContainsFunc(supported, func(v string) bool { return slices.Contains(protocol.SupportedVersions, v) })
}

// releaseLane ends a request on lane, e's legacy incarnation, and arms the
// reaper once none is left.
func (r *Runtime) releaseLane(e, lane *serverEntry) {
	l := &e.legacy
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.e != lane {
		return // reaped or replaced meanwhile
	}
	l.users--
	l.last = time.Now()
	if l.users == 0 && l.reap == nil {
		l.reap = time.AfterFunc(r.legacyIdle, func() { r.reapLane(e) })
	}
}

// reapLane stops e's legacy incarnation when it has been idle for
// legacyIdle, or looks again when it was used meanwhile.
func (r *Runtime) reapLane(e *serverEntry) {
	l := &e.legacy
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reap = nil
	if l.e == nil || l.users > 0 {
		return
	}
	if idle := time.Since(l.last); idle < r.legacyIdle {
		l.reap = time.AfterFunc(r.legacyIdle-idle, func() { r.reapLane(e) })
		return
	}
	r.logger.Info("the server's legacy incarnation is idle: stopping it", "server", e.name, "idle", r.legacyIdle)
	r.dropLane(l, fmt.Errorf("%w: server %q's legacy incarnation was idle for %s", ErrUnavailable, e.name, r.legacyIdle))
}

// dropLane stops l's incarnation, if any, with err, and forgets it and
// its reaper (l.mu held); it returns the incarnation it stopped.
func (r *Runtime) dropLane(l *legacyLane, err error) *serverEntry {
	stopTimer(&l.reap)
	lane := l.e
	if lane != nil {
		r.send(lane.pid, &stopServerMsg{err: err})
		l.e = nil
	}
	return lane
}

// stopLegacy stops e's legacy incarnation, if any, with err; for good
// when final (the server itself stops). It returns the incarnation it
// stopped.
func (r *Runtime) stopLegacy(e *serverEntry, err error, final bool) *serverEntry {
	l := &e.legacy
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = l.closed || final
	return r.dropLane(l, err)
}

// spawnLegacy creates e's legacy incarnation's entry and actor.
func (r *Runtime) spawnLegacy(e *serverEntry) *serverEntry {
	spec := e.spec
	spec.ProtocolVersion, spec.Hidden, spec.LastCatalog, spec.Enabled = protocol.ProtocolVersion, true, nil, true
	return r.spawnEntry(spec, e)
}

// legacyLog writes a legacy incarnation's lines to its server's log,
// marked; the server's actor closes the log.
type legacyLog struct{ lineLog }

func (l legacyLog) Write(tag, text string) { l.lineLog.Write(tag, "legacy incarnation: "+text) }
func (legacyLog) Close() error             { return nil }

// progressEntry is the entry whose progress tokens e's requests carry: a
// legacy incarnation's are its server's.
func (e *serverEntry) progressEntry() *serverEntry {
	if e.home != nil {
		return e.home
	}
	return e
}
