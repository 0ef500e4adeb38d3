package actors

import (
	"context"
	"fmt"
)

// WaitSettled blocks until each named server (every enabled one when none
// is named) has settled: it is ready, or the attempt to start it has
// failed (backoff, failed, or needs_auth with no sign-in under way), or it
// is disabled or stopped. A server still starting or initializing is
// waited for, on its first start or a restart alike, so the caller learns
// the outcome of the attempt under way and not of the whole restart
// schedule: a missing command settles at once, a server that never
// answers at its StartupTimeout.
//
// It returns nil once every one has settled, whatever its state (Status
// says which); an error wrapping ErrUnknownServer for a name not
// registered; and when ctx ends first, an error wrapping ErrUnavailable
// and ctx's error that names the servers not ready. Safe for concurrent
// use; it never queues behind a server.
func (r *Runtime) WaitSettled(ctx context.Context, names ...string) error {
	return r.waitFor(ctx, names, func(st *ServerStatus) (bool, error) { return hasSettled(st), nil })
}

// waitFor waits, on status changes, until done says each of the servers
// names selects (waitEntries) is done; an error from done ends the wait
// with it. When ctx ends first the error names the servers not ready.
func (r *Runtime) waitFor(ctx context.Context, names []string, done func(*ServerStatus) (bool, error)) error {
	entries, err := r.waitEntries(names)
	if err != nil {
		return err
	}
	for _, e := range entries {
		for {
			ch := e.changed.C()
			if ok, err := done(e.liveAuth(e.status.Load())); ok {
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

// hasSettled reports whether a server is ready or its attempt to start has
// ended without it becoming ready.
func hasSettled(st *ServerStatus) bool {
	if st == nil {
		return false
	}
	switch st.State {
	case StateReady, StateBackoff, StateFailed, StateDisabled, StateStopped:
		return true
	case StateNeedsAuth:
		// A sign-in under way (a browser the host opened, an embedder's
		// hook) is part of the attempt: it may yet make the server ready.
		return !signInUnderWay(st)
	}
	return false
}

// signInUnderWay reports whether a server that needs a sign-in may yet
// become ready by itself: a sign-in is under way (a browser the host
// opened, an embedder's hook), or one has just ended with a token the
// server's actor has not started on yet.
func signInUnderWay(st *ServerStatus) bool {
	return st.Auth != nil && (st.Auth.Pending || st.Auth.SignedIn)
}

// liveAuth is st with its authorization read now rather than when st was
// published, for a server that needs a sign-in: a wait that begins as a
// sign-in ends must see its token before the actor has restarted the
// server, or it would take the server's last state for the outcome.
func (e *serverEntry) liveAuth(st *ServerStatus) *ServerStatus {
	if st == nil || st.State != StateNeedsAuth || e.spec.Auth == nil {
		return st
	}
	live := *st
	a := e.spec.Auth.Status()
	live.Auth = &a
	return &live
}

// waitEntries are the servers a wait is for: the named ones, or every
// enabled one (a server registered enabled whose actor has not published
// yet included).
func (r *Runtime) waitEntries(names []string) ([]*serverEntry, error) {
	snap := r.snap.Load()
	var entries []*serverEntry
	if len(names) == 0 {
		for _, e := range snap.order {
			if e.spec.Hidden {
				continue
			}
			if st := e.status.Load(); st != nil && st.Enabled {
				entries = append(entries, e)
			} else if st == nil && e.spec.Enabled {
				entries = append(entries, e)
			}
		}
		return entries, nil
	}
	for _, n := range names {
		e := snap.byName[n]
		if e == nil {
			return nil, fmt.Errorf("%w: %q", ErrUnknownServer, n)
		}
		entries = append(entries, e)
	}
	return entries, nil
}
