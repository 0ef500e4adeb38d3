package mcpserve

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"
)

// Multi round-trip requests (2026-07-28, basic/patterns/mrtr). A modern
// request cannot be answered by a request of the server's own, so
// ToolCall.Call asks by re-execution: an ask the call's input already
// answers returns that answer; any other makes the handler fail with
// ErrInputRequired, and the tools/call result becomes
//
//	{"resultType":"input_required","inputRequests":{key:{method,params}},"requestState":"…"}
//
// The client fulfils the requests and sends the tools/call again with a new
// id, the answers in inputResponses under the same keys and requestState as
// it came; the handler then runs again from the start.
//
// A retry carries the answers of its own round only, so requestState keeps
// those of earlier rounds: sealed with AES-GCM under a key drawn when the
// server starts, so that no answer (a password) travels in clear and no
// client can forge or alter one. The sealed state is bound to the tool and
// its arguments and expires after RequestStateTTL.

// RequestStateTTL is how long the requestState of an input_required result
// stays valid: the time a person has to answer one round.
const RequestStateTTL = 15 * time.Minute

// InputRequest is one request the client is asked to fulfil.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// InputRequiredResult is the result of a tools/call that needs input.
type InputRequiredResult struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]InputRequest `json:"inputRequests"`
	RequestState  string                  `json:"requestState"`
}

// inputMethods maps the requests an input round may carry to the client
// capability each needs.
var inputMethods = map[string]string{
	"elicitation/create":     "elicitation",
	"sampling/createMessage": "sampling",
	"roots/list":             "roots",
}

// inputRound is the input of one run of a modern tools/call handler: the
// answers it came with and the asks it made.
type inputRound struct {
	tool, args string // the tool and the digest of its arguments

	mu      sync.Mutex
	answers map[string]json.RawMessage
	seen    map[string]int          // asks of this run per digest
	asked   map[string]InputRequest // asks of this run without an answer
}

// ask returns the answer to method and params, or records the ask and
// returns ErrInputRequired. Its key is derived from the request itself (and
// its rank among identical asks of the run), not from the order of asks: a
// handler may skip an ask on its next run (the answer is cached by then),
// and must not get another ask's answer for it.
func (r *inputRound) ask(method string, params json.RawMessage) (json.RawMessage, error) {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write(params)
	digest := hex.EncodeToString(h.Sum(nil)[:8])
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[digest]++
	key := "input-" + digest
	if n := r.seen[digest]; n > 1 {
		key += "-" + strconv.Itoa(n)
	}
	if answer, ok := r.answers[key]; ok {
		return answer, nil
	}
	r.asked[key] = InputRequest{Method: method, Params: params}
	return nil, fmt.Errorf("%w: %s (%s)", ErrInputRequired, method, key)
}

// pending returns the asks of the run that had no answer.
func (r *inputRound) pending() map[string]InputRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.asked) == 0 {
		return nil
	}
	return maps.Clone(r.asked) // a goroutine of the handler may still ask
}

// sealedState is requestState before sealing.
type sealedState struct {
	Tool    string                     `json:"tool"`
	Args    string                     `json:"args"`
	Expires int64                      `json:"exp"` // Unix milliseconds
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
}

// stateAAD binds the ciphertext to its use.
var stateAAD = []byte("mcpserve requestState v1")

func newStateAEAD() cipher.AEAD {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(err) // crypto/rand does not fail
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}

// openRound returns the input of a modern tools/call: the answers sealed in
// requestState, then those of inputResponses.
func (s *Server) openRound(tool string, args json.RawMessage, responses map[string]json.RawMessage, state *string) (*inputRound, error) {
	r := &inputRound{
		tool: tool, args: argumentsDigest(args),
		answers: map[string]json.RawMessage{},
		seen:    map[string]int{},
		asked:   map[string]InputRequest{},
	}
	if state != nil {
		st, err := s.openState(*state)
		if err != nil {
			return nil, Errorf(CodeInvalidParams, "Invalid params: requestState: %v", err)
		}
		switch {
		case st.Tool != r.tool || st.Args != r.args:
			return nil, Errorf(CodeInvalidParams, "Invalid params: requestState belongs to another request")
		case time.Now().UnixMilli() > st.Expires:
			return nil, Errorf(CodeInvalidParams, "Invalid params: requestState has expired; call the tool again")
		}
		for k, v := range st.Answers {
			r.answers[k] = v
		}
	}
	for k, v := range responses {
		r.answers[k] = v
	}
	return r, nil
}

// inputRequired returns the result asking for the round's pending asks,
// with every answer so far sealed in requestState.
func (s *Server) inputRequired(r *inputRound) (*InputRequiredResult, error) {
	asks := r.pending()
	r.mu.Lock()
	st := sealedState{Tool: r.tool, Args: r.args, Expires: time.Now().Add(RequestStateTTL).UnixMilli(), Answers: r.answers}
	plain, err := json.Marshal(st)
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("mcpserve: requestState: %w", err)
	}
	nonce := make([]byte, s.stateAEAD.NonceSize(), s.stateAEAD.NonceSize()+len(plain)+s.stateAEAD.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	sealed := s.stateAEAD.Seal(nonce, nonce, plain, stateAAD)
	clear(plain) // the answers in clear are not left for the garbage collector
	return &InputRequiredResult{
		ResultType:    ResultInputRequired,
		InputRequests: asks,
		RequestState:  base64.RawURLEncoding.EncodeToString(sealed),
	}, nil
}

func (s *Server) openState(state string) (*sealedState, error) {
	b, err := base64.RawURLEncoding.DecodeString(state)
	n := s.stateAEAD.NonceSize()
	if err != nil || len(b) < n {
		return nil, fmt.Errorf("malformed")
	}
	plain, err := s.stateAEAD.Open(nil, b[:n], b[n:], stateAAD)
	if err != nil {
		return nil, fmt.Errorf("not issued by this server")
	}
	var st sealedState
	if err := json.Unmarshal(plain, &st); err != nil {
		return nil, fmt.Errorf("malformed")
	}
	return &st, nil
}

// argumentsDigest identifies a call's arguments whatever the order of
// their members or their spacing, as a client may encode them anew.
func argumentsDigest(args json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	canonical := []byte(args)
	if dec.Decode(&v) == nil {
		if b, err := json.Marshal(v); err == nil {
			canonical = b
		}
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// hasCapability reports whether capabilities (a JSON object) has the
// member name.
func hasCapability(capabilities json.RawMessage, name string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(capabilities, &m) != nil {
		return false
	}
	v, ok := m[name]
	return ok && !bytes.Equal(bytes.TrimSpace(v), jsonNull)
}
