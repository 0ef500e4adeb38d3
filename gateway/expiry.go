package gateway

import (
	"context"
	"time"
)

// sweepInterval is how often idle sessions are looked for: a quarter of
// the idle timeout, within [1 s, 1 min], so a session outlives its timeout
// by at most a quarter of it.
func sweepInterval(idle time.Duration) time.Duration {
	return min(max(idle/4, time.Second), time.Minute)
}

// enter marks a request or stream of s in progress; leave ends it.
func (s *session) enter() { s.busy.Add(1) }

func (s *session) leave() {
	s.used.Store(s.g.now().UnixNano())
	s.busy.Add(-1)
}

// idleSince is when s last had nothing in progress, or false while it has.
func (s *session) idleSince() (time.Time, bool) {
	if s.busy.Load() > 0 {
		return time.Time{}, false
	}
	return time.Unix(0, s.used.Load()), true
}

// sweepIdle ends the HTTP sessions idle for longer than the idle timeout,
// then schedules the next sweep. It runs on a timer's goroutine, counted
// in g.wg so that Close waits for it.
func (g *Gateway) sweepIdle() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.wg.Add(1)
	defer g.wg.Done()
	cutoff := g.now().Add(-g.opts.IdleTimeout)
	var expired []*session
	for id, s := range g.sessions {
		if since, idle := s.idleSince(); idle && since.Before(cutoff) {
			delete(g.sessions, id)
			expired = append(expired, s)
		}
	}
	g.sweep.Reset(sweepInterval(g.opts.IdleTimeout))
	g.mu.Unlock()
	for _, s := range expired {
		g.log.Info("gateway: session expired", "idle_for", g.opts.IdleTimeout)
		g.endSession(s)
	}
}

// makeRoom is called, g.mu held, before a new HTTP session is added: at
// the cap it removes the least recently used idle session and returns it
// for the caller to end, or reports that every session is busy.
func (g *Gateway) makeRoom() (evicted *session, ok bool) {
	if g.opts.MaxSessions < 0 || len(g.sessions) < g.opts.MaxSessions {
		return nil, true
	}
	var oldest time.Time
	for _, s := range g.sessions {
		if since, idle := s.idleSince(); idle && (evicted == nil || since.Before(oldest)) {
			evicted, oldest = s, since
		}
	}
	if evicted == nil {
		return nil, false
	}
	delete(g.sessions, evicted.id)
	return evicted, true
}

// endSession ends a session no longer in the table: calls cancelled,
// grants deleted (bounded by endTimeout).
func (g *Gateway) endSession(s *session) {
	ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	if err := s.end(ctx); err != nil {
		g.log.Warn("gateway: ending a session", "err", err)
	}
}
