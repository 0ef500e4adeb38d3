package actors

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// maxToolPages caps tools/list pagination: a server that never clears its
// cursor gets a warning, not a hang.
const maxToolPages = 50

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
	a.walk = toolWalk{listing: true}
	a.request(reqToolsList, protocol.MethodToolsList, nil)
}

func (a *serverActor) onToolsPage(msg *protocol.Message) {
	if msg.Error != nil {
		a.walk.listing = false
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
		a.walk.listing = false
		if a.state == StateInitializing {
			a.fail(fmt.Errorf("tools/list: malformed result: %w", err), false)
		}
		return
	}
	a.walk.listed = append(a.walk.listed, page.Tools...)
	a.walk.pages++
	var warn string
	switch {
	case page.NextCursor == "":
	case a.walk.pages >= maxToolPages:
		warn = fmt.Sprintf("tools/list: stopped after %d pages; the server keeps returning nextCursor", maxToolPages)
	case page.NextCursor == a.walk.lastCur:
		warn = "tools/list: the server repeated its cursor; listing stopped"
	default:
		a.walk.lastCur = page.NextCursor
		params, _ := json.Marshal(protocol.ListToolsParams{Cursor: page.NextCursor})
		a.request(reqToolsList, protocol.MethodToolsList, params)
		return
	}
	if warn != "" {
		a.slog.Warn(warn)
		a.logLifecycle("warning: %s", warn)
	}
	listed := a.walk.listed
	a.walk.listed, a.walk.listing = nil, false
	cat := buildCatalog(&a.spec, listed, a.known)
	if warn != "" {
		cat.warnings = append(cat.warnings, warn)
	}
	a.publishCatalog(cat)
	if a.state == StateInitializing {
		a.becomeReady(cat)
	}
	if a.walk.relist {
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
