package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mcpvisor/mcpvisor/internal/persistence"
	"github.com/mcpvisor/mcpvisor/internal/supervision"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// maxToolPages caps tools/list pagination: a server that never clears its
// cursor gets a warning, not a hang.
const maxToolPages = 50

// connGracePeriod is how long the actor waits for an exit status after
// stdout closed, so a crash is reported with its exit code or signal.
const connGracePeriod = 500 * time.Millisecond

// serverActor owns one MCP server: its connection, its pending requests, its
// restart policy and its tool catalog. Everything it does is a reaction to a
// message; nothing in Receive blocks. Slow work (spawning, the stop ladder)
// runs on goroutines the runtime joins, and reports back as messages.
type serverActor struct {
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

	gen       uint64
	conn      conn // nil when not connected
	exited    bool // the current conn's process has been reaped
	connDying bool // stdout or stdin failed; waiting for the exit status
	graceTmr  *time.Timer

	queued []*callMsg // calls waiting for the server to become ready

	restarter  *supervision.Restarter
	startTmr   *time.Timer
	retryTmr   *time.Timer
	nextRetry  time.Time
	startedAt  time.Time
	stopErr    error         // set once stopServerMsg arrived
	disableAck chan struct{} // closed when a disable has taken effect
	busy       int           // spawn and stop goroutines not yet reported back
	stopSelf   bool

	init     protocol.InitializeResult
	pages    int
	lastCur  string
	listed   []protocol.Tool
	listing  bool
	relist   bool
	known    []string
	cat      *catalog
	warnings []string
	banners  uint64

	serving map[string]*serving // server requests a handler is at work on, by id
}

func newServerActor(rt *Runtime, entry *serverEntry, spec ServerSpec) *serverActor {
	return &serverActor{
		rt:        rt,
		entry:     entry,
		spec:      spec,
		log:       entry.log,
		slog:      rt.logger.With("server", spec.Name),
		restarter: supervision.NewRestarter(spec.Restart),
		known:     restoredCatalog(spec.LastCatalog).names(),
	}
}

// Receive implements actor.Actor.
func (a *serverActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *callMsg:
		a.onCall(m)
	case *inboundMsg:
		if m.gen == a.gen && a.conn != nil {
			a.conn.release(m.size)
			a.onInbound(&m.msg)
		}
	case *cancelMsg:
		a.onCancel(m)
	case *responseMsg:
		if m.gen == a.gen && a.conn != nil {
			a.onResponse(m)
		}
	case *serverReplied:
		a.onServerReplied(m)
	case *notifyMsg:
		if a.state == StateReady {
			a.sendOut(notificationOut(m.method, m.params))
		}
	case *actor.Started:
		a.self = ctx.Self()
		if a.spec.Enabled {
			a.start()
		} else {
			a.setState(StateDisabled, "")
		}
	case *connStarted:
		a.onConnStarted(m)
	case *badFrame:
		if m.gen == a.gen && a.conn != nil {
			a.conn.release(len(m.line))
			a.onBadFrame(m)
		}
	case *oversizedFrame:
		if m.gen == a.gen {
			a.onOversized(m)
		}
	case *readerDone:
		if m.gen == a.gen {
			a.onConnBroken(fmt.Sprintf("stdout closed: %v", eofText(m.err)))
		}
	case *writeFailed:
		if m.gen == a.gen {
			a.onConnBroken(fmt.Sprintf("writing to stdin failed: %v", m.err))
		}
	case *processExited:
		if m.gen == a.gen {
			a.exited = true
			a.onDeath(m.exit.String())
		}
	case *connFailed:
		if m.gen == a.gen && a.conn != nil {
			a.logLifecycle("connection lost: %v", m.err)
			a.fail(m.err, m.permanent)
		}
	case *connGrace:
		if m.gen == a.gen && a.connDying {
			a.onDeath(a.lastErr)
		}
	case *startupTimeout:
		if m.gen == a.gen && (a.state == StateStarting || a.state == StateInitializing) {
			a.logLifecycle("startup timeout after %s", a.spec.StartupTimeout)
			a.fail(fmt.Errorf("startup timeout: no complete handshake within %s", a.spec.StartupTimeout), false)
		}
	case *retryTick:
		if m.gen == a.gen && a.state == StateBackoff {
			a.logLifecycle("restart (attempt %d)", a.restarter.Restarts())
			a.start()
		}
	case *setEnabledMsg:
		a.onSetEnabled(m)
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

// start spawns a new connection on a goroutine and waits for connStarted.
func (a *serverActor) start() {
	a.gen++
	gen := a.gen
	a.exited, a.connDying = false, false
	a.startedAt = time.Now()
	a.setState(StateStarting, a.lastErr)
	spec := a.spec // the connection's own copy
	if spec.Transport == TransportHTTP || spec.Transport == TransportSSE {
		// No process: the connection is made by the first POST.
		a.busy++
		a.onConnStarted(&connStarted{gen: gen, conn: startHTTP(gen, &spec, a.deliverer(), a.eventSink())})
		return
	}
	deliver := a.deliverer()
	a.busy++
	a.rt.goroutine(func() {
		msg := &connStarted{gen: gen}
		c, err := startStdio(gen, &spec, deliver, a.eventSink(), a.stderrLine)
		if err != nil {
			msg.err = err
		} else {
			msg.conn = c // never a typed nil in the interface
		}
		deliver(msg)
	})
}

// deliverer sends messages from a connection's goroutines to this actor.
func (a *serverActor) deliverer() func(any) {
	self := a.self
	return func(m any) { a.rt.send(self, m) }
}

func (a *serverActor) onConnStarted(m *connStarted) {
	a.busy--
	if m.gen != a.gen || a.state != StateStarting {
		// Superseded (disabled or stopped while spawning): discard it.
		if m.conn != nil {
			a.closeConn(m.conn)
		}
		a.settle()
		return
	}
	if m.err != nil {
		a.logLifecycle("failed to start: %v", m.err)
		a.fail(fmt.Errorf("failed to start: %w", m.err), false)
		return
	}
	a.conn = m.conn
	if pid := m.conn.pid(); pid != 0 {
		a.logLifecycle("spawned pid %d: %s", pid, commandLine(a.spec.Command, a.spec.Args))
		a.recordLifecycle("spawned", a.spec.Command, pid, nil)
	} else {
		a.logLifecycle("connecting to %s (%s)", redactURL(a.spec.URL), a.spec.Transport)
		a.recordLifecycle("connecting", redactURL(a.spec.URL), 0, nil)
	}
	a.setState(StateInitializing, a.lastErr)
	a.startTmr = a.after(a.spec.StartupTimeout, &startupTimeout{gen: a.gen})
	a.request(reqInitialize, protocol.MethodInitialize, a.rt.initParams)
}

// request sends one host-initiated request (initialize, tools/list).
func (a *serverActor) request(kind reqKind, method string, params json.RawMessage) {
	id, err := a.conn.pending().add(&pendingReq{kind: kind})
	if err == nil {
		err = a.conn.send(requestOut(id, method, protocol.AppendRequest(nil, id, method, params)))
	}
	if err != nil {
		a.fail(fmt.Errorf("%s: %w", method, err), false)
	}
}

func (a *serverActor) onCall(m *callMsg) {
	switch a.state {
	case StateReady:
		a.sendCall(m)
	case StateStarting, StateInitializing:
		a.queued = append(a.queued, m)
	default:
		m.reply <- callReply{err: a.unavailable()}
	}
}

func (a *serverActor) sendCall(m *callMsg) {
	t, ok := a.cat.lookup(m.tool)
	if !ok && m.tool != "" {
		m.reply <- callReply{err: fmt.Errorf("%w: server %q has no tool %q", ErrUnknownTool, a.spec.Name, m.tool)}
		return
	}
	if err := m.applyTask(t, a.init.Capabilities.TaskToolCalls()); err != nil {
		m.reply <- callReply{err: err}
		return
	}
	if err := startCall(a.conn, m); err != nil {
		m.reply <- callReply{err: fmt.Errorf("server %q: %w", a.spec.Name, err)}
	}
}

func (a *serverActor) onCancel(m *cancelMsg) {
	for i, q := range a.queued {
		if q == m.call { // not sent yet
			a.queued = append(a.queued[:i], a.queued[i+1:]...)
			return
		}
	}
	if a.conn == nil || !a.conn.pending().takeCall(m.call) {
		return // answered, failed, or sent on a connection since replaced
	}
	// A late response to this id is now unknown and dropped.
	params, _ := json.Marshal(protocol.CancelledParams{
		RequestID: json.RawMessage(strconv.FormatInt(m.call.id, 10)),
		Reason:    m.reason,
	})
	_ = a.conn.send(notificationOut(protocol.MethodCancelled, params))
	a.conn.abandon(m.call.id)
}

func (a *serverActor) onInbound(msg *protocol.Message) {
	switch msg.Kind {
	case protocol.KindResponse:
		// Its id matched nothing in flight: late (after a cancel) or bogus.
		a.slog.Debug("response with unknown id dropped", "id", string(msg.ID))
	case protocol.KindRequest:
		a.onServerRequest(msg)
	case protocol.KindNotification:
		a.onNotification(msg)
	}
}

func (a *serverActor) onResponse(m *responseMsg) {
	switch m.req.kind {
	case reqInitialize:
		a.onInitialized(&m.msg)
	case reqToolsList:
		a.onToolsPage(&m.msg)
	case reqSetLevel:
		if m.msg.Error != nil {
			a.slog.Warn("logging/setLevel refused", "level", a.spec.LogLevel, "err", m.msg.Error)
			a.logLifecycle("warning: logging/setLevel %s refused: %v", a.spec.LogLevel, m.msg.Error)
		}
		if a.state == StateInitializing {
			a.listTools()
		}
	}
}

func (a *serverActor) onInitialized(msg *protocol.Message) {
	if msg.Error != nil {
		a.logLifecycle("initialize failed: %v", msg.Error)
		a.fail(fmt.Errorf("initialize: %w", msg.Error), false)
		return
	}
	var res protocol.InitializeResult
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		a.fail(fmt.Errorf("initialize: malformed result: %w", err), false)
		return
	}
	older, err := protocol.CheckVersion(res.ProtocolVersion)
	if err != nil {
		// A version we cannot speak will not change by restarting.
		a.logLifecycle("initialize refused: %v", err)
		a.fail(fmt.Errorf("initialize: %w", err), true)
		return
	}
	if older {
		a.slog.Warn("server negotiated an older protocol revision", "version", res.ProtocolVersion, "ours", protocol.ProtocolVersion)
		a.logLifecycle("warning: server negotiated older protocol revision %s (we speak %s)", res.ProtocolVersion, protocol.ProtocolVersion)
	}
	a.init = res
	if err := a.conn.send(notificationOut(protocol.MethodInitialized, nil)); err != nil {
		a.fail(fmt.Errorf("notifications/initialized: %w", err), false)
		return
	}
	if a.spec.LogLevel != "" && res.Capabilities.LoggingDeclared() {
		// Part of the handshake: no call reaches the server before its
		// log level is set. tools/list follows the answer.
		params, _ := json.Marshal(protocol.LoggingSetLevelParams{Level: a.spec.LogLevel})
		a.request(reqSetLevel, protocol.MethodLoggingSetLevel, params)
		return
	}
	a.listTools()
}

// listTools starts a full tools/list walk.
func (a *serverActor) listTools() {
	a.listing, a.relist = true, false
	a.pages, a.lastCur, a.listed = 0, "", nil
	a.request(reqToolsList, protocol.MethodToolsList, nil)
}

func (a *serverActor) onToolsPage(msg *protocol.Message) {
	if msg.Error != nil {
		a.listing = false
		if a.state == StateInitializing {
			if a.init.Capabilities.Tools == nil {
				// Tools were never promised: a server without tools.
				a.becomeReady(nil)
				return
			}
			a.fail(fmt.Errorf("tools/list: %w", msg.Error), false)
			return
		}
		a.slog.Warn("tools/list failed; keeping the previous catalog", "err", msg.Error)
		return
	}
	var page protocol.ListToolsResult
	if err := json.Unmarshal(msg.Result, &page); err != nil {
		a.listing = false
		if a.state == StateInitializing {
			a.fail(fmt.Errorf("tools/list: malformed result: %w", err), false)
		}
		return
	}
	a.listed = append(a.listed, page.Tools...)
	a.pages++
	var warn string
	switch {
	case page.NextCursor == "":
	case a.pages >= maxToolPages:
		warn = fmt.Sprintf("tools/list: stopped after %d pages; the server keeps returning nextCursor", maxToolPages)
	case page.NextCursor == a.lastCur:
		warn = "tools/list: the server repeated its cursor; listing stopped"
	default:
		a.lastCur = page.NextCursor
		params, _ := json.Marshal(protocol.ListToolsParams{Cursor: page.NextCursor})
		a.request(reqToolsList, protocol.MethodToolsList, params)
		return
	}
	if warn != "" {
		a.slog.Warn(warn)
		a.logLifecycle("warning: %s", warn)
	}
	listed := a.listed
	a.listed, a.listing = nil, false
	cat := buildCatalog(&a.spec, listed, a.known)
	if warn != "" {
		cat.warnings = append(cat.warnings, warn)
	}
	a.publishCatalog(cat)
	if a.state == StateInitializing {
		a.becomeReady(cat)
	}
	if a.relist {
		a.listTools()
	}
}

func (a *serverActor) publishCatalog(cat *catalog) {
	if cat == nil {
		cat = &catalog{byName: map[string]int{}}
	}
	for _, w := range cat.warnings {
		a.slog.Warn(w)
	}
	a.cat = cat
	a.known = cat.names()
	a.warnings = cat.warnings
	a.entry.catalog.Store(cat)
	a.recordCatalog(cat)
	if a.state == StateReady {
		a.entry.fast.Store(&fastPath{conn: a.conn, cat: cat, tasks: a.init.Capabilities.TaskToolCalls()})
	}
	a.publish()
	a.rt.emit(Event{Time: time.Now(), Server: a.spec.Name, Kind: EventTools})
}

func (a *serverActor) becomeReady(cat *catalog) {
	if cat == nil {
		a.publishCatalog(nil)
	}
	stopTimer(&a.startTmr)
	a.restarter.Ready(time.Now())
	a.lastErr = ""
	a.logLifecycle("ready in %s: %s %s, protocol %s, %d tool(s)",
		time.Since(a.startedAt).Round(time.Millisecond), a.init.ServerInfo.Name, a.init.ServerInfo.Version,
		a.init.ProtocolVersion, len(a.cat.tools))
	a.recordLifecycle("ready", fmt.Sprintf("%s %s, protocol %s, %d tool(s)", a.init.ServerInfo.Name,
		a.init.ServerInfo.Version, a.init.ProtocolVersion, len(a.cat.tools)), a.conn.pid(), nil)
	a.setState(StateReady, "")
	a.conn.ready()
	a.entry.fast.Store(&fastPath{conn: a.conn, cat: a.cat, tasks: a.init.Capabilities.TaskToolCalls()})
	queued := a.queued
	a.queued = nil
	for _, m := range queued {
		a.sendCall(m)
	}
}

func (a *serverActor) onServerRequest(msg *protocol.Message) {
	if msg.Method == protocol.MethodPing {
		a.reply(protocol.AppendResult(nil, msg.ID, json.RawMessage("{}")))
		return
	}
	a.serveRequest(msg)
}

func (a *serverActor) onNotification(msg *protocol.Message) {
	switch msg.Method {
	case protocol.MethodLoggingMessage:
		var p protocol.LoggingMessageParams
		if err := json.Unmarshal(msg.Params, &p); err != nil {
			return
		}
		text := logData(p.Data)
		if p.Logger != "" {
			text = p.Logger + ": " + text
		}
		a.log.Write(logLevelTag(p.Level), text)
		a.slog.Debug("server log", "level", p.Level, "text", text)
	case protocol.MethodToolsListChanged:
		if a.state != StateReady {
			return
		}
		if a.listing {
			a.relist = true
			return
		}
		a.listTools()
	case protocol.MethodCancelled:
		a.cancelServing(msg.Params)
	default:
		if fn := a.rt.notify[msg.Method]; fn != nil {
			fn(a.spec.Name, msg.Params)
		}
		// Events and progress take the router's sink (eventSink) and do
		// not come here.
	}
}

// eventSink takes the notifications that need nothing of the actor's:
// progress goes to the caller that asked for it, and the server's events are
// journaled and emitted. Connections call it on their reader goroutine, so
// it touches nothing of the actor's but what never changes; it may wait for
// room in the journal (IngestPaced), which slows this server's reading and
// no one else's. It returns false for what the actor must handle.
func (a *serverActor) eventSink() func(*protocol.Message) bool {
	rt, name, entry := a.rt, a.spec.Name, a.entry
	return func(msg *protocol.Message) bool {
		if msg.Method == protocol.MethodProgress {
			entry.deliverProgress(msg.Params)
			return true
		}
		if isPlumbing(msg.Method) || rt.notify[msg.Method] != nil {
			return false
		}
		now := time.Now()
		if rt.journal != nil {
			rt.journal.IngestPaced(name, persistence.AppendEvent(persistence.EventRecord{
				Server: name, Method: msg.Method, Params: msg.Params, Received: now,
			}))
		}
		rt.emit(Event{Time: now, Server: name, Kind: EventNotification, Method: msg.Method, Params: msg.Params})
		return true
	}
}

func (a *serverActor) onBadFrame(m *badFrame) {
	a.banners++
	// The first lines are logged in full; a flood is summarised.
	if a.banners <= 20 || a.banners%1000 == 0 {
		a.log.Write("stdout", fmt.Sprintf("non-JSON-RPC line skipped (#%d): %s", a.banners, m.line))
		a.slog.Debug("non-JSON-RPC line on stdout skipped", "count", a.banners, "line", string(m.line))
	}
	a.publish()
}

func (a *serverActor) onOversized(m *oversizedFrame) {
	a.slog.Warn("oversized frame rejected", "size", m.size, "limit", m.limit)
	a.logLifecycle("warning: frame of %d bytes or more rejected (limit %d)", m.size, m.limit)
	if m.req != nil {
		a.fail(m.err, false) // the handshake cannot go on without it
	}
}

// onConnBroken handles stdout EOF or a failed write: the process is almost
// certainly exiting; wait briefly for its exit status so callers learn why.
func (a *serverActor) onConnBroken(reason string) {
	if a.conn == nil || a.connDying {
		return
	}
	if a.exited {
		a.onDeath(reason)
		return
	}
	a.connDying = true
	a.lastErr = reason
	a.graceTmr = a.after(connGracePeriod, &connGrace{gen: a.gen})
}

// onDeath handles the end of the current connection.
func (a *serverActor) onDeath(reason string) {
	if a.conn == nil {
		return
	}
	wasReady := a.state == StateReady
	if wasReady {
		a.logLifecycle("exited: %s", reason)
	} else {
		a.logLifecycle("failed to start: %s", reason)
	}
	a.recordLifecycle("exited", reason, a.conn.pid(), a.entry.stderr.take())
	a.fail(errors.New(reason), false)
}

// fail ends the current connection, fails every request in flight and
// schedules a restart by policy (or gives up: permanent, or intensity).
func (a *serverActor) fail(cause error, permanent bool) {
	reason := cause.Error()
	a.lastErr, a.lastCause = reason, cause
	a.dropConn(fmt.Errorf("%w: server %q: %w", ErrConnectionLost, a.spec.Name, cause))
	if a.stopErr != nil {
		return
	}
	if permanent {
		a.logLifecycle("failed: %s", reason)
		a.recordLifecycle("failed", reason, 0, nil)
		a.setState(StateFailed, reason)
		return
	}
	delay, giveUp := a.restarter.Failed(time.Now())
	if giveUp {
		p := a.spec.Restart
		a.logLifecycle("failed: more than %d restarts within %s; re-enable to try again", p.MaxRestarts, p.Window)
		why := fmt.Sprintf("%s (gave up: more than %d restarts within %s)", reason, p.MaxRestarts, p.Window)
		a.recordLifecycle("failed", why, 0, nil)
		a.setState(StateFailed, why)
		return
	}
	a.nextRetry = time.Now().Add(delay)
	a.logLifecycle("backoff %s before restart", delay.Round(time.Millisecond))
	a.recordLifecycle("backoff", fmt.Sprintf("%s before restart: %s", delay.Round(time.Millisecond), reason), 0, nil)
	a.setState(StateBackoff, reason)
	a.retryTmr = a.after(delay, &retryTick{gen: a.gen})
}

// dropConn closes the current connection (asynchronously) and fails every
// pending and queued call with err.
func (a *serverActor) dropConn(err error) {
	stopTimer(&a.startTmr)
	stopTimer(&a.graceTmr)
	a.entry.fast.Store(nil)
	a.stopServing()
	if a.conn != nil {
		for _, p := range a.conn.pending().close(err) {
			if p.kind == reqCall {
				p.call.reply <- callReply{err: err}
			}
		}
		a.closeConn(a.conn)
		a.conn = nil
	}
	a.listing, a.relist, a.listed = false, false, nil
	queued := a.queued
	a.queued = nil
	for _, m := range queued {
		m.reply <- callReply{err: err}
	}
	a.exited, a.connDying = false, false
}

// closeConn runs the stop ladder on a goroutine and reports connClosed.
func (a *serverActor) closeConn(c conn) {
	self := a.self
	a.rt.goroutine(func() {
		ctx, cancel := context.WithTimeout(context.Background(), a.spec.StopGrace+a.spec.TermGrace+5*time.Second)
		defer cancel()
		c.close(ctx)
		a.rt.send(self, &connClosed{gen: c.generation()})
	})
	a.busy++
}

// settle completes a disable or a stop once no spawn or stop goroutine is
// outstanding, that is once no process of this server is left.
func (a *serverActor) settle() {
	if a.busy > 0 {
		return
	}
	if a.disableAck != nil {
		close(a.disableAck)
		a.disableAck = nil
	}
	if a.stopErr != nil && a.stopSelf {
		a.stopSelf = false
		// No process is left to write to the log: close it here, since a
		// server may be unregistered or replaced long before the host closes.
		_ = a.log.Close()
		a.entry.markStopped()
		a.rt.system.Root.Stop(a.self)
	}
}

func (a *serverActor) onSetEnabled(m *setEnabledMsg) {
	if a.stopErr != nil {
		close(m.done)
		return
	}
	a.spec.Enabled = m.enabled
	if m.enabled {
		if a.state == StateDisabled || a.state == StateFailed {
			a.restarter.Reset()
			a.lastErr = ""
			a.logLifecycle("enabled")
			a.start()
		}
		close(m.done)
		return
	}
	if a.state == StateDisabled {
		close(m.done)
		return
	}
	a.logLifecycle("disabled")
	stopTimer(&a.retryTmr)
	a.gen++ // ignore anything the old connection still reports
	a.dropConn(fmt.Errorf("%w: server %q was disabled", ErrUnavailable, a.spec.Name))
	a.setState(StateDisabled, "")
	if a.disableAck != nil {
		close(a.disableAck)
	}
	a.disableAck = m.done
	a.settle()
}

// onStop stops the server for good. With stopSelf the actor stops itself
// once its process is gone; without it (protoactor is already stopping the
// actor) the process is still stopped, by goroutines the runtime joins.
func (a *serverActor) onStop(err error, stopSelf bool) {
	if a.stopErr != nil {
		return
	}
	a.stopErr = err
	a.stopSelf = stopSelf
	stopTimer(&a.retryTmr)
	a.gen++
	a.dropConn(err)
	a.setState(StateStopped, a.lastErr)
	a.logLifecycle("stopped")
	a.recordLifecycle("stopped", err.Error(), 0, nil)
	a.settle()
}

// unavailable explains why a call cannot be sent now.
func (a *serverActor) unavailable() error {
	e := &UnavailableError{Server: a.spec.Name, State: a.state, Reason: a.lastErr, Cause: a.lastCause}
	if a.state == StateBackoff {
		e.RetryAfter = time.Until(a.nextRetry)
	}
	return e
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
	if changed {
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
		Since:        a.since,
		LastError:    a.lastErr,
		Restarts:     a.restarter.Restarts(),
		Warnings:     a.warnings,
		BannerLines:  a.banners,
	}
	if a.state == StateBackoff {
		st.NextRetry = a.nextRetry
	}
	if a.conn != nil {
		st.PID = a.conn.pid()
	}
	if a.state == StateReady || a.state == StateInitializing {
		st.ProtocolVersion = a.init.ProtocolVersion
		st.ServerInfo = a.init.ServerInfo
		st.Instructions = a.init.Instructions
		st.Capabilities = a.init.Capabilities
	}
	if a.cat != nil {
		st.Tools = len(a.cat.tools)
	}
	a.entry.setStatus(st)
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

// logData renders a notifications/message data value: strings bare, other
// JSON compact.
func logData(data json.RawMessage) string {
	var s string
	if json.Unmarshal(data, &s) == nil {
		return s
	}
	return string(data)
}

var logLevels = map[string]bool{
	"debug": true, "info": true, "notice": true, "warning": true,
	"error": true, "critical": true, "alert": true, "emergency": true,
}

func logLevelTag(level string) string {
	if logLevels[level] {
		return level
	}
	return "info"
}

// UnavailableError is returned for a call to a server that is not ready:
// restarting (with RetryAfter), disabled, failed or stopped.
type UnavailableError struct {
	Server     string
	State      State
	Reason     string
	Cause      error // the failure behind Reason, when known
	RetryAfter time.Duration
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %q is %s", e.Server, e.State)
	if e.Reason != "" {
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %s", e.RetryAfter.Round(time.Millisecond))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap exposes the failure behind it (e.g. ErrPrivateAddress).
func (e *UnavailableError) Unwrap() error { return e.Cause }
