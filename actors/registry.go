package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/protoactor/actor"

	"github.com/mcpvisor/mcpvisor/internal/broadcast"
)

// snapshot is the routing table: immutable, replaced on every registry
// change, read without locks on the call path.
type snapshot struct {
	order  []*serverEntry
	byName map[string]*serverEntry
}

// serverEntry is the shared face of one server actor: what readers need
// without going through its mailbox.
type serverEntry struct {
	name    string
	spec    ServerSpec
	pid     *actor.PID
	log     lineLog
	status  atomic.Pointer[ServerStatus]
	catalog atomic.Pointer[catalog]
	fast    atomic.Pointer[fastPath] // set while ready

	changed broadcast.Signal  // fired on every status change
	any     *broadcast.Signal // the runtime's statusChanged

	stopped  chan struct{} // closed once the server's process is gone for good
	stopOnce sync.Once

	stderr stderrTail // the last lines of stderr, for the exit record

	events   *eventLimiter // the server's event rate bound
	progress sync.Map      // progress token → *ProgressSub (progressEntry's)
	clock    pauseClock    // time the server's call timeouts stood still

	// Spent calls' messages and timers, for the next calls (recycle): a
	// call over a ready stdio connection allocates neither. Kept per server
	// so that they never leave the synctest bubble, if any, the server's
	// channels belong to.
	msgs, timers sync.Pool

	// dual: the server, modern, lists a legacy revision too (twin.go).
	dual atomic.Bool
	// legacy is the server's legacy incarnation, when it runs one; home,
	// in a legacy incarnation's entry, is its server's.
	legacy    legacyLane
	home      *serverEntry
	legacyPID atomic.Int64 // the legacy incarnation's process, for status
}

func (e *serverEntry) setStatus(st *ServerStatus) {
	e.status.Store(st)
	e.changed.Notify()
	e.any.Notify()
}

func (e *serverEntry) markStopped() { e.stopOnce.Do(func() { close(e.stopped) }) }

// Register adds servers, or replaces the ones of the same name whose spec
// differs (the old processes are stopped first). The server starts at
// once; calls to it queue until it is ready. Register returns when the
// server's actor exists, not when it is ready (see WaitReady).
func (r *Runtime) Register(ctx context.Context, specs ...ServerSpec) error {
	seen := make(map[string]bool, len(specs))
	for i := range specs {
		if err := ValidateServerName(specs[i].Name); err != nil {
			return err
		}
		if seen[specs[i].Name] {
			return fmt.Errorf("%w: %q given twice", ErrDuplicateServer, specs[i].Name)
		}
		seen[specs[i].Name] = true
		specs[i] = specs[i].WithDefaults()
	}
	// One message and one snapshot for the lot: registering n servers one
	// by one would copy the routing table n times.
	reply := make(chan regReply, 1)
	rep, err := ask(ctx, r, &regMsg{specs: specs, reply: reply}, reply)
	if err != nil {
		return err
	}
	if rep.err != nil {
		return rep.err
	}
	for _, old := range rep.old {
		if err := waitStopped(ctx, old); err != nil {
			return err
		}
	}
	return nil
}

// Unregister removes a server and stops its process; it returns once the
// process is gone (or ctx ends). Calls in flight fail with ErrUnavailable.
func (r *Runtime) Unregister(ctx context.Context, name string) error {
	reply := make(chan *serverEntry, 1)
	e, err := ask(ctx, r, &unregMsg{name: name, reply: reply}, reply)
	if err != nil {
		return err
	}
	if e == nil {
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	r.pins.forget(name) // registered again, it is approved afresh
	return waitStopped(ctx, e)
}

// SetEnabled turns a server on or off at once. Disabling returns once its
// process is gone; enabling returns once it is starting.
func (r *Runtime) SetEnabled(ctx context.Context, name string, enabled bool) error {
	return r.tell(ctx, name, func(done chan struct{}) any { return &setEnabledMsg{enabled: enabled, done: done} })
}

// tell sends a server's actor the message msg makes and waits until the
// actor closes its done channel, the server is gone, or ctx ends.
func (r *Runtime) tell(ctx context.Context, name string, msg func(done chan struct{}) any) error {
	e := r.snap.Load().byName[name]
	if e == nil {
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	done := make(chan struct{})
	r.send(e.pid, msg(done))
	select {
	case <-done:
		return nil
	case <-e.stopped:
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Restart stops a server's process and starts it again at once, resetting
// its restart count and backoff; it returns once the server is starting.
func (r *Runtime) Restart(ctx context.Context, name string) error {
	e := r.snap.Load().byName[name]
	if e == nil {
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	done := make(chan error, 1)
	r.send(e.pid, &restartMsg{done: done})
	select {
	case err := <-done:
		return err
	case <-e.stopped:
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AuthChanged tells a server that its authorization changed (a token was
// obtained, or a sign-in ended): one waiting for sign-in starts again.
func (r *Runtime) AuthChanged(name string) {
	if e := r.snap.Load().byName[name]; e != nil {
		r.send(e.pid, &authChanged{})
	}
}

// AuthChangedWait is AuthChanged that returns once the server has acted on
// the change: a server signed out is in needs_auth by then, and its status
// says so. It returns early when ctx ends.
func (r *Runtime) AuthChangedWait(ctx context.Context, name string) error {
	e := r.snap.Load().byName[name]
	if e == nil {
		return nil
	}
	done := make(chan struct{})
	r.send(e.pid, &authChanged{done: done})
	select {
	case <-done:
	case <-e.stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func waitStopped(ctx context.Context, e *serverEntry) error {
	select {
	case <-e.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("server %q still stopping: %w", e.name, ctx.Err())
	}
}

// Registry actor messages.
type regMsg struct {
	specs []ServerSpec
	reply chan regReply
}

type regReply struct {
	old []*serverEntry // the servers these replaced, being stopped
	err error
}

type unregMsg struct {
	name  string
	reply chan *serverEntry
}

type closeMsg struct{ reply chan []*serverEntry }

// registryActor owns the set of servers: it spawns and stops server actors
// and publishes the routing snapshot. It never waits for a server.
type registryActor struct {
	rt     *Runtime
	closed bool
}

func (g *registryActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *regMsg:
		m.reply <- g.register(m.specs)
	case *unregMsg:
		m.reply <- g.remove(m.name, fmt.Errorf("%w: server %q was unregistered", ErrUnavailable, m.name))
	case *closeMsg:
		g.closed = true
		snap := g.rt.snap.Load()
		for _, e := range snap.order {
			g.rt.send(e.pid, &stopServerMsg{err: ErrClosed})
		}
		g.rt.snap.Store(&snapshot{byName: map[string]*serverEntry{}})
		m.reply <- snap.order
	}
}

func (g *registryActor) register(specs []ServerSpec) regReply {
	if g.closed {
		return regReply{err: ErrClosed}
	}
	var rep regReply
	var added []*serverEntry
	for _, spec := range specs {
		old := g.rt.snap.Load().byName[spec.Name]
		if old != nil && sameSpec(old.spec, spec) {
			continue
		}
		if old != nil {
			// Replaced in place: it keeps its position in the order.
			g.rt.send(old.pid, &stopServerMsg{err: fmt.Errorf("%w: server %q was replaced", ErrUnavailable, spec.Name)})
			rep.old = append(rep.old, old)
		}
		added = append(added, g.spawn(spec))
	}
	if len(added) > 0 {
		g.publish(func(s *snapshot) {
			for _, e := range added {
				if old := s.byName[e.name]; old != nil {
					s.order[indexOf(s.order, e.name)] = e
				} else {
					s.order = append(s.order, e)
				}
				s.byName[e.name] = e
			}
		})
		g.rt.notifyExposure(nil)
	}
	return rep
}

// spawn creates a server's entry and actor.
func (g *registryActor) spawn(spec ServerSpec) *serverEntry { return g.rt.spawnEntry(spec, nil) }

// spawnEntry creates the entry and actor of spec: a server's, or with
// home, that server's legacy incarnation (twin.go), which shares its event
// rate and writes to its log.
func (r *Runtime) spawnEntry(spec ServerSpec, home *serverEntry) *serverEntry {
	e := &serverEntry{
		name:    spec.Name,
		spec:    spec,
		home:    home,
		any:     &r.statusChanged,
		stopped: make(chan struct{}),
	}
	initial := StateStarting
	if !spec.Enabled {
		initial = StateDisabled
	}
	// Tools counts the last known catalog until the server lists its own,
	// so a disabled server reports what it had, before and after a restart.
	e.status.Store(&ServerStatus{Name: spec.Name, FriendlyName: spec.FriendlyName, Description: spec.Description,
		Transport: spec.Transport, Enabled: spec.Enabled, State: initial, Since: time.Now(), Tools: len(spec.LastCatalog)})
	if len(spec.LastCatalog) > 0 {
		// The last known catalog answers Tools at once, marked unavailable
		// until the server has listed its tools again.
		e.catalog.Store(restoredCatalog(&spec, spec.LastCatalog, r.maxToolName))
	}
	prefix := spec.Name + "-"
	if home != nil {
		e.events, e.log, prefix = home.events, legacyLog{home.log}, spec.Name+"-legacy-"
	} else {
		e.events, e.log = r.rate.limiter(spec.Name), discardLog{}
		if r.logs != nil {
			e.log = r.logs.Open(spec.Name) // no descriptor until it writes
		}
	}
	// Spawned from the root, not as the registry's child: a server actor
	// stops itself once its process is gone, and a parent stopping later
	// would signal an actor that no longer exists (a dead letter).
	e.pid = r.system.Root.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor {
		return newServerActor(r, e, spec)
	}), prefix)
	return e
}

func (g *registryActor) remove(name string, why error) *serverEntry {
	e := g.rt.snap.Load().byName[name]
	if e == nil {
		return nil
	}
	g.publish(func(s *snapshot) {
		if i := indexOf(s.order, name); i >= 0 {
			s.order = append(s.order[:i], s.order[i+1:]...)
		}
		delete(s.byName, name)
	})
	g.rt.notifyExposure(nil)
	g.rt.send(e.pid, &stopServerMsg{err: why})
	return e
}

// publish copies the snapshot, applies change and stores it.
func (g *registryActor) publish(change func(*snapshot)) {
	old := g.rt.snap.Load()
	s := &snapshot{
		order:  append([]*serverEntry(nil), old.order...),
		byName: make(map[string]*serverEntry, len(old.byName)+1),
	}
	for k, v := range old.byName {
		s.byName[k] = v
	}
	change(s)
	g.rt.snap.Store(s)
	g.rt.statusChanged.Notify()
}

// sameSpec reports whether registering b over a changes nothing: the last
// known catalog is a hint, not part of what the server is.
func sameSpec(a, b ServerSpec) bool {
	a.LastCatalog, b.LastCatalog = nil, nil
	return reflect.DeepEqual(a, b)
}

func indexOf(order []*serverEntry, name string) int {
	for i, e := range order {
		if e.name == name {
			return i
		}
	}
	return -1
}

// Notify sends a notification to every connected server (e.g.
// notifications/roots/list_changed).
// SubscribeResource adds (on) or removes uri from the resources a modern
// server reports updates of on its subscriptions/listen stream. It fails
// with ErrLegacySubscribe for a server that is not modern (or not yet
// known to be): ask it with resources/subscribe instead.
func (r *Runtime) SubscribeResource(ctx context.Context, server, uri string, on bool) error {
	e := r.snap.Load().byName[server]
	if e == nil {
		return errUnknownServer(server)
	}
	m := &resourceSubMsg{uri: uri, on: on, reply: make(chan error, 1)}
	r.send(e.pid, m)
	select {
	case err := <-m.reply:
		return err
	case <-e.stopped:
		return fmt.Errorf("%w: server %q was stopped", ErrUnavailable, server)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Runtime) Notify(method string, params json.RawMessage) {
	for _, e := range r.snap.Load().order {
		r.send(e.pid, &notifyMsg{method: method, params: params})
	}
}

// notifyMsg asks the actor to send a notification to its server.
type notifyMsg struct {
	method string
	params json.RawMessage
}
