package actors

import (
	"context"
	"fmt"
	"slices"
)

// StateElsewhere is a server placed on another member of a cluster: no
// process here; its status, once that member has published it, is that
// member's (ServerStatus.Node names it).
const StateElsewhere State = "elsewhere"

// Placement says where a server runs, given its name and its member label
// (ServerSpec.Node): "" here, else the address of the cluster member it is
// placed on (Options.Placement).
type Placement func(name, node string) string

// placeMsg moves a server here (owner "") or away.
type placeMsg struct {
	owner string
	done  chan struct{}
}

// remoteViewMsg is a server's status and tools as the member it runs on
// published them.
type remoteViewMsg struct {
	owner  string
	status ServerStatus
	tools  []Tool
}

// Place moves a server to where the cluster placed it: owner "" starts it
// here (when enabled); another member's address stops its process here
// (its calls in flight fail as unavailable) and leaves it StateElsewhere.
// It returns once the move is under way.
func (r *Runtime) Place(ctx context.Context, name, owner string) error {
	return r.tell(ctx, name, func(done chan struct{}) any { return &placeMsg{owner: owner, done: done} })
}

// SetRemoteView shows a server placed on owner as owner published it: its
// status and its tools, listed here under the names this host gives them.
// A view from a member the server is not placed on is ignored.
func (r *Runtime) SetRemoteView(name, owner string, st ServerStatus, tools []Tool) {
	if e := r.snap.Load().byName[name]; e != nil {
		r.send(e.pid, &remoteViewMsg{owner: owner, status: st, tools: tools})
	}
}

// NodeLabel is the member label a server is placed by ("": any member).
func (r *Runtime) NodeLabel(name string) string {
	if e := r.snap.Load().byName[name]; e != nil {
		return e.spec.Node
	}
	return ""
}

// Catalog is a server's tools as listed now (its last known catalog while
// it starts), under the names they are exposed by.
func (r *Runtime) Catalog(name string) []Tool {
	e := r.snap.Load().byName[name]
	if e == nil {
		return nil
	}
	if cat := e.catalog.Load(); cat != nil {
		return slices.Clone(cat.tools)
	}
	return nil
}

func (a *serverActor) onPlace(m *placeMsg) {
	defer close(m.done)
	if a.stopErr != nil || m.owner == a.owner {
		return
	}
	was := a.owner
	a.owner = m.owner
	if m.owner != "" {
		if was == "" {
			a.logLifecycle("placed on cluster member %s", m.owner)
			stopTimer(&a.retryTmr)
			a.inc.gen++ // ignore anything the old connection still reports
			a.dropConn(fmt.Errorf("%w: server %q moved to cluster member %s", ErrUnavailable, a.spec.Name, m.owner))
		}
		a.setState(StateElsewhere, "")
		return
	}
	a.logLifecycle("placed here by the cluster (was on %s)", orNone(was))
	if !a.spec.Enabled {
		a.setState(StateDisabled, "")
		return
	}
	a.restarter.Reset()
	a.lastErr = ""
	a.start()
}

func orNone(s string) string {
	if s == "" {
		return "no member"
	}
	return s
}

func (a *serverActor) onRemoteView(m *remoteViewMsg) {
	if a.stopErr != nil || a.owner == "" || m.owner != a.owner {
		return
	}
	a.entry.catalog.Store(restoredCatalog(&a.spec, m.tools, a.rt.maxToolName))
	st := m.status
	st.Name, st.FriendlyName, st.Description, st.Transport = a.spec.Name, a.spec.FriendlyName, a.spec.Description, a.spec.Transport
	st.Node = a.owner
	st.Tools = len(m.tools)
	a.entry.setStatus(&st)
}
