package actors

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

func (a *serverActor) onCall(m *callMsg) {
	if a.owner != "" {
		m.reply <- callReply{err: fmt.Errorf("%w: server %q is not placed on this cluster member (placed: %s)", ErrUnavailable, a.spec.Name, a.owner)}
		return
	}
	switch a.state {
	case StateReady:
		a.sendCall(m)
	case StateStarting, StateInitializing:
		a.hold(m)
	case StateNeedsAuth:
		if a.spec.Auth != nil && (a.spec.Auth.Status().Pending || a.spec.Auth.Ready()) {
			// A sign-in is under way, or has just ended with a token and
			// its authChanged is on its way: the server starts then.
			a.hold(m)
			return
		}
		m.reply <- callReply{err: a.unavailable()}
	default:
		m.reply <- callReply{err: a.unavailable()}
	}
}

// hold keeps m until the server is ready (sendCall) or fails; its timing
// notes from when, so that the wait counts as the server's start.
func (a *serverActor) hold(m *callMsg) {
	if m.timing != nil {
		m.timing.held.Store(time.Now().UnixNano())
	}
	a.queued = append(a.queued, m)
}

func (a *serverActor) sendCall(m *callMsg) {
	if m.timing != nil && m.timing.held.Load() != 0 {
		m.timing.released.Store(time.Now().UnixNano())
	}
	t, ok := a.cat.resolve(m.tool)
	if !ok && m.tool != "" {
		err := a.cat.withheld(a.spec.Name, m.tool)
		if err == nil {
			err = fmt.Errorf("%w: server %q has no tool %q", ErrUnknownTool, a.spec.Name, m.tool)
		}
		m.reply <- callReply{err: err}
		return
	}
	if ok {
		m.tool = t.Tool // queued before the catalog was known
	}
	if err := m.applyTask(t, a.init.Capabilities.TaskToolCalls()); err != nil {
		m.reply <- callReply{err: err}
		return
	}
	if err := startCall(a.inc.conn, m, a.era, a.cat.paramHeaders(m.tool)); err != nil {
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
	if a.inc.conn == nil || !a.inc.conn.pending().takeCall(m.call) {
		return // answered, failed, or sent on a connection since replaced
	}
	a.inc.conn.pending().cancelled.Store(true)
	// A late response to this id is now unknown and dropped.
	a.cancelRequest(m.call.id, m.reason)
}

// cancelRequest tells the server that request id, already taken out of the
// pending table, is abandoned: notifications/cancelled, except over modern
// HTTP, where closing the request's stream (abandon) is the signal.
func (a *serverActor) cancelRequest(id int64, reason string) {
	if a.era == nil || !a.era.http {
		params, _ := json.Marshal(protocol.CancelledParams{
			RequestID: json.RawMessage(strconv.FormatInt(id, 10)),
			Reason:    reason,
		})
		_ = a.inc.conn.send(notificationOut(protocol.MethodCancelled, params))
	}
	a.inc.conn.abandon(id)
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
	case reqDiscover:
		if a.state == StateInitializing && m.req.id == a.inc.probeID {
			a.onDiscovered(&m.msg)
		}
	case reqListen:
		a.onListenEnded(m.req.id, &m.msg)
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
		// Observers (a gateway forwarding logs to its clients) see it too,
		// within the server's rate; the server's log file is its record,
		// so it is not journaled.
		now := time.Now()
		if !a.entry.events.allow(msg.Method, now) {
			return
		}
		a.rt.emit(Event{Time: now, Server: a.spec.Name, Kind: EventNotification, Method: msg.Method, Params: msg.Params})
	case protocol.MethodToolsListChanged:
		a.relistTools()
	case protocol.MethodCancelled:
		a.cancelServing(msg.Params)
	case protocol.MethodSubscriptionsAcknowledged:
		a.logLifecycle("subscriptions/listen acknowledged: %s", msg.Params)
		if acknowledges(msg.Params, a.inc.listenID) {
			a.inc.releaseSubWaiters()
		}
		// A change the server made between our tools/list and this
		// acknowledgement reached no stream (over HTTP the listen and the
		// calls that follow it are separate requests, in no set order):
		// list again, once the stream is known to be there. A catalog with
		// a ttl is listed again within it anyway.
		if caps := a.init.Capabilities; caps.Tools != nil && caps.Tools.ListChanged && a.inc.expires.IsZero() {
			a.relistTools()
		}
	default:
		if fn := a.rt.notify[msg.Method]; fn != nil {
			now := time.Now()
			if !a.entry.events.allow(msg.Method, now) {
				return // resource updates and the like, past the server's rate
			}
			fn(a.spec.Name, msg.Params)
			// Observers see it too: a gateway forwards a URL
			// elicitation's completion to the client that opened it.
			a.rt.emit(Event{Time: now, Server: a.spec.Name, Kind: EventNotification, Method: msg.Method, Params: msg.Params})
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
		// Past the server's rate the event is counted, not journaled:
		// a flood then costs the journal and the subscribers a bounded
		// share. Past its read pace this reader waits: the server then
		// blocks on its own output rather than taking the host's CPU.
		entry.events.pace(now)
		if !entry.events.allow(msg.Method, now) {
			return true
		}
		if rt.journal != nil {
			rt.journal.IngestPaced(name, persistence.AppendEvent(persistence.EventRecord{
				Server: name, Method: msg.Method, Params: persistence.RawJSON(msg.Params), Received: now,
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
	switch {
	case m.req == nil:
	case m.req.kind == reqListen:
		// Its stream was dropped: reopened after a delay that grows with
		// each reopening, as when it ends any other way.
		a.onListenEnded(m.req.id, &protocol.Message{Kind: protocol.KindResponse,
			Error: &protocol.Error{Code: codeTransport, Message: m.err.Error()}})
	default:
		a.fail(m.err) // the handshake cannot go on without it
	}
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

// relistTools walks tools/list again for a ready server (after the walk
// under way, if one is).
func (a *serverActor) relistTools() {
	if a.state != StateReady {
		return
	}
	if a.inc.walk.listing {
		a.inc.walk.relist = true
		return
	}
	a.listTools()
}

// acknowledges reports whether an acknowledgement with params is the one
// of the listen request id: its _meta names the subscription (the listen
// request's id); one that names none is taken as the current listen's.
func acknowledges(params json.RawMessage, id int64) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return true
	}
	sub, ok := p.Meta[protocol.MetaSubscriptionID]
	if !ok {
		return true
	}
	return strings.Trim(string(sub), `"`) == strconv.FormatInt(id, 10)
}
