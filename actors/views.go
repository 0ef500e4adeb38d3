package actors

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Tools lists the tools of every enabled server that has listed them (its
// last known catalog while it restarts), in registration order, each under
// the name it is exposed by: an unprefixed server's tools that another
// server's hide are left out (exposure.go).
func (r *Runtime) Tools() []Tool {
	var out []Tool
	snap := r.snap.Load()
	owners := r.bareOwners(snap)
	for _, e := range snap.order {
		st := e.status.Load()
		if e.spec.Hidden || st == nil || !st.Enabled || st.State == StateFailed || st.State == StateStopped || st.State == StateDisabled {
			continue
		}
		out = appendTools(out, e, st, owners)
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
	snap := r.snap.Load()
	for _, e := range snap.order {
		if e.spec.Hidden || !servers(e.name) {
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
	var owners map[string]string // whole-host: a name's owner does not depend on the view
	for _, p := range picked {
		if p.e.spec.Unprefixed && owners == nil {
			owners = r.bareOwners(snap)
		}
		out = appendTools(out, p.e, p.st, owners)
	}
	return out
}

// appendTools appends e's catalog, each tool marked available when the
// server is ready (a restored or last known catalog is listed, not callable
// yet). An unprefixed server's tools are those owners says it exposes.
func appendTools(out []Tool, e *serverEntry, st *ServerStatus, owners map[string]string) []Tool {
	cat := e.catalog.Load()
	if cat == nil {
		return out
	}
	n := len(out)
	if e.spec.Unprefixed {
		for i := range cat.tools {
			if listed(e, &cat.tools[i], owners) {
				out = append(out, cat.tools[i])
			}
		}
	} else {
		out = append(out, cat.tools...)
	}
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
		if st := e.status.Load(); st != nil && !e.spec.Hidden {
			out = append(out, e.view(st))
		}
	}
	return out
}

// view is e's status st as readers get it: with its legacy incarnation's
// process.
func (e *serverEntry) view(st *ServerStatus) ServerStatus {
	v := *st
	v.LegacyPID = int(e.legacyPID.Load())
	return v
}

// LastStderr returns the last line the named server's process wrote to
// stderr since it last started (or exited), and when: what a server that
// takes long to start is doing (npx reporting its download). "" for none,
// a remote server or an unknown name. It never waits on the server, and
// is safe concurrently.
func (r *Runtime) LastStderr(name string) (string, time.Time) {
	e := r.snap.Load().byName[name]
	if e == nil {
		return "", time.Time{}
	}
	return e.stderr.last()
}

// WaitReady blocks until the named servers (all enabled ones if none are
// named) are ready. It returns early with an error when one of them is
// disabled, failed or stopped, and with the states of the rest when ctx ends.
func (r *Runtime) WaitReady(ctx context.Context, names ...string) error {
	return r.waitFor(ctx, names, settled)
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
	case StateNeedsAuth:
		// Settled unless a sign-in is under way or has just brought a
		// token: then it may yet become ready.
		if !signInUnderWay(st) {
			return true, &UnavailableError{Server: st.Name, State: st.State, Reason: st.LastError}
		}
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

// LookupTool finds a namespaced tool in its server's catalog (the last
// known one while the server starts), by the name it is exposed by or
// mcp__<server>__<own name>. The Tool is the catalog's own, which is
// immutable once published: read it, never change it.
func (r *Runtime) LookupTool(name string) (*Tool, bool) {
	server, tool, ok := SplitToolName(name)
	if !ok {
		return nil, false
	}
	e := r.snap.Load().byName[server]
	if e == nil || e.status.Load() == nil {
		return nil, false
	}
	return e.catalog.Load().resolve(tool)
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
	return e.view(st), true
}

// PendingCalls counts, per ready server, the requests in flight on its
// connection (calls, and the task polls and other requests of the host).
func (r *Runtime) PendingCalls() map[string]int {
	out := map[string]int{}
	for _, e := range r.snap.Load().order {
		if n, ready := e.pending(); ready {
			out[e.name] = n
		}
	}
	return out
}

// pending counts the requests in flight on e's connection; ready is false
// when it has none ready.
func (e *serverEntry) pending() (n int, ready bool) {
	if f := e.fast.Load(); f != nil {
		return f.conn.pending().size(), true
	}
	return 0, false
}

// Pending counts the requests in flight on server's connection, or, with
// legacy, on its legacy incarnation's (twin.go); 0 when it is not ready.
func (r *Runtime) Pending(server string, legacy bool) int {
	e := r.snap.Load().byName[server]
	if e != nil && legacy {
		l := &e.legacy
		l.mu.Lock()
		e = l.e
		l.mu.Unlock()
	}
	if e == nil {
		return 0
	}
	n, _ := e.pending()
	return n
}
