package gateway

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// Bridging a legacy server to a modern client. A legacy server asks for
// input with requests of its own (elicitation/create, sampling/createMessage)
// while the call waits; a modern client takes no requests, it answers
// input_required results and retries. So the gateway keeps the call running
// (a bridge), answers the client's request with the server's questions as
// inputRequests and a requestState naming the bridge, and the retry's
// inputResponses become the answers the server waits for.
//
// The requestState is sealed (AES-GCM under Options.StateKey): a client
// cannot forge or alter it, and it names nothing a client could guess. A
// legacy server's call lives in one process, so the retry must reach the
// replica that holds it; one that does not is told so (-32602). A modern
// server needs no bridge: its input_required result goes to the client as
// it is, and any replica serves the retry.

// DefaultInputTimeout is how long a bridged call waits for the client's
// retry (Options.InputTimeout).
const DefaultInputTimeout = 10 * time.Minute

// gatherWindow is how long the gateway waits, after a server's first
// question, for others it asks at the same time, so they reach the client
// in one input_required result.
const gatherWindow = 25 * time.Millisecond

// statePrefix marks a requestState the gateway sealed.
const statePrefix = "mcpvisor.bridge."

// bridge is one legacy-server call held for a modern client's retries.
type bridge struct {
	g      *Gateway
	id     string
	s      *session // the call's own session, which outlives each request
	method string   // the request's: tools/call or prompts/get

	mu     sync.Mutex
	asks   map[string]protocol.InputRequest // open questions by request id
	order  []string                         // their keys, in the order asked
	out    func([]byte)                     // the current request's stream (progress); nil between requests
	resp   []byte                           // the call's response, once done
	expiry *time.Timer
	// updated is when the call's state last changed (a question, an
	// answer, its end); keep marks a task's bridge, kept after its end
	// for tasks/get until its ttl.
	updated time.Time
	keep    bool
	// delivered: the open questions went to the client in a round it has
	// not answered yet.
	delivered bool

	wake chan struct{} // a question or the end arrived (1-buffered)
	done chan struct{} // closed when resp is set
	// unwatch stops watching the client's connection (session.downstream);
	// set under mu.
	unwatch func() bool
}

// bridges reports whether a modern client's tools/call goes through a
// bridge: it retries one (its requestState is the gateway's), or it needs
// a new one (bridged).
func (s *session) bridges(msg protocol.Message) bool {
	if _, ok := bridgeState(msg.Params); ok {
		return true
	}
	name, _ := nameOf(msg.Method, msg.Params)
	switch msg.Method {
	case protocol.MethodToolsCall:
		return s.bridged(name)
	case protocol.MethodPromptsGet:
		server, _, ok := s.promptOwner(s.ctx, name)
		return ok && s.canAnswer() && s.legacy(server)
	}
	return false
}

// canAnswer reports whether the client can answer a question: it
// declared elicitation, sampling or roots.
func (s *session) canAnswer() bool {
	c := s.clientCaps()
	return c.elicitForm || c.elicitURL || c.sampling || c.roots
}

// legacy reports whether server speaks a revision of the initialize era.
func (s *session) legacy(server string) bool {
	for _, st := range s.g.h.Status() {
		if st.Name == server {
			return !protocol.IsModern(st.ProtocolVersion)
		}
	}
	return false
}

// bridged reports whether a modern client's tools/call needs a bridge: its
// tool's server speaks a legacy revision, and the client can answer a
// question (it declared elicitation, sampling or roots).
func (s *session) bridged(tool string) bool {
	server, ok := s.toolServer(tool)
	return ok && s.canAnswer() && s.legacy(server)
}

// toolServer is the server that owns an exposed tool name.
func (s *session) toolServer(tool string) (string, bool) {
	server, _, ok := s.g.h.ResolveTool(tool)
	return server, ok
}

// bridgeCall answers a modern client's tools/call whose server needs a
// bridge (session.bridged), or a retry whose requestState names one: the
// call's result, or its open questions as input_required, for request
// id. nil: ctx ended first (the client went away or cancelled), which
// cancels the call. out receives progress while the request waits (nil:
// none is sent).
func (g *Gateway) bridgeCall(ctx context.Context, s *session, msg protocol.Message, out func([]byte)) []byte {
	b := (*bridge)(nil)
	if state, ok := bridgeState(msg.Params); ok {
		var perr *protocol.Error
		if b, perr = g.takeAnswers(msg, state); perr != nil {
			return protocol.AppendError(nil, msg.ID, perr.Code, perr.Message, perr.Data)
		}
	} else if b = g.startBridge(s, msg); b == nil {
		return protocol.AppendError(nil, msg.ID, protocol.CodeInternalError, "the gateway is closed", nil)
	}
	return b.next(ctx, msg.ID, out)
}

// bridgeHTTP is bridgeCall over Streamable HTTP: progress streams (SSE)
// when the client accepts it.
func (g *Gateway) bridgeHTTP(w http.ResponseWriter, r *http.Request, s *session, msg protocol.Message) {
	var lw *lazyStream
	var out func([]byte)
	if accepts(r, contentSSE) {
		lw = &lazyStream{w: w}
		out = lw.send
	}
	if frame := g.bridgeCall(r.Context(), s, msg, out); frame != nil {
		writeModernAnswer(w, lw, frame)
	}
}

// startBridge starts a modern client's tools/call on a bridge of its own;
// nil when the gateway is closed.
func (g *Gateway) startBridge(s *session, msg protocol.Message) *bridge {
	// The call outlives the request that started it, but keeps its trace.
	ctx, cancel := context.WithCancel(withCallerOf(context.Background(), s.ctx))
	call := &session{g: g, id: newSessionID(), hs: s.hs, ctx: ctx, cancel: cancel, modern: true, bridge: true,
		caps: s.caps, rawCaps: s.rawCaps,
		inflight: map[string]context.CancelFunc{}, outbound: map[string]chan protocol.Message{},
		owners: map[string]string{}, subs: map[string]string{},
		changed: make(chan struct{}, 1), notes: make(chan []byte, notesQueue)}
	b := &bridge{g: g, id: newSessionID(), s: call, method: msg.Method, asks: map[string]protocol.InputRequest{},
		wake: make(chan struct{}, 1), done: make(chan struct{}), updated: time.Now()}
	call.awaiting = b.awaiting
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		cancel()
		return nil
	}
	if g.bridges == nil {
		g.bridges = map[string]*bridge{}
	}
	g.bridges[b.id] = b
	g.wg.Add(1)
	g.mu.Unlock()
	b.expiry = time.AfterFunc(g.inputTimeout(), b.expire)
	if s.downstream != nil {
		b.mu.Lock() // clientGone may run at once: it waits for unwatch
		b.unwatch = context.AfterFunc(s.downstream, b.clientGone)
		b.mu.Unlock()
	}
	go func() {
		defer g.wg.Done()
		resp := call.serve(ctx, msg, b.send)
		if resp == nil {
			resp = protocol.AppendError(nil, msg.ID, protocol.CodeInternalError, "the call was cancelled", nil)
		}
		b.mu.Lock()
		b.resp, b.updated = resp, time.Now()
		b.mu.Unlock()
		close(b.done)
	}()
	return b
}

// takeAnswers gives a retry's answers to the bridge its requestState
// names, and returns that bridge.
func (g *Gateway) takeAnswers(msg protocol.Message, state string) (*bridge, *protocol.Error) {
	id, ok := g.unseal(state)
	if !ok {
		return nil, &protocol.Error{Code: protocol.CodeInvalidParams, Message: "requestState was not issued by this gateway, or was altered"}
	}
	g.mu.Lock()
	b := g.bridges[id]
	g.mu.Unlock()
	if b == nil {
		return nil, &protocol.Error{Code: protocol.CodeInvalidParams, Message: "the call this input answers is not held here: it ended, waited too long for the answer, or is held by another replica"}
	}
	var p struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if err := json.Unmarshal(orEmpty(msg.Params), &p); err != nil {
		return nil, &protocol.Error{Code: protocol.CodeInvalidParams, Message: "inputResponses: " + err.Error()}
	}
	b.expiry.Reset(g.inputTimeout())
	if b.answer(p.InputResponses) {
		b.signal() // questions left unanswered are asked again
	}
	return b, nil
}

// answer hands the client's answers to the questions they name (keys of
// no open question are ignored) and reports whether questions remain open.
func (b *bridge) answer(responses map[string]json.RawMessage) (open bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var answered []string
	for key := range b.asks {
		if resp, ok := responses[key]; ok {
			answered = append(answered, key)
			b.s.deliver(protocol.Message{Kind: protocol.KindResponse, ID: json.RawMessage(key), Result: resp})
		}
	}
	for _, key := range answered {
		delete(b.asks, key)
		b.order = slices.DeleteFunc(b.order, func(k string) bool { return k == key })
	}
	if len(answered) > 0 {
		b.updated, b.delivered = time.Now(), false
	}
	return len(b.asks) > 0
}

// awaiting reports whether the call waits on the client to answer a
// round it was given: until then the server, blocked on those questions,
// asks nothing new of this call (flows.Askers.Pick).
func (b *bridge) awaiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.delivered && len(b.asks) > 0
}

// send takes the frames the call's session writes to its client: requests
// become questions for the next input_required result, progress goes to
// the current request's stream, and a withdrawn question is dropped.
func (b *bridge) send(frame []byte) {
	m, err := protocol.Classify(frame)
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch m.Kind {
	case protocol.KindRequest:
		key := string(m.ID)
		b.asks[key] = protocol.InputRequest{Method: m.Method, Params: m.Params}
		b.order = append(b.order, key)
		b.updated, b.delivered = time.Now(), false
		b.signal()
	case protocol.KindNotification:
		if m.Method == protocol.MethodCancelled {
			var p protocol.CancelledParams
			if json.Unmarshal(orEmpty(m.Params), &p) == nil {
				key := strings.TrimSpace(string(p.RequestID))
				delete(b.asks, key)
				b.order = slices.DeleteFunc(b.order, func(k string) bool { return k == key })
			}
			return
		}
		if b.out != nil {
			b.out(frame)
		}
	}
}

func (b *bridge) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// next waits for the call's answer or its open questions and returns the
// frame for request id. If ctx ends first, the client is gone: the call is
// cancelled and next returns nil.
func (b *bridge) next(ctx context.Context, id json.RawMessage, out func([]byte)) []byte {
	b.mu.Lock()
	b.out = out
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.out = nil
		b.mu.Unlock()
	}()
	for {
		select {
		case <-b.done:
			b.end()
			return b.g.modernResponse(withID(b.resp, id), b.method)
		case <-b.wake:
			select {
			case <-b.done:
				continue
			case <-time.After(gatherWindow):
			}
			if frame := b.questions(id); frame != nil {
				return b.g.modernResponse(frame, b.method)
			}
		case <-ctx.Done():
			b.s.cancel()
			b.end()
			return nil
		}
	}
}

// questions is the input_required result of the open questions, or nil
// when there are none.
func (b *bridge) questions(id json.RawMessage) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.asks) == 0 {
		return nil
	}
	reqs := make(map[string]protocol.InputRequest, len(b.asks))
	for _, key := range b.order {
		reqs[key] = b.asks[key]
	}
	state, _ := json.Marshal(b.g.seal(b.id))
	b.delivered = true
	return result(id, protocol.InputRequiredResult{ResultType: protocol.ResultInputRequired, InputRequests: reqs, RequestState: state})
}

// end forgets the bridge once its call answered.
func (b *bridge) end() {
	b.expiry.Stop()
	b.mu.Lock()
	unwatch := b.unwatch
	b.mu.Unlock()
	if unwatch != nil {
		unwatch()
	}
	b.g.mu.Lock()
	delete(b.g.bridges, b.id)
	b.g.mu.Unlock()
}

// clientGone ends a call whose client's connection ended: its retry can
// no longer come, and the server would hold the call until InputTimeout.
// A task's call goes on: a task is polled on a connection of its own.
func (b *bridge) clientGone() {
	b.mu.Lock()
	keep := b.keep
	b.mu.Unlock()
	if keep {
		return
	}
	b.s.cancel()
	b.end()
	b.g.log.Info("gateway: a call waiting for its client's input ended with the client's connection")
}

// expire ends a call whose client stopped retrying, or a task whose ttl
// has passed.
func (b *bridge) expire() {
	b.s.cancel()
	b.end()
	b.mu.Lock()
	keep := b.keep
	b.mu.Unlock()
	if keep {
		b.g.forgetTask(b.id)
		return
	}
	b.g.log.Info("gateway: a call waiting for its client's input expired", "after", b.g.inputTimeout())
}

// withID gives a response frame another request's id: a bridged call's
// answer goes to the client's latest retry.
func withID(frame []byte, id json.RawMessage) []byte {
	m, err := protocol.Classify(frame)
	if err != nil || frame == nil {
		return protocol.AppendError(nil, id, protocol.CodeInternalError, "the call ended without an answer", nil)
	}
	if m.Error != nil {
		return protocol.AppendError(nil, id, m.Error.Code, m.Error.Message, m.Error.Data)
	}
	return protocol.AppendResult(nil, id, m.Result)
}

func (g *Gateway) inputTimeout() time.Duration {
	if g.opts.InputTimeout > 0 {
		return g.opts.InputTimeout
	}
	return DefaultInputTimeout
}

// stateAEAD is the cipher of sealed requestStates, from Options.StateKey
// or, without one, a key of this gateway's own.
func (g *Gateway) stateAEAD() cipher.AEAD {
	g.stateOnce.Do(func() {
		key := g.opts.StateKey
		if len(key) == 0 {
			key = make([]byte, 32)
			_, _ = rand.Read(key)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			panic("gateway: Options.StateKey: " + err.Error()) // New checked its length
		}
		g.aead, _ = cipher.NewGCM(block)
	})
	return g.aead
}

// seal returns the requestState naming bridge id.
func (g *Gateway) seal(id string) string {
	aead := g.stateAEAD()
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return statePrefix + base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(id), []byte(statePrefix)))
}

// unseal returns the bridge id a requestState names, or false when the
// gateway did not seal it or it was altered.
func (g *Gateway) unseal(state string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(state, statePrefix))
	aead := g.stateAEAD()
	if err != nil || len(raw) < aead.NonceSize() {
		return "", false
	}
	id, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(statePrefix))
	if err != nil {
		return "", false
	}
	return string(id), true
}

// bridgeState returns a request's requestState when the gateway sealed it
// (it starts with statePrefix); a server's own passes on to the server.
func bridgeState(params json.RawMessage) (string, bool) {
	var p struct {
		RequestState string `json:"requestState"`
	}
	if json.Unmarshal(orEmpty(params), &p) != nil || !strings.HasPrefix(p.RequestState, statePrefix) {
		return "", false
	}
	return p.RequestState, true
}

// errStateKey: Options.StateKey is not an AES key.
var errStateKey = errors.New("gateway: Options.StateKey must be 16, 24 or 32 bytes")
