package actors

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// maxToolPages caps tools/list pagination: a server that never clears its
// cursor gets a warning, not a hang.
const maxToolPages = 50

// start spawns a new connection on a goroutine and waits for connStarted.
func (a *serverActor) start() {
	if a.spec.Unstartable != nil {
		a.fail(permanent(a.spec.Unstartable))
		return
	}
	a.inc.end() // nothing of the last start is left; stopped timers included
	a.inc.gen++
	gen := a.inc.gen
	a.inc.startedAt = time.Now()
	a.inc.authorized = a.spec.Auth != nil && a.spec.Auth.Ready()
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
	cio := connIO{deliver: deliver, event: a.eventSink(), stderr: a.stderrLine}
	a.rt.goroutine(func() {
		msg := &connStarted{gen: gen}
		c, err := a.rt.dial(gen, &spec, cio)
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
	if m.gen != a.inc.gen || a.state != StateStarting {
		// Superseded (disabled or stopped while spawning): discard it.
		if m.conn != nil {
			a.closeConn(m.conn)
		}
		a.settle()
		return
	}
	if m.err != nil {
		a.logLifecycle("failed to start: %v", m.err)
		a.fail(fmt.Errorf("failed to start: %w", m.err))
		return
	}
	a.inc.conn = m.conn
	if pid := m.conn.pid(); pid != 0 {
		a.logLifecycle("spawned pid %d: %s", pid, commandLine(a.spec.Command, a.spec.Args))
		a.recordLifecycle("spawned", a.spec.Command, pid, nil)
	} else {
		a.logLifecycle("connecting to %s (%s)", redactURL(a.spec.URL), a.spec.Transport)
		a.recordLifecycle("connecting", redactURL(a.spec.URL), 0, nil)
	}
	a.setState(StateInitializing, a.lastErr)
	a.inc.startTmr = a.after(a.spec.StartupTimeout, &startupTimeout{gen: a.inc.gen})
	a.handshake()
}

// handshake finds the server's era (era.go): server/discover, then either
// the modern path (tools/list with _meta) or initialize. A pinned
// revision (ServerSpec.ProtocolVersion) decides the era instead.
func (a *serverActor) handshake() {
	a.era, a.inc.probes, a.inc.probeID = nil, 0, 0
	if v := a.spec.ProtocolVersion; v != "" {
		if pinnedModern(v) {
			a.logLifecycle("protocol %s pinned: server/discover, no fallback to initialize", v)
			a.probe(v)
		} else {
			a.logLifecycle("protocol %s pinned: initialize, no server/discover", v)
			a.initialize()
		}
		return
	}
	if a.knownLegacy() {
		a.initialize()
		return
	}
	a.probe(protocol.ModernVersion)
}

// initialize starts the legacy handshake, at the pinned revision if the
// spec pins a legacy one.
func (a *serverActor) initialize() {
	if a.inc.initID != 0 {
		// Sent already, beside server/discover (era.go): its answer, held
		// or to come, goes on.
		if msg := a.inc.initRefused; msg != nil {
			a.inc.initRefused = nil
			a.onInitialized(msg)
		}
		return
	}
	params := a.rt.initParams
	if v := a.spec.ProtocolVersion; v != "" && !pinnedModern(v) {
		params, _ = json.Marshal(protocol.InitializeParams{ // static types: cannot fail
			ProtocolVersion: v,
			Capabilities:    a.rt.caps,
			ClientInfo:      a.rt.info,
		})
	}
	a.inc.initID = a.request(reqInitialize, protocol.MethodInitialize, params)
}

// request sends one host-initiated request (initialize, tools/list), with
// the modern _meta when the server is modern.
func (a *serverActor) request(kind reqKind, method string, params json.RawMessage) int64 {
	params, err := withEraMeta(params, a.era)
	var id int64
	if err == nil {
		id, err = a.inc.conn.pending().add(&pendingReq{kind: kind})
	}
	if err == nil {
		out := requestOut(id, method, protocol.AppendRequest(nil, id, method, params))
		if a.era != nil {
			out.modern = a.era.version
		}
		err = a.inc.conn.send(out)
	}
	if err != nil {
		a.fail(fmt.Errorf("%s: %w", method, err))
		return 0
	}
	return id
}

func (a *serverActor) onInitialized(msg *protocol.Message) {
	if id, _ := msg.IntID(); id != a.inc.initID {
		return // abandoned, routed before server/discover found the server modern
	}
	if a.inc.probeID != 0 && !a.onInitializedFirst(msg) {
		return
	}
	a.inc.initID = 0
	if msg.Error != nil {
		a.logLifecycle("initialize failed: %v", msg.Error)
		a.forgetLegacy() // the server may have become modern: probe again
		a.fail(fmt.Errorf("initialize: %w", modernError(msg.Error)))
		return
	}
	var res protocol.InitializeResult
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		a.fail(fmt.Errorf("initialize: malformed result: %w", err))
		return
	}
	older, err := protocol.CheckVersion(res.ProtocolVersion)
	if err != nil {
		// A version we cannot speak will not change by restarting.
		a.logLifecycle("initialize refused: %v", err)
		a.forgetLegacy()
		a.fail(permanent(fmt.Errorf("initialize: %w", err)))
		return
	}
	if pin := a.spec.ProtocolVersion; pin != "" && res.ProtocolVersion != pin {
		// The spec has a server that supports the requested revision
		// answer with it: this one does not speak the pinned revision.
		err := fmt.Errorf("initialize: %w: the server answered protocol %s to the pinned protocolVersion %s",
			protocol.ErrUnsupportedVersion, res.ProtocolVersion, pin)
		a.logLifecycle("initialize refused: %v", err)
		a.fail(permanent(err))
		return
	}
	if older && a.spec.ProtocolVersion == "" {
		a.slog.Warn("server negotiated an older protocol revision", "version", res.ProtocolVersion, "ours", protocol.ProtocolVersion)
		a.logLifecycle("warning: server negotiated older protocol revision %s (we speak %s)", res.ProtocolVersion, protocol.ProtocolVersion)
	}
	a.init = res
	if err := a.inc.conn.send(notificationOut(protocol.MethodInitialized, nil)); err != nil {
		a.fail(fmt.Errorf("notifications/initialized: %w", err))
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
	a.inc.walk = toolWalk{listing: true}
	a.request(reqToolsList, protocol.MethodToolsList, nil)
}

func (a *serverActor) onToolsPage(msg *protocol.Message) {
	if msg.Error != nil {
		a.inc.walk.listing = false
		if a.state == StateInitializing {
			if a.init.Capabilities.Tools == nil {
				// Tools were never promised: a server without tools.
				a.becomeReady(nil)
				return
			}
			a.fail(fmt.Errorf("tools/list: %w", msg.Error))
			return
		}
		a.slog.Warn("tools/list failed; keeping the previous catalog", "err", msg.Error)
		return
	}
	var page protocol.ListToolsResult
	if err := json.Unmarshal(msg.Result, &page); err != nil {
		a.inc.walk.listing = false
		if a.state == StateInitializing {
			a.fail(fmt.Errorf("tools/list: malformed result: %w", err))
		}
		return
	}
	a.inc.walk.listed = append(a.inc.walk.listed, page.Tools...)
	a.inc.walk.pages++
	var warn string
	switch {
	case page.NextCursor == "":
	case a.inc.walk.pages >= maxToolPages:
		warn = fmt.Sprintf("tools/list: stopped after %d pages; the server keeps returning nextCursor", maxToolPages)
	case page.NextCursor == a.inc.walk.lastCur:
		warn = "tools/list: the server repeated its cursor; listing stopped"
	default:
		a.inc.walk.lastCur = page.NextCursor
		params, _ := json.Marshal(protocol.ListToolsParams{Cursor: page.NextCursor})
		a.request(reqToolsList, protocol.MethodToolsList, params)
		return
	}
	if warn != "" {
		a.slog.Warn(warn)
		a.logLifecycle("warning: %s", warn)
	}
	listed := a.inc.walk.listed
	a.inc.walk.listed, a.inc.walk.listing = nil, false
	a.listedAll = listed
	cat := a.buildCatalog(listed)
	a.scheduleExpiry(page.TTLMs)
	if warn != "" {
		cat.warnings = append(cat.warnings, warn)
	}
	a.publishCatalog(cat)
	if a.state == StateInitializing {
		a.becomeReady(cat)
	}
	if a.inc.walk.relist {
		a.listTools()
	}
}

// buildCatalog is the catalog of a listing, pins reviewed.
func (a *serverActor) buildCatalog(listed []protocol.Tool) *catalog {
	return buildCatalog(&a.spec, listed, a.known, a.era != nil && a.era.http, a.rt.maxToolName, a.rt.reviewPins(&a.spec))
}

func (a *serverActor) publishCatalog(cat *catalog) {
	if cat == nil {
		cat = &catalog{byName: map[string]int{}}
	}
	for _, w := range cat.warnings {
		a.slog.Warn(w)
	}
	reviewed := len(cat.reviews) > 0 || a.cat != nil && len(a.cat.reviews) > 0
	a.cat = cat
	a.known = cat.names()
	a.warnings = cat.warnings
	a.entry.catalog.Store(cat)
	if reviewed {
		a.rt.pins.changed.Notify() // after the store: a watcher woken reads these reviews
	}
	a.recordCatalog(cat)
	if a.state == StateReady {
		a.entry.fast.Store(a.fastPath())
	}
	if a.spec.Unprefixed && !a.spec.Hidden {
		a.checkExposure()
		a.rt.notifyExposure(a.entry) // the names this server claims changed
	}
	a.publish()
	if a.entry.home == nil { // a legacy incarnation's catalog is not the server's
		a.rt.emit(Event{Time: time.Now(), Server: a.spec.Name, Kind: EventTools})
	}
}

// listen opens subscriptions/listen (2026-07-28) for the list changes the
// server declared: one long-lived request whose notifications take the
// place of the legacy GET stream.
func (a *serverActor) listen() {
	caps := a.init.Capabilities
	var f protocol.SubscriptionFilter
	f.ToolsListChanged = caps.Tools != nil && caps.Tools.ListChanged
	f.PromptsListChanged = caps.Prompts != nil && caps.Prompts.ListChanged
	f.ResourcesListChanged = caps.Resources != nil && caps.Resources.ListChanged
	if caps.Resources != nil && caps.Resources.Subscribe {
		for uri := range a.resourceSubs {
			f.ResourceSubscriptions = append(f.ResourceSubscriptions, uri)
		}
		slices.Sort(f.ResourceSubscriptions)
	}
	if f.Empty() {
		return
	}
	params, _ := json.Marshal(protocol.SubscriptionsListenParams{Notifications: f})
	a.inc.listens++
	a.inc.listenID = a.request(reqListen, protocol.MethodSubscriptionsListen, params)
}

// resourceSubMsg adds (on) or removes a resource a modern server is asked
// to report updates of, through subscriptions/listen.
type resourceSubMsg struct {
	uri   string
	on    bool
	reply chan error
}

func (a *serverActor) onResourceSub(m *resourceSubMsg) {
	if a.era == nil {
		m.reply <- ErrLegacySubscribe
		return
	}
	if a.resourceSubs == nil {
		a.resourceSubs = map[string]bool{}
	}
	if a.resourceSubs[m.uri] == m.on {
		m.reply <- nil
		return
	}
	if m.on {
		a.resourceSubs[m.uri] = true
	} else {
		delete(a.resourceSubs, m.uri)
	}
	if a.state != StateReady {
		m.reply <- nil
		return // the listen opened on becoming ready carries it
	}
	// One stream carries the whole filter: close it, open the new one.
	if a.inc.listenID != 0 {
		id := a.inc.listenID
		a.inc.listenID = 0
		if a.inc.conn.pending().take(id) != nil {
			a.cancelRequest(id, "subscriptions changed")
		}
	}
	stopTimer(&a.inc.relisten)
	a.listen()
	if a.inc.listenID == 0 {
		m.reply <- nil // nothing to listen to (the server offers no subscriptions)
		return
	}
	// Answered when the server acknowledges the new stream: an update it
	// sends after the call returns reaches the subscriber.
	a.inc.subWaiters = append(a.inc.subWaiters, m.reply)
	if a.inc.subAckTmr == nil {
		a.inc.subAckTmr = a.after(subAckWait, &subAckTimeout{gen: a.inc.gen})
	}
}

// subAckWait bounds how long SubscribeResource waits for the server to
// acknowledge the listen that carries the change: a server that never
// acknowledges still gets the subscription, later.
const subAckWait = 5 * time.Second

// subAckTimeout ends the wait for an acknowledgement (subAckWait).
type subAckTimeout struct{ gen uint64 }

// releaseSubWaiters answers the SubscribeResource calls waiting for the
// listen's acknowledgement.
func (inc *incarnation) releaseSubWaiters() {
	stopTimer(&inc.subAckTmr)
	for _, w := range inc.subWaiters {
		w <- nil
	}
	inc.subWaiters = nil
}

// relistenTick reopens subscriptions/listen after it ended.
type relistenTick struct{ gen uint64 }

// maxRelistenDelay caps the wait before subscriptions/listen is reopened.
const maxRelistenDelay = 30 * time.Second

// onListenEnded handles the end of subscriptions/listen: a server that
// refuses it is not asked again; a stream that closed, gracefully or not,
// is reopened after a delay that doubles with each reopening. A list
// change missed meanwhile is caught by relisting the tools on reopening.
func (a *serverActor) onListenEnded(id int64, msg *protocol.Message) {
	if id != a.inc.listenID || a.state != StateReady {
		return
	}
	a.inc.listenID = 0
	a.inc.releaseSubWaiters()
	if msg.Error != nil && (msg.Error.Code == protocol.CodeMethodNotFound || msg.Error.Code == protocol.CodeInvalidParams) {
		a.slog.Warn("subscriptions/listen refused; list changes will not be seen", "err", msg.Error)
		a.logLifecycle("warning: subscriptions/listen refused: %v", msg.Error)
		return
	}
	delay := min(time.Second<<min(a.inc.listens-1, 5), maxRelistenDelay)
	a.logLifecycle("subscriptions/listen ended (%s); reopening in %s", listenEnd(msg), delay)
	stopTimer(&a.inc.relisten)
	a.inc.relisten = a.after(delay, &relistenTick{gen: a.inc.gen})
	if !a.inc.walk.listing {
		a.listTools()
	}
}

func listenEnd(msg *protocol.Message) string {
	if msg.Error != nil {
		return msg.Error.Error()
	}
	return "closed by the server"
}

// fastPath is what callers need to send without the actor.
func (a *serverActor) fastPath() *fastPath {
	return &fastPath{conn: a.inc.conn, cat: a.cat, tasks: a.init.Capabilities.TaskToolCalls(), era: a.era}
}

// scheduleExpiry refetches the catalog when the ttlMs of the tools/list
// result that built it ends (SEP-2549). A missing or zero ttl sets no
// timer: the catalog then changes only on list_changed.
func (a *serverActor) scheduleExpiry(ttlMs *int64) {
	stopTimer(&a.inc.expiryTmr)
	a.inc.expires = time.Time{}
	if ttlMs == nil || *ttlMs <= 0 {
		return
	}
	ttl := max(time.Duration(*ttlMs)*time.Millisecond, minCatalogTTL)
	a.inc.expires = time.Now().Add(ttl)
	a.inc.expiryTmr = a.after(ttl, &catalogExpired{gen: a.inc.gen})
}

// minCatalogTTL floors a server's ttlMs, so a tiny ttl cannot make the
// host list tools in a loop.
const minCatalogTTL = time.Second

// catalogExpired fires when the catalog's ttl ended.
type catalogExpired struct{ gen uint64 }

func (a *serverActor) onCatalogExpired(m *catalogExpired) {
	if m.gen != a.inc.gen || a.state != StateReady {
		return
	}
	a.inc.expiryTmr = nil
	if a.inc.walk.listing {
		a.inc.walk.relist = true
		return
	}
	a.listTools()
}

func (a *serverActor) becomeReady(cat *catalog) {
	if cat == nil {
		a.publishCatalog(nil)
	}
	stopTimer(&a.inc.startTmr)
	a.restarter.Ready(time.Now())
	a.lastErr = ""
	a.logLifecycle("ready in %s: %s %s, protocol %s, %d tool(s)",
		time.Since(a.inc.startedAt).Round(time.Millisecond), a.init.ServerInfo.Name, a.init.ServerInfo.Version,
		a.init.ProtocolVersion, len(a.cat.tools))
	a.recordLifecycle("ready", fmt.Sprintf("%s %s, protocol %s, %d tool(s)", a.init.ServerInfo.Name,
		a.init.ServerInfo.Version, a.init.ProtocolVersion, len(a.cat.tools)), a.inc.conn.pid(), nil)
	if a.era != nil {
		a.listen() // before the state is published: first on the wire
	}
	// The fast path before the state: a caller woken by ready must find it,
	// not go the slow way through this actor for its first call.
	a.inc.conn.ready()
	a.entry.fast.Store(a.fastPath())
	a.setState(StateReady, "")
	queued := a.queued
	a.queued = nil
	for _, m := range queued {
		a.sendCall(m)
	}
}
