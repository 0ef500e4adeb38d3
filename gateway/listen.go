package gateway

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// subscriptions/listen (2026-07-28): a modern client's one long-lived POST
// whose answer is an SSE stream of the notifications it asked for, each
// tagged with the request's id as its subscriptionId. It replaces the
// legacy GET stream and resources/subscribe. The stream is the request's:
// when it breaks, the client listens again (there is no resumption), so a
// listener holds nothing another replica would need.

// listener is one open subscriptions/listen stream.
type listener struct {
	id     json.RawMessage // the request's id: the subscriptionId
	filter protocol.SubscriptionFilter
	subs   map[string]string // resource URI → the server subscribed upstream
	notes  chan []byte
}

// listenHTTP serves subscriptions/listen as an SSE stream.
func (g *Gateway) listenHTTP(w http.ResponseWriter, r *http.Request, s *session, msg protocol.Message) {
	resp := g.listen(r.Context(), s, msg, func() func([]byte) bool {
		return newSSEWriter(w).event
	})
	if resp != nil {
		m, _ := protocol.Classify(resp)
		if m.Error != nil {
			writeModernError(w, msg.ID, m.Error.Code, m.Error.Message, m.Error.Data)
		}
	}
}

// listen serves a subscriptions/listen request until ctx ends or the
// gateway closes: the acknowledgement with what the gateway agreed to
// send, then those notifications, through the emitter open returns (an
// SSE stream, or stdout). It returns an error response for a request it
// cannot serve, before opening anything; else nil.
func (g *Gateway) listen(ctx context.Context, s *session, msg protocol.Message, open func() func([]byte) bool) []byte {
	var p protocol.SubscriptionsListenParams
	var raw struct {
		Notifications json.RawMessage `json:"notifications"`
	}
	if json.Unmarshal(orEmpty(msg.Params), &raw) != nil || !isObject(raw.Notifications) || json.Unmarshal(msg.Params, &p) != nil {
		return protocol.AppendError(nil, msg.ID, protocol.CodeInvalidParams, "subscriptions/listen: params must hold a notifications object", nil)
	}
	l := &listener{id: msg.ID, filter: p.Notifications, subs: map[string]string{}, notes: make(chan []byte, notesQueue)}
	// Resource subscriptions are held upstream for as long as the stream
	// is open; a URI no server serves is left out of the acknowledgement.
	var agreed []string
	for _, uri := range p.Notifications.ResourceSubscriptions {
		servers, own := s.targets(uri, hasSubscribe)
		for _, server := range servers {
			if g.hold(ctx, server, own) == nil {
				l.subs[uri] = server
				agreed = append(agreed, uri)
				break
			}
		}
	}
	defer func() {
		for uri, server := range l.subs {
			g.release(s.ctx, server, ownURI(uri, server))
		}
	}()
	l.filter.ResourceSubscriptions = agreed

	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return protocol.AppendError(nil, msg.ID, protocol.CodeInternalError, "the gateway is closed", nil)
	}
	if g.listeners == nil {
		g.listeners = map[*listener]bool{}
	}
	g.listeners[l] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.listeners, l)
		g.mu.Unlock()
	}()

	emit := open()
	ack, _ := json.Marshal(struct {
		Notifications protocol.SubscriptionFilter `json:"notifications"`
		Meta          map[string]json.RawMessage  `json:"_meta"`
	}{l.filter, map[string]json.RawMessage{protocol.MetaSubscriptionID: l.id}})
	if !emit(protocol.AppendNotification(nil, protocol.MethodSubscriptionsAcknowledged, ack)) {
		return nil
	}
	if l.filter.Empty() {
		// Nothing to send: the subscription ends at once, with its result.
		emit(g.modernResponse(protocol.AppendResult(nil, l.id, l.endResult()), msg.Method))
		return nil
	}
	for {
		select {
		case frame := <-l.notes:
			if !emit(frame) {
				return nil
			}
		case <-g.done:
			emit(g.modernResponse(protocol.AppendResult(nil, l.id, l.endResult()), msg.Method))
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// endResult is the listen request's result, sent when the gateway ends
// the subscription.
func (l *listener) endResult() json.RawMessage {
	b, _ := json.Marshal(map[string]any{"_meta": map[string]json.RawMessage{protocol.MetaSubscriptionID: l.id}})
	return b
}

// send queues server's notification, tagged with the subscription's id,
// when the filter asks for it; a full queue drops it.
func (l *listener) send(g *Gateway, server, method string, params json.RawMessage) {
	switch method {
	case protocol.MethodToolsListChanged:
		if !l.filter.ToolsListChanged {
			return
		}
	case protocol.MethodPromptsListChanged:
		if !l.filter.PromptsListChanged {
			return
		}
	case protocol.MethodResourcesListChanged:
		if !l.filter.ResourcesListChanged {
			return
		}
	case protocol.MethodResourcesUpdated:
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(orEmpty(params), &p) != nil {
			return
		}
		exposed, ok := updatedURI(l.subs, server, p.URI)
		if !ok {
			return
		}
		params = setMember(params, "uri", quote(exposed))
	default:
		return
	}
	var p map[string]json.RawMessage
	_ = json.Unmarshal(orEmpty(params), &p)
	if p == nil {
		p = map[string]json.RawMessage{}
	}
	meta, err := protocol.MergeMeta(p["_meta"], protocol.MetaSubscriptionID, l.id)
	if err != nil {
		return
	}
	p["_meta"] = meta
	b, err := json.Marshal(p)
	if err != nil {
		return
	}
	select {
	case l.notes <- protocol.AppendNotification(nil, method, b):
	default:
		g.log.Warn("gateway: a listen stream's queue is full; notification dropped", "queued", cap(l.notes))
	}
}

// notifyListeners passes a host event to the open listen streams: a
// server's relisted tools as tools/list_changed, and its resource and
// prompt notifications as they came.
func (g *Gateway) notifyListeners(ev mcpvisor.Event) {
	g.mu.Lock()
	ls := make([]*listener, 0, len(g.listeners))
	for l := range g.listeners {
		ls = append(ls, l)
	}
	g.mu.Unlock()
	if len(ls) == 0 {
		return
	}
	method, params := ev.Method, ev.Params
	switch ev.Kind {
	case mcpvisor.EventTools:
		method, params = protocol.MethodToolsListChanged, nil
	case mcpvisor.EventState:
		// A state change matters when it changes the tools a modern
		// client sees (a server's tools become available or not).
		now := (&session{hs: g.h.Session(modernScope, "")}).toolSet()
		g.mu.Lock()
		same := now == g.modernTools
		g.modernTools = now
		g.mu.Unlock()
		if same {
			return
		}
		method, params = protocol.MethodToolsListChanged, nil
	}
	for _, l := range ls {
		l.send(g, ev.Server, method, params)
	}
}
