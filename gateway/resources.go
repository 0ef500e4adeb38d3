package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Resources and prompts of the session's active servers (those whose tools
// it may call). Resource URIs are exposed as the host exposes them
// (mcpvisor.ResourceURI): a ui:// URI always namespaced by its server,
// ui://<server>/<rest>, as tools/list's _meta.ui.resourceUri names it; a
// URI of another scheme unchanged — a tool result's resource_link must
// still resolve — unless two of the servers listed together list it, when
// each server's copy is mcpvisor://<server>/<uri>. A namespaced URI goes to
// the server it names, with the server's own URI; any other is routed to
// the server that listed it, or else tried on each active server in turn.
// Prompts are namespaced like tools: mcp__<server>__<prompt>.
//
// Lists are answered in one page, without nextCursor: the host has already
// walked each server's pages. Only ready servers that declared the
// capability are asked; a server still starting is left out rather than
// waited for.

// codeResourceNotFound is the spec's suggested error for an unknown URI.
const codeResourceNotFound = -32002

// providers lists the session's active servers that are ready and declared
// the capability.
func (s *session) providers(declared func(protocol.ServerCapabilities) bool) []string {
	active := map[string]bool{}
	for _, name := range s.hs.Servers() {
		active[name] = true
	}
	var out []string
	for _, st := range s.g.h.Status() {
		if active[st.Name] && st.State == mcpvisor.StateReady && declared(st.Capabilities) {
			out = append(out, st.Name)
		}
	}
	return out
}

func hasResources(c protocol.ServerCapabilities) bool { return c.Resources != nil }
func hasSubscribe(c protocol.ServerCapabilities) bool {
	return c.Resources != nil && c.Resources.Subscribe
}
func hasPrompts(c protocol.ServerCapabilities) bool { return c.Prompts != nil }

// gather merges one list method's results over the active servers that
// declared the capability; a server that fails is logged and left out.
func gather[T any](ctx context.Context, s *session, method string, declared func(protocol.ServerCapabilities) bool,
	list func(context.Context, string) ([]T, error), each func(server string, items []T) []T) []T {
	out := []T{}
	for _, server := range s.providers(declared) {
		items, err := list(ctx, server)
		if err != nil {
			s.g.log.Warn("gateway: "+method, "server", server, "err", err)
			continue
		}
		out = append(out, each(server, items)...)
	}
	return out
}

func (s *session) listResources(ctx context.Context, msg protocol.Message) []byte {
	var lists []listing[protocol.Resource]
	gather(ctx, s, msg.Method, hasResources, s.g.h.Resources, func(server string, rs []protocol.Resource) []protocol.Resource {
		lists = append(lists, listing[protocol.Resource]{server, rs})
		return nil
	})
	list := qualify(lists, func(r *protocol.Resource) *string { return &r.URI })
	s.mu.Lock()
	for _, l := range lists {
		for _, r := range l.items {
			// A URI qualified now has no one owner any more.
			if _, own, namespaced := mcpvisor.SplitResourceURI(r.URI); namespaced {
				delete(s.owners, own)
			} else {
				s.owners[r.URI] = l.server
			}
		}
	}
	s.mu.Unlock()
	return result(msg.ID, protocol.ListResourcesResult{Resources: list})
}

func (s *session) listTemplates(ctx context.Context, msg protocol.Message) []byte {
	var lists []listing[protocol.ResourceTemplate]
	gather(ctx, s, msg.Method, hasResources, s.g.h.ResourceTemplates, func(server string, ts []protocol.ResourceTemplate) []protocol.ResourceTemplate {
		lists = append(lists, listing[protocol.ResourceTemplate]{server, ts})
		return nil
	})
	list := qualify(lists, func(t *protocol.ResourceTemplate) *string { return &t.URITemplate })
	return result(msg.ID, protocol.ListResourceTemplatesResult{ResourceTemplates: list})
}

// listing is one server's part of a merged list.
type listing[T any] struct {
	server string
	items  []T
}

// qualify merges the servers' lists (whose ui:// URIs the host already
// namespaced), qualifying each URI that more than one server lists as
// mcpvisor://<server>/<uri>. Which URIs collide depends only on the
// lists, not on their order. The lists' items are rewritten in place.
func qualify[T any](lists []listing[T], uriOf func(*T) *string) []T {
	servers := map[string]map[string]bool{} // URI → the servers that list it
	for _, l := range lists {
		for i := range l.items {
			uri := *uriOf(&l.items[i])
			if servers[uri] == nil {
				servers[uri] = map[string]bool{}
			}
			servers[uri][l.server] = true
		}
	}
	out := []T{}
	for _, l := range lists {
		for i := range l.items {
			if uri := uriOf(&l.items[i]); len(servers[*uri]) > 1 {
				*uri = mcpvisor.QualifiedResourceURI(l.server, *uri)
			}
		}
		out = append(out, l.items...)
	}
	return out
}

// targets resolves a URI a client sent: a namespaced one (ui://S/…,
// mcpvisor://S/…) to the server it names, when that is one of the servers
// that declared the capability, and the server's own URI; any other to the
// servers to try in order (candidates) and the URI as it is.
func (s *session) targets(uri string, declared func(protocol.ServerCapabilities) bool) (servers []string, own string) {
	server, own, ok := mcpvisor.SplitResourceURI(uri)
	if !ok {
		return s.candidates(uri, declared), uri
	}
	if slices.Contains(s.providers(declared), server) {
		return []string{server}, own
	}
	return nil, own
}

// ownURI is the URI server knows the exposed uri by.
func ownURI(uri, server string) string {
	if s, own, ok := mcpvisor.SplitResourceURI(uri); ok && s == server {
		return own
	}
	return uri
}

// exposer turns the URIs of server's answer to a request for uri into the
// form the client used: qualified when uri was a namespaced URI, else
// with their ui:// URIs namespaced.
func exposer(uri, server string) func(string) string {
	if _, _, ok := mcpvisor.SplitResourceURI(uri); ok {
		return func(u string) string { return mcpvisor.QualifiedResourceURI(server, u) }
	}
	return func(u string) string { return mcpvisor.ResourceURI(server, u) }
}

// exposeContents rewrites the uri of each of a resources/read result's
// contents with expose; a result it cannot read is returned as it came.
func exposeContents(raw json.RawMessage, expose func(string) string) json.RawMessage {
	var res map[string]json.RawMessage
	var contents []map[string]json.RawMessage
	if json.Unmarshal(raw, &res) != nil || json.Unmarshal(orEmpty(res["contents"]), &contents) != nil {
		return raw
	}
	changed := false
	for _, c := range contents {
		var uri string
		if json.Unmarshal(orEmpty(c["uri"]), &uri) != nil {
			continue
		}
		if exposed := expose(uri); exposed != uri {
			c["uri"], changed = json.RawMessage(quote(exposed)), true
		}
	}
	if !changed {
		return raw
	}
	b, err := json.Marshal(contents)
	if err != nil {
		return raw
	}
	res["contents"] = b
	if b, err = json.Marshal(res); err != nil {
		return raw
	}
	return b
}

// candidates orders the servers to try for uri: the one that listed it
// first, then the other providers.
func (s *session) candidates(uri string, declared func(protocol.ServerCapabilities) bool) []string {
	list := s.providers(declared)
	s.mu.Lock()
	owner := s.owners[uri]
	s.mu.Unlock()
	if i := slices.Index(list, owner); i > 0 {
		list = slices.Insert(slices.Delete(list, i, i+1), 0, owner)
	}
	return list
}

func (s *session) readResource(ctx context.Context, msg protocol.Message, send func([]byte)) []byte {
	var p protocol.ReadResourceParams
	if err := json.Unmarshal(orEmpty(msg.Params), &p); err != nil || p.URI == "" {
		return invalidParams(msg.ID, "resources/read: params must hold a uri")
	}
	servers, own := s.targets(p.URI, hasResources)
	params := msg.Params
	if own != p.URI {
		params = setMember(params, "uri", quote(own))
	}
	var last error
	for _, server := range servers {
		raw, err := s.g.h.Forward(ctx, server, msg.Method, params, s.forwardOptions(send))
		if err == nil {
			if own == p.URI {
				s.mu.Lock()
				s.owners[p.URI] = server
				s.mu.Unlock()
			}
			return protocol.AppendResult(nil, msg.ID, exposeContents(raw, exposer(p.URI, server)))
		}
		last = err
	}
	return s.notFound(msg.ID, "resource", p.URI, last)
}

// forwardOptions are how the session's requests reach a server: a modern
// client's with its own capabilities and a modern server's input requests
// passed back to it; a legacy server's questions go to the client as for
// a call (forwarded to a legacy client on send, bridged for a modern one).
func (s *session) forwardOptions(send func([]byte)) mcpvisor.ForwardOptions {
	var o mcpvisor.ForwardOptions
	if s.modern {
		o.ClientCapabilities, o.PassInput = s.rawCaps, !s.bridge
	}
	if !s.modern || s.bridge {
		o.Elicitation, o.Sampling, o.Roots = s.elicitHandler(send), s.sampleHandler(send), s.rootsHandler(send)
		o.Scope, o.Client = s.hs.Scope(), s.id
		o.LegacyClient = !s.modern
	}
	return o
}

// notFound answers a URI or prompt no active server has: the last server's
// own error when it gave one other than "not found", else -32002 for a
// legacy client and -32602 for a modern one (2026-07-28), with the URI in
// data.
func (s *session) notFound(id json.RawMessage, what, name string, last error) []byte {
	var perr *protocol.Error
	if errors.As(last, &perr) && perr.Code != codeResourceNotFound && perr.Code != protocol.CodeInvalidParams && perr.Code != protocol.CodeMethodNotFound {
		return protocol.AppendError(nil, id, perr.Code, perr.Message, perr.Data)
	}
	if what == "prompt" {
		return invalidParams(id, "unknown prompt: %s", name)
	}
	data, _ := json.Marshal(map[string]string{"uri": name})
	code := int64(codeResourceNotFound)
	if s.modern {
		code = protocol.CodeInvalidParams
	}
	return protocol.AppendError(nil, id, code, "Resource not found: "+name, data)
}

// subscribe and unsubscribe keep one upstream subscription per server and
// URI, however many sessions hold it (Gateway.subscriptions counts them).
func (s *session) subscribe(ctx context.Context, msg protocol.Message, on bool) []byte {
	var p protocol.SubscribeParams
	if err := json.Unmarshal(orEmpty(msg.Params), &p); err != nil || p.URI == "" {
		return invalidParams(msg.ID, "%s: params must hold a uri", msg.Method)
	}
	if !on {
		s.mu.Lock()
		server, ok := s.subs[p.URI]
		delete(s.subs, p.URI)
		s.mu.Unlock()
		if ok {
			s.g.release(ctx, server, ownURI(p.URI, server))
		}
		return protocol.AppendResult(nil, msg.ID, nil)
	}
	s.mu.Lock()
	_, held := s.subs[p.URI]
	s.mu.Unlock()
	if held {
		return protocol.AppendResult(nil, msg.ID, nil)
	}
	servers, own := s.targets(p.URI, hasSubscribe)
	var last error
	for _, server := range servers {
		if err := s.g.hold(ctx, server, own); err != nil {
			last = err
			continue
		}
		s.mu.Lock()
		s.subs[p.URI] = server
		s.mu.Unlock()
		return protocol.AppendResult(nil, msg.ID, nil)
	}
	if last == nil {
		return protocol.AppendError(nil, msg.ID, protocol.CodeMethodNotFound, "no active server supports resource subscriptions", nil)
	}
	return s.notFound(msg.ID, "resource", p.URI, last)
}

// hold takes one reference on the upstream subscription to server's uri,
// subscribing on the first.
func (g *Gateway) hold(ctx context.Context, server, uri string) error {
	key := server + "\x00" + uri
	g.subMu.Lock()
	defer g.subMu.Unlock()
	if g.subs[key] == 0 {
		if err := g.h.SubscribeResource(ctx, server, uri); err != nil {
			return err
		}
	}
	g.subs[key]++
	return nil
}

// release drops one reference, unsubscribing upstream with the last.
func (g *Gateway) release(ctx context.Context, server, uri string) {
	key := server + "\x00" + uri
	g.subMu.Lock()
	defer g.subMu.Unlock()
	if g.subs[key]--; g.subs[key] > 0 {
		return
	}
	delete(g.subs, key)
	if err := g.h.UnsubscribeResource(ctx, server, uri); err != nil {
		g.log.Debug("gateway: resources/unsubscribe", "server", server, "err", err)
	}
}

// releaseAll drops the session's subscriptions as it ends.
func (s *session) releaseAll(ctx context.Context) {
	s.mu.Lock()
	subs := s.subs
	s.subs = map[string]string{}
	s.mu.Unlock()
	for uri, server := range subs {
		s.g.release(ctx, server, ownURI(uri, server))
	}
}

func (s *session) listPrompts(ctx context.Context, msg protocol.Message) []byte {
	list := gather(ctx, s, msg.Method, hasPrompts, s.g.h.Prompts, func(server string, ps []protocol.Prompt) []protocol.Prompt {
		for i := range ps {
			ps[i].Name = s.g.h.PromptName(server, ps[i].Name)
		}
		return ps
	})
	return result(msg.ID, protocol.ListPromptsResult{Prompts: list})
}

func (s *session) getPrompt(ctx context.Context, msg protocol.Message, send func([]byte)) []byte {
	var p protocol.GetPromptParams
	if err := json.Unmarshal(orEmpty(msg.Params), &p); err != nil || p.Name == "" {
		return invalidParams(msg.ID, "prompts/get: params must hold a name")
	}
	server, name, ok := s.promptOwner(ctx, p.Name)
	if !ok {
		return invalidParams(msg.ID, "unknown prompt: %s", p.Name)
	}
	params := setMember(msg.Params, "name", quote(name))
	raw, err := s.g.h.Forward(ctx, server, msg.Method, params, s.forwardOptions(send))
	if err != nil {
		return forwardError(msg.ID, err)
	}
	return protocol.AppendResult(nil, msg.ID, raw)
}

// promptOwner finds the active server that serves an exposed prompt name,
// and the server's own name for it.
func (s *session) promptOwner(ctx context.Context, exposed string) (server, name string, ok bool) {
	providers := s.providers(hasPrompts)
	server, name, ok = s.g.h.ResolvePrompt(exposed)
	if !ok {
		// A bare name is known once its server's prompts were listed.
		for _, p := range providers {
			if _, err := s.g.h.Prompts(ctx, p); err != nil {
				s.g.log.Debug("gateway: prompts/list", "server", p, "err", err)
			}
		}
		server, name, ok = s.g.h.ResolvePrompt(exposed)
	}
	if !ok || !slices.Contains(providers, server) {
		return "", "", false
	}
	return server, name, true
}

// forwardError answers a forwarded request that failed: the server's own
// JSON-RPC error as it sent it, else an internal error saying why.
func forwardError(id json.RawMessage, err error) []byte {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return protocol.AppendError(nil, id, perr.Code, perr.Message, perr.Data)
	}
	return protocol.AppendError(nil, id, protocol.CodeInternalError, err.Error(), nil)
}

// complete forwards completion/complete to the server that owns the
// reference: a prompt's server, or for a resource template the servers
// that list resources, first to answer. With no server to ask, the
// completion is empty.
func (s *session) complete(ctx context.Context, msg protocol.Message, send func([]byte)) []byte {
	var p struct {
		Ref struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	if err := json.Unmarshal(orEmpty(msg.Params), &p); err != nil {
		return invalidParams(msg.ID, "completion/complete: %v", err)
	}
	var servers []string
	params := msg.Params
	switch p.Ref.Type {
	case "ref/prompt":
		server, name, ok := s.promptOwner(ctx, p.Ref.Name)
		if !ok {
			return invalidParams(msg.ID, "unknown prompt: %s", p.Ref.Name)
		}
		var ref map[string]json.RawMessage
		_ = json.Unmarshal(orEmpty(msg.Params), &struct {
			Ref *map[string]json.RawMessage `json:"ref"`
		}{&ref})
		ref["name"] = json.RawMessage(quote(name))
		b, err := json.Marshal(ref)
		if err != nil {
			return invalidParams(msg.ID, "completion/complete: %v", err)
		}
		params, servers = setMember(msg.Params, "ref", string(b)), []string{server}
	case "ref/resource":
		var own string
		servers, own = s.targets(p.Ref.URI, hasResources)
		if own != p.Ref.URI {
			var ref map[string]json.RawMessage
			_ = json.Unmarshal(orEmpty(msg.Params), &struct {
				Ref *map[string]json.RawMessage `json:"ref"`
			}{&ref})
			ref["uri"] = json.RawMessage(quote(own))
			b, err := json.Marshal(ref)
			if err != nil {
				return invalidParams(msg.ID, "completion/complete: %v", err)
			}
			params = setMember(msg.Params, "ref", string(b))
		}
	default:
		return invalidParams(msg.ID, "completion/complete: unknown ref type %q", p.Ref.Type)
	}
	var last error
	for _, server := range servers {
		raw, err := s.g.h.Forward(ctx, server, msg.Method, params, s.forwardOptions(send))
		if err == nil {
			return protocol.AppendResult(nil, msg.ID, raw)
		}
		last = err
	}
	if last != nil && len(servers) == 1 {
		return forwardError(msg.ID, last)
	}
	return protocol.AppendResult(nil, msg.ID, json.RawMessage(`{"completion":{"values":[]}}`))
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// setLevel records the client's logging level. The gateway logs nothing to
// its clients today: servers' notifications/message go to their logs.
func (s *session) setLevel(msg protocol.Message) []byte {
	var p protocol.LoggingSetLevelParams
	if err := json.Unmarshal(orEmpty(msg.Params), &p); err != nil || p.Level == "" {
		return invalidParams(msg.ID, "logging/setLevel: params must hold a level")
	}
	rank := levelRank(p.Level)
	if rank == 0 {
		return invalidParams(msg.ID, "logging/setLevel: unknown level %q", p.Level)
	}
	s.mu.Lock()
	s.level = rank
	s.mu.Unlock()
	return protocol.AppendResult(nil, msg.ID, nil)
}

// levels are the syslog severities of MCP logging, least severe first.
var levels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// levelRank is a level's place in levels, from 1; 0 for an unknown one.
func levelRank(l string) int {
	return slices.Index(levels, l) + 1
}

// logMessage forwards a server's notifications/message to a session that
// set a level it reaches and has the server active. Servers log to their
// whole connection, which every session of theirs shares.
func (s *session) logMessage(ev mcpvisor.Event) {
	s.mu.Lock()
	min := s.level
	s.mu.Unlock()
	var p struct {
		Level string `json:"level"`
	}
	if min == 0 || json.Unmarshal(orEmpty(ev.Params), &p) != nil || levelRank(p.Level) < min || !slices.Contains(s.hs.Servers(), ev.Server) {
		return
	}
	s.notify(protocol.AppendNotification(nil, protocol.MethodLoggingMessage, ev.Params))
}

// forward passes a server's resource and prompt notifications to the
// sessions they concern: resources/updated to those subscribed to the URI
// on that server, list changes to those with the server active.
func (s *session) forward(ev mcpvisor.Event) {
	switch ev.Method {
	case protocol.MethodLoggingMessage:
		s.logMessage(ev)
	case protocol.MethodElicitationComplete:
		var p protocol.ElicitationCompleteParams
		if json.Unmarshal(orEmpty(ev.Params), &p) != nil {
			return
		}
		s.mu.Lock()
		server, ok := s.urls[p.ElicitationID]
		if ok && server == ev.Server {
			delete(s.urls, p.ElicitationID)
		}
		s.mu.Unlock()
		if ok && server == ev.Server {
			s.notify(protocol.AppendNotification(nil, protocol.MethodElicitationComplete, ev.Params))
		}
	case protocol.MethodResourcesUpdated:
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(orEmpty(ev.Params), &p) != nil {
			return
		}
		s.mu.Lock()
		exposed, ok := updatedURI(s.subs, ev.Server, p.URI)
		s.mu.Unlock()
		if ok {
			s.notify(protocol.AppendNotification(nil, protocol.MethodResourcesUpdated, setMember(ev.Params, "uri", quote(exposed))))
		}
	case protocol.MethodResourcesListChanged, protocol.MethodPromptsListChanged:
		if slices.Contains(s.hs.Servers(), ev.Server) {
			s.notify(protocol.AppendNotification(nil, ev.Method, nil))
		}
	}
}

// updatedURI finds the subscription (exposed URI → server) that server's
// notifications/resources/updated for its own URI uri answers: the one of
// that URI, else one of which uri is a sub-resource. It returns the
// updated URI as the subscriber knows it.
func updatedURI(subs map[string]string, server, uri string) (exposed string, ok bool) {
	var prefix string
	for sub, srv := range subs {
		if srv != server {
			continue
		}
		own := ownURI(sub, srv)
		if own == uri {
			return sub, true
		}
		if strings.HasPrefix(uri, own) && len(own) > len(prefix) {
			exposed, prefix, ok = sub+uri[len(own):], own, true
		}
	}
	return exposed, ok
}

// notify queues a notification for the client's stream (the GET stream,
// or stdout); when the queue is full it is dropped and logged.
func (s *session) notify(frame []byte) {
	select {
	case s.notes <- frame:
	default:
		s.g.log.Warn("gateway: a client's notification queue is full; notification dropped", "queued", cap(s.notes))
	}
}
