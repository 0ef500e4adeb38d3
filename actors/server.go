package actors

import (
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/protoactor/actor"

	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// serverActor owns one MCP server: its connection, its pending requests, its
// restart policy and its tool catalog. Everything it does is a reaction to a
// message; nothing in Receive blocks. Slow work (spawning, the stop ladder)
// runs on goroutines the runtime joins, and reports back as messages.
type serverActor struct {
	owner string // cluster mode: the member the server is placed on; "" here
	rt    *Runtime
	entry *serverEntry
	spec  ServerSpec
	log   lineLog
	slog  *slog.Logger
	self  *actor.PID

	state     State
	since     time.Time
	lastErr   string
	lastCause error // what lastErr says, for errors.Is through UnavailableError

	inc incarnation // the current start's connection and exchanges

	queued []*callMsg // calls waiting for the server to become ready

	restarter  *supervision.Restarter
	retryTmr   *time.Timer
	nextRetry  time.Time
	stopErr    error         // set once stopServerMsg arrived
	disableAck chan struct{} // closed when a disable has taken effect
	busy       int           // spawn and stop goroutines not yet reported back
	stopSelf   bool

	// What the server said of itself at its last handshake, kept between
	// incarnations for status.
	init protocol.InitializeResult
	era  *modernEra // nil: legacy, or not known yet

	// resourceSubs are the resources a modern server reports updates of,
	// kept across incarnations: each new listen asks for them again.
	resourceSubs map[string]bool
	listedAll    []protocol.Tool // the last complete listing, for a catalog rebuilt after a pin decision
	known        []string
	cat          *catalog
	warnings     []string
	exposure     []string // why some tools are not exposed by their own names (exposure.go)
	banners      uint64

	serving map[string]*serving // server requests a handler is at work on, by id
}

// incarnation is what one start of a server owns: its connection and the
// timers and exchanges under way on it. start begins the next one, under a
// new generation, so that messages from an older connection are told apart
// and dropped; dropConn ends it, keeping only the generation. Everything a
// new start must not inherit lives here, so ending an incarnation is one
// assignment rather than a list of fields to remember.
type incarnation struct {
	gen       uint64
	conn      conn // nil when not connected
	exited    bool // the conn's process has been reaped
	connDying bool // stdout or stdin failed; waiting for the exit status
	startedAt time.Time

	startTmr  *time.Timer // the startup timeout
	graceTmr  *time.Timer // a dying connection's wait for its exit status
	probeTmr  *time.Timer // the server/discover in flight's timeout
	expiryTmr *time.Timer // the catalog's ttlMs
	relisten  *time.Timer // the next subscriptions/listen

	probes  int   // server/discover requests sent
	probeID int64 // the server/discover in flight
	// initID is the initialize in flight; sent beside a server/discover
	// that went unanswered for discoverTimeout, the first answer of the two
	// decides the era (era.go). initRefused is its error answer, held
	// while the server/discover's answer may still say modern.
	initID      int64
	initRefused *protocol.Message
	listenID    int64 // the subscriptions/listen in flight, 0 if none
	// subWaiters are the SubscribeResource calls whose change reopened
	// the listen: each is answered once the server acknowledges it (or the
	// listen ends, or subAckTmr fires), so that a subscription is in force
	// when the call returns.
	subWaiters []chan error
	subAckTmr  *time.Timer
	listens    int       // subscriptions/listen opened
	expires    time.Time // when the catalog's ttlMs ends; zero: no ttl
	walk       toolWalk  // the tools/list walk under way

	// authorized: the server's authorizer held a token during this
	// incarnation, so the connection was signed in; losing the token
	// then (a sign-out) leaves it signed out, not merely unauthenticated.
	authorized bool
}

// end stops the incarnation's timers and forgets it, keeping its
// generation until the next start.
func (inc *incarnation) end() {
	for _, t := range []**time.Timer{&inc.startTmr, &inc.graceTmr, &inc.probeTmr, &inc.expiryTmr, &inc.relisten} {
		stopTimer(t)
	}
	inc.releaseSubWaiters()
	*inc = incarnation{gen: inc.gen}
}

// toolWalk is a tools/list walk under way, page by page.
type toolWalk struct {
	listing bool            // a walk is under way
	relist  bool            // list_changed arrived during it: walk again
	pages   int             // pages so far
	lastCur string          // the cursor asked for last
	listed  []protocol.Tool // the tools of the pages so far
}

func newServerActor(rt *Runtime, entry *serverEntry, spec ServerSpec) *serverActor {
	return &serverActor{
		rt:        rt,
		entry:     entry,
		spec:      spec,
		log:       entry.log,
		slog:      rt.logger.With("server", spec.Name),
		restarter: supervision.NewRestarter(spec.Restart),
		known:     restoredCatalog(&spec, spec.LastCatalog, rt.maxToolName).names(),
	}
}

// Receive implements actor.Actor.
func (a *serverActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *callMsg:
		a.onCall(m)
	case *inboundMsg:
		if m.gen == a.inc.gen && a.inc.conn != nil {
			a.inc.conn.release(m.size)
			a.onInbound(&m.msg)
		}
	case *cancelMsg:
		a.onCancel(m)
	case *responseMsg:
		if m.gen == a.inc.gen && a.inc.conn != nil {
			a.onResponse(m)
		}
	case *serverReplied:
		a.onServerReplied(m)
	case *notifyMsg:
		// A modern server has no notifications from the client (roots
		// list changes are gone in 2026-07-28).
		if a.state == StateReady && a.era == nil {
			a.sendOut(notificationOut(m.method, m.params))
		}
	case *actor.Started:
		a.self = ctx.Self()
		if a.rt.placement != nil && a.entry.home == nil {
			a.owner = a.rt.placement(a.spec.Name, a.spec.Node)
		}
		if a.owner != "" {
			a.setState(StateElsewhere, "")
		} else if a.spec.Enabled {
			a.start()
		} else {
			a.setState(StateDisabled, "")
		}
	case *connStarted:
		a.onConnStarted(m)
	case *badFrame:
		if m.gen == a.inc.gen && a.inc.conn != nil {
			a.inc.conn.release(len(m.line))
			a.onBadFrame(m)
		}
	case *oversizedFrame:
		if m.gen == a.inc.gen {
			a.onOversized(m)
		}
	case *connUnhealthy:
		if m.gen == a.inc.gen && a.inc.conn != nil {
			a.onUnhealthy(m.err)
		}
	case *readerDone:
		if m.gen == a.inc.gen {
			a.onConnBroken(fmt.Sprintf("stdout closed: %v", eofText(m.err)))
		}
	case *writeFailed:
		if m.gen == a.inc.gen {
			a.onConnBroken(fmt.Sprintf("writing to stdin failed: %v", m.err))
		}
	case *processExited:
		if m.gen == a.inc.gen {
			a.inc.exited = true
			a.onExited(m.exit)
		}
	case *authChanged:
		a.onAuthChanged()
		if m.done != nil {
			close(m.done)
		}
	case *repinMsg:
		a.onRepin(m)
	case *connFailed:
		if m.gen == a.inc.gen && a.inc.conn != nil {
			a.logLifecycle("connection lost: %v", m.err)
			a.fail(m.err)
		}
	case *connGrace:
		if m.gen == a.inc.gen && a.inc.connDying {
			a.onDeath(a.lastErr)
		}
	case *discoverTimedOut:
		a.onDiscoverTimeout(m)
	case *catalogExpired:
		a.onCatalogExpired(m)
	case *resourceSubMsg:
		a.onResourceSub(m)
	case *subAckTimeout:
		if m.gen == a.inc.gen {
			a.inc.releaseSubWaiters()
		}
	case *exposureChanged:
		a.onExposureChanged()
	case *relistenTick:
		if m.gen == a.inc.gen && a.state == StateReady && a.inc.listenID == 0 {
			a.inc.relisten = nil
			a.listen()
		}
	case *startupTimeout:
		if m.gen == a.inc.gen && (a.state == StateStarting || a.state == StateInitializing) {
			a.logLifecycle("startup timeout after %s", a.spec.StartupTimeout)
			err := fmt.Errorf("startup timeout: no complete handshake within %s", a.spec.StartupTimeout)
			if a.inc.probeID != 0 && a.spec.ProtocolVersion != "" {
				err = fmt.Errorf("startup timeout: no answer to server/discover within %s (protocolVersion %s is pinned, so there is no fallback to initialize)",
					a.spec.StartupTimeout, a.spec.ProtocolVersion)
			}
			a.fail(err)
		}
	case *retryTick:
		if m.gen == a.inc.gen && a.state == StateBackoff {
			a.logLifecycle("restart (attempt %d)", a.restarter.Restarts())
			a.start()
		}
	case *setEnabledMsg:
		a.onSetEnabled(m)
	case *restartMsg:
		m.done <- a.onRestart()
	case *placeMsg:
		a.onPlace(m)
	case *remoteViewMsg:
		a.onRemoteView(m)
	case *stopServerMsg:
		a.onStop(m.err, true)
	case *connClosed:
		a.busy--
		a.settle()
	case *actor.Stopping:
		// Stopped from outside (normally the registry sends stopServerMsg
		// first): make sure no process outlives the actor.
		a.onStop(ErrClosed, false)
	case *actor.Restarting:
		// A panic in this actor's code. protoactor re-creates the actor;
		// the process and calls of this incarnation must not leak.
		a.onStop(fmt.Errorf("%w: internal error in the server's actor", ErrUnavailable), false)
	}
}

// setState records a state change and publishes the status.
func (a *serverActor) setState(s State, lastErr string) {
	changed := s != a.state
	if changed {
		a.since = time.Now()
	}
	if s != StateReady {
		a.entry.fast.Store(nil)
	}
	a.state = s
	a.lastErr = lastErr
	if lastErr == "" {
		a.lastCause = nil
	}
	// Publish before emitting: whoever reacts to the event sees the status.
	a.publish()
	if changed && a.entry.home == nil { // a legacy incarnation's states are its own
		a.rt.emit(Event{Time: a.since, Server: a.spec.Name, Kind: EventState, State: s, Err: lastErr})
	}
}

func (a *serverActor) publish() {
	st := &ServerStatus{
		Name:         a.spec.Name,
		FriendlyName: a.spec.FriendlyName,
		Description:  a.spec.Description,
		Transport:    a.spec.Transport,
		Enabled:      a.spec.Enabled,
		State:        a.state,
		Node:         a.owner,
		Since:        a.since,
		LastError:    a.lastErr,
		Restarts:     a.restarter.Restarts(),
		Warnings:     a.statusWarnings(),
		BannerLines:  a.banners,
	}
	if a.spec.Auth != nil {
		as := a.spec.Auth.Status()
		st.Auth = &as
	}
	if a.state == StateBackoff {
		st.NextRetry = a.nextRetry
	}
	if a.inc.conn != nil {
		st.PID = a.inc.conn.pid()
		st.Containment = containmentOf(a.inc.conn)
	}
	if home := a.entry.home; home != nil {
		home.legacyPID.Store(int64(st.PID))
	}
	if a.state == StateReady {
		st.CatalogExpires = a.inc.expires
	}
	if a.state == StateReady || a.state == StateInitializing {
		st.ProtocolVersion = a.init.ProtocolVersion
		st.ServerInfo = a.init.ServerInfo
		st.Instructions = a.init.Instructions
		st.Capabilities = a.init.Capabilities
	}
	if a.cat != nil {
		st.Tools = len(a.cat.tools)
		st.Reviews, st.Held = a.cat.reviews, len(a.cat.held)
	}
	if p := a.spec.ToolPolicy.Or(a.rt.pins.policy); p != "" {
		st.ToolPolicy = string(p)
	}
	a.entry.setStatus(st)
}

// statusWarnings are the catalog's warnings, then the exposure's.
func (a *serverActor) statusWarnings() []string {
	if len(a.exposure) == 0 {
		return a.warnings
	}
	return append(slices.Clip(a.warnings), a.exposure...)
}

func (a *serverActor) after(d time.Duration, msg any) *time.Timer {
	self := a.self
	return time.AfterFunc(d, func() { a.rt.send(self, msg) })
}

func (a *serverActor) logLifecycle(format string, args ...any) {
	a.log.Write("lifecycle", fmt.Sprintf(format, args...))
}

// stderrLine is called on the process's stderr pump goroutine.
func (a *serverActor) stderrLine(line []byte) {
	a.log.Write("stderr", string(line))
	a.entry.stderr.add(string(line))
	a.slog.Debug("stderr", "line", string(line))
}

func stopTimer(t **time.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

func eofText(err error) string {
	if err == nil {
		return "EOF"
	}
	return err.Error()
}

// redactURL names an endpoint without userinfo or query, which may hold
// credentials.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

func commandLine(cmd string, args []string) string {
	if len(args) == 0 {
		return cmd
	}
	return cmd + " " + strings.Join(args, " ")
}
