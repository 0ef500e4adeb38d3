package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// The modern era (2026-07-28) over Streamable HTTP: no initialize and no
// session. Every request carries its protocol version, the client's
// capabilities and identity in _meta, and mirrors its method and name in
// headers. Whatever a request needs comes from the request itself or from
// the host (its grants are the journal's): no replica keeps anything a
// later request depends on, so any replica serves any request.
//
// A POST is modern when it has no Mcp-Session-Id and is not a legacy
// initialize (one that carries no modern _meta and no modern
// MCP-Protocol-Version header).

// modernScope is the host session of every modern client: the groups
// activated through activate_tools by a modern client are the journal's,
// shared by the modern clients of this host.
const modernScope = "mcp-modern"

// Header names of 2026-07-28 (SEP-2243), in Go's canonical form.
const (
	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"
)

// modernMethods are the requests a modern client may send; any other is
// -32601 with HTTP 404 (initialize, ping, logging/setLevel and
// resources/subscribe are legacy-only).
var modernMethods = map[string]bool{
	protocol.MethodServerDiscover:         true,
	protocol.MethodToolsList:              true,
	protocol.MethodToolsCall:              true,
	protocol.MethodResourcesList:          true,
	protocol.MethodResourcesTemplatesList: true,
	protocol.MethodResourcesRead:          true,
	protocol.MethodPromptsList:            true,
	protocol.MethodPromptsGet:             true,
	protocol.MethodCompletionComplete:     true,
	protocol.MethodSubscriptionsListen:    true,
	protocol.MethodTasksGet:               true,
	protocol.MethodTasksUpdate:            true,
	protocol.MethodTasksCancel:            true,
}

// requestMeta is the modern _meta of a request.
type requestMeta struct {
	Version string          `json:"io.modelcontextprotocol/protocolVersion"`
	Caps    json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	Info    json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
}

// metaOf reads params._meta; the zero value when there is none.
func metaOf(params json.RawMessage) requestMeta {
	var p struct {
		Meta requestMeta `json:"_meta"`
	}
	_ = json.Unmarshal(orEmpty(params), &p)
	return p.Meta
}

// isModernPost reports whether a POST without a session belongs to the
// modern era: anything but a legacy initialize.
func isModernPost(r *http.Request, msg protocol.Message) bool {
	if msg.Kind != protocol.KindRequest || msg.Method != protocol.MethodInitialize {
		return true
	}
	return protocol.IsModern(r.Header.Get(headerVersion)) || metaOf(msg.Params).Version != ""
}

// httpStatus is the HTTP status of a modern error response: 404 for an
// unknown method, 400 for the errors 2026-07-28 says are the client's.
func httpStatus(code int64) int {
	switch code {
	case protocol.CodeMethodNotFound:
		return http.StatusNotFound
	case protocol.CodeInvalidParams, protocol.CodeHeaderMismatch, protocol.CodeMissingClientCapability, protocol.CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// writeModernError answers a request with a JSON-RPC error and its HTTP
// status.
func writeModernError(w http.ResponseWriter, id json.RawMessage, code int64, msg string, data json.RawMessage) {
	w.Header().Set("Content-Type", contentJSON)
	w.WriteHeader(httpStatus(code))
	_, _ = w.Write(protocol.AppendError(nil, id, code, msg, data))
}

// allVersions are the revisions the gateway speaks, newest first: modern
// without a session, legacy through initialize.
func allVersions() []string {
	return append(slices.Clone(protocol.ModernVersions), protocol.SupportedVersions...)
}

// serveModern answers one modern POST.
func (g *Gateway) serveModern(w http.ResponseWriter, r *http.Request, msg protocol.Message) {
	if msg.Kind != protocol.KindRequest {
		// Modern clients cancel by closing the request's stream; a stray
		// notification or response has nothing to reach.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	id := msg.ID
	meta := metaOf(msg.Params)
	headerV := r.Header.Get(headerVersion)
	fail := func(e *protocol.Error) { writeModernError(w, id, e.Code, e.Message, e.Data) }
	if meta.Version == "" {
		fail(errNoVersion)
		return
	}
	switch {
	case headerV == "":
		fail(&protocol.Error{Code: protocol.CodeHeaderMismatch, Message: "the " + headerVersion + " header is required"})
		return
	case headerV != meta.Version:
		fail(&protocol.Error{Code: protocol.CodeHeaderMismatch, Message: headerVersion + " header " + headerV + " does not match _meta's " + meta.Version})
		return
	}
	if e := modernRequestError(msg, meta); e != nil {
		fail(e)
		return
	}
	s := g.modernSession(r.Context(), meta.Caps)
	if err := s.checkHeaders(r.Header, msg); err != nil {
		writeModernError(w, id, protocol.CodeHeaderMismatch, err.Error(), nil)
		return
	}
	switch msg.Method {
	case protocol.MethodSubscriptionsListen:
		g.listenHTTP(w, r, s, msg)
		return
	case protocol.MethodToolsCall:
		if resp, ok := g.taskCall(r.Context(), s, msg); ok {
			if resp != nil {
				writeModernAnswer(w, nil, g.modernResponse(resp, msg.Method))
			}
			return
		}
		if s.bridges(msg) {
			g.bridgeHTTP(w, r, s, msg)
			return
		}
	case protocol.MethodPromptsGet:
		if s.bridges(msg) {
			g.bridgeHTTP(w, r, s, msg)
			return
		}
	}
	var send func([]byte)
	var lw *lazyStream
	if msg.Method == protocol.MethodToolsCall && accepts(r, contentSSE) {
		lw = &lazyStream{w: w}
		send = lw.send
	}
	resp := s.serve(s.ctx, msg, send)
	if resp == nil {
		resp = protocol.AppendError(nil, id, protocol.CodeInternalError, "request cancelled", nil)
	}
	writeModernAnswer(w, lw, s.g.modernResponse(resp, msg.Method))
}

// writeModernAnswer ends a modern request's answer with frame: on its
// stream if one was opened, else as JSON, with the HTTP status of an error.
func writeModernAnswer(w http.ResponseWriter, lw *lazyStream, frame []byte) {
	if lw != nil && lw.finish(frame) {
		return
	}
	m, err := protocol.Classify(frame)
	if err == nil && m.Error != nil {
		w.Header().Set("Content-Type", contentJSON)
		w.WriteHeader(httpStatus(m.Error.Code))
		_, _ = w.Write(frame)
		return
	}
	writeJSON(w, frame)
}

// errNoVersion answers a modern request whose _meta has no protocol
// version.
var errNoVersion = &protocol.Error{Code: protocol.CodeInvalidParams,
	Message: "_meta must hold " + protocol.MetaProtocolVersion + " (requests without a session are of the 2026-07-28 era; legacy clients start with initialize)"}

// modernRequestError checks what every modern request needs besides its
// transport's own headers: a revision the gateway speaks, the client's
// capabilities, and a method of the modern era. nil: it may be served.
func modernRequestError(msg protocol.Message, meta requestMeta) *protocol.Error {
	if meta.Version == "" {
		return errNoVersion
	}
	if !slices.Contains(protocol.ModernVersions, meta.Version) {
		data, _ := json.Marshal(protocol.UnsupportedVersionData{Supported: allVersions(), Requested: meta.Version})
		return &protocol.Error{Code: protocol.CodeUnsupportedProtocolVersion, Data: data,
			Message: "unsupported protocol version " + meta.Version + " (a legacy revision starts with initialize)"}
	}
	if !isObject(meta.Caps) {
		return &protocol.Error{Code: protocol.CodeInvalidParams, Message: "_meta must hold " + protocol.MetaClientCapabilities + " (an object)"}
	}
	if !modernMethods[msg.Method] {
		return &protocol.Error{Code: protocol.CodeMethodNotFound, Message: "method not found: " + msg.Method}
	}
	return nil
}

// modernSession is the per-request session of a modern client: the shared
// modern host session, the capabilities the request declares, and the
// request's lifetime.
func (g *Gateway) modernSession(ctx context.Context, rawCaps json.RawMessage) *session {
	var caps protocol.ClientCapabilities
	_ = json.Unmarshal(orEmpty(rawCaps), &caps)
	ctx, cancel := context.WithCancel(ctx)
	return &session{
		g: g, hs: g.h.Session(modernScope, ""), ctx: ctx, cancel: cancel, modern: true,
		caps: parseClientCaps(caps), rawCaps: rawCaps,
		inflight: map[string]context.CancelFunc{}, outbound: map[string]chan protocol.Message{},
		owners: map[string]string{}, subs: map[string]string{},
		changed: make(chan struct{}, 1), notes: make(chan []byte, notesQueue),
	}
}

// checkHeaders validates the SEP-2243 headers against the body: Mcp-Method
// always, Mcp-Name for the requests that name something, and Mcp-Param-*
// for a tools/call whose tool declares x-mcp-header.
func (s *session) checkHeaders(h http.Header, msg protocol.Message) error {
	method := h.Get(headerMethod)
	switch {
	case method == "":
		return errors.New("the " + headerMethod + " header is required")
	case method != msg.Method:
		return errors.New(headerMethod + " header " + method + " does not match the body's method " + msg.Method)
	}
	name, named := nameOf(msg.Method, msg.Params)
	if !named {
		return nil
	}
	got, present := h[headerName]
	if !present {
		return errors.New("the " + headerName + " header is required for " + msg.Method)
	}
	if v, ok := decodeHeaderValue(strings.TrimSpace(strings.Join(got, ","))); !ok || v != name {
		return errors.New(headerName + " header does not match the body's " + nameField(msg.Method))
	}
	if msg.Method != protocol.MethodToolsCall {
		return nil
	}
	return s.checkParamHeaders(h, name, msg.Params)
}

// checkParamHeaders compares each Mcp-Param-{Name} header of the tool's
// x-mcp-header annotations with the argument it mirrors: a present
// argument needs its header with the same value, an absent one none.
func (s *session) checkParamHeaders(h http.Header, tool string, params json.RawMessage) error {
	var schema json.RawMessage
	for _, t := range s.hs.Tools() {
		if t.Name == tool {
			schema = t.MCP().InputSchema
			break
		}
	}
	if len(schema) == 0 {
		return nil
	}
	annotations, err := protocol.ParamHeaders(schema)
	if err != nil || len(annotations) == 0 {
		return nil // a tool with invalid annotations is the client's to drop
	}
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(params, &p)
	want := map[string]string{}
	for _, f := range protocol.ParamHeaderValues(annotations, p.Arguments) {
		want[http.CanonicalHeaderKey(f.Name)] = f.Value
	}
	for _, a := range annotations {
		key := http.CanonicalHeaderKey(a.HeaderName())
		got, present := h[key]
		expected, has := want[key]
		switch {
		case !has && present:
			return errors.New(a.HeaderName() + " header sent for an argument the body does not have")
		case has && !present:
			return errors.New("the " + a.HeaderName() + " header is required: the body has its argument")
		case !has:
			continue
		}
		gotV, ok := decodeHeaderValue(strings.TrimSpace(strings.Join(got, ",")))
		if !ok {
			return errors.New(a.HeaderName() + " header is not valid Base64")
		}
		wantV, _ := decodeHeaderValue(expected)
		if gotV != wantV && !sameNumber(gotV, wantV) {
			return errors.New(a.HeaderName() + " header does not match its argument in the body")
		}
	}
	return nil
}

// nameOf is what Mcp-Name mirrors: a tools/call's or prompts/get's name, a
// resources/read's uri.
func nameOf(method string, params json.RawMessage) (string, bool) {
	return protocol.MirroredName(method, orEmpty(params))
}

func nameField(method string) string {
	switch method {
	case protocol.MethodResourcesRead:
		return "params.uri"
	case protocol.MethodTasksGet, protocol.MethodTasksUpdate, protocol.MethodTasksCancel:
		return "params.taskId"
	}
	return "params.name"
}

// modernResponse adds what every modern result carries: resultType
// (complete unless the server asked for input), the gateway's identity in
// _meta, and on cacheable results the cache hints (SEP-2549) when the
// server gave none. Errors pass unchanged.
func (g *Gateway) modernResponse(frame []byte, method string) []byte {
	m, err := protocol.Classify(frame)
	if err != nil || m.Kind != protocol.KindResponse || m.Error != nil {
		return frame
	}
	res, ok := modernResult(m.Result, method)
	if !ok {
		return frame
	}
	return protocol.AppendResult(nil, m.ID, res)
}

// modernResult is modernResponse's work on a result (of method); ok is
// false when it is left as it is: an input_required result, or one that
// is not an object.
func modernResult(result json.RawMessage, method string) (_ json.RawMessage, ok bool) {
	if protocol.IsInputRequired(result) {
		return nil, false
	}
	// One parse of the result's members, whatever its size: the values
	// stay as they were written.
	var members map[string]json.RawMessage
	if json.Unmarshal(result, &members) != nil || members == nil {
		return nil, false
	}
	if _, ok := members["resultType"]; !ok {
		members["resultType"] = resultComplete
	}
	var rt string
	if asksInput(method) && json.Unmarshal(members["resultType"], &rt) == nil && rt == protocol.ResultComplete {
		// A complete answer asks for nothing: input requests and a
		// requestState in it (a legacy server's result, which has no such
		// members in its revision) are the server's own data, contradictory
		// next to "complete" and never sealed, so they do not reach the
		// client. (A task's tasks/get carries its open inputRequests in a
		// complete result: that is the tasks extension's own shape.)
		delete(members, "inputRequests")
		delete(members, "requestState")
	}
	if cacheable(method) {
		if _, ok := members["ttlMs"]; !ok {
			members["ttlMs"] = json.RawMessage("0")
		}
		if _, ok := members["cacheScope"]; !ok {
			members["cacheScope"] = cachePrivate
		}
	}
	if meta, err := protocol.MergeMeta(members["_meta"], protocol.MetaServerInfo, gatewayInfo()); err == nil {
		members["_meta"] = meta
	}
	// The server's text as it wrote it: no HTML escaping of its strings.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(members) != nil {
		return nil, false
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
}

// asksInput are the requests a server may answer input_required.
func asksInput(method string) bool {
	switch method {
	case protocol.MethodToolsCall, protocol.MethodPromptsGet, protocol.MethodResourcesRead:
		return true
	}
	return false
}

var (
	resultComplete = json.RawMessage(`"` + protocol.ResultComplete + `"`)
	cachePrivate   = json.RawMessage(`"private"`)
)

// gatewayInfo is the gateway's Implementation as JSON, made once.
var gatewayInfo = sync.OnceValue(func() json.RawMessage {
	b, _ := json.Marshal(gatewayImplementation())
	return b
})

// cacheable are the results SEP-2549 gives cache hints. The gateway's lists
// depend on the servers' states and the client's grants, so it says they
// are private and not to be reused (ttlMs 0) unless a server said more of
// its own answer (resources/read passes the server's hints).
func cacheable(method string) bool {
	switch method {
	case protocol.MethodToolsList, protocol.MethodPromptsList, protocol.MethodResourcesList,
		protocol.MethodResourcesTemplatesList, protocol.MethodResourcesRead, protocol.MethodServerDiscover:
		return true
	}
	return false
}

// gatewayImplementation is the gateway's identity, as initialize and every
// modern result give it.
func gatewayImplementation() protocol.Implementation {
	return protocol.Implementation{Name: "mcpvisor", Title: "mcpvisor gateway", Version: moduleVersion()}
}

// setMember sets (or replaces) a member of a JSON object. A value that is
// not an object is returned as it is.
func setMember(obj json.RawMessage, key, value string) json.RawMessage {
	out, err := protocol.MergeMeta(obj, key, json.RawMessage(value))
	if err != nil {
		return obj
	}
	return out
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return len(raw) > 0 && json.Unmarshal(raw, &m) == nil && m != nil
}

// discover answers server/discover: the revisions the gateway speaks and
// its capabilities, as initialize gives them to a legacy client.
func (s *session) discover(msg protocol.Message) []byte {
	caps := s.g.capabilities()
	// Tasks are served to modern clients (tasks.go).
	caps.Extensions = map[string]json.RawMessage{TasksExtension: json.RawMessage(`{}`)}
	return result(msg.ID, protocol.DiscoverResult{
		SupportedVersions: allVersions(),
		Capabilities:      caps,
		Instructions:      s.hs.Catalog(),
	})
}

// Markers of a Base64 header value (SEP-2243): =?base64?{Base64}?=.
const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// decodeHeaderValue returns a header value as text: the decoded bytes of a
// =?base64?…?= value, else the value itself. It reports false for a
// marked value that is not valid Base64.
func decodeHeaderValue(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, base64Prefix)
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, base64Suffix)
	if !ok {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// sameNumber reports whether two header texts are the same number (a
// client may write 42 as 42.0).
func sameNumber(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}
