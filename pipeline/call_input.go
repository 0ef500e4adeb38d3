package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/tracing"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Multi round-trip requests (2026-07-28, SEP-2322). A modern server that
// needs something of the client during a tools/call, prompts/get or
// resources/read answers with resultType "input_required": requests
// (elicitation, sampling, roots) for the client to fulfil, and an opaque
// requestState. The host fulfils them with the same handlers that answer a
// legacy server's own requests, then sends the original request again, with
// a new id, the answers under the same keys and requestState as it came.
// The server may ask again; the rounds are bounded.

// DefaultMaxInputRounds bounds the rounds of one request
// (Options.MaxInputRounds).
const DefaultMaxInputRounds = 16

// inputStage runs a request's rounds: a tools/call's, or those of the other
// methods a server may answer with input_required (inputMethods). Each
// round is a request of its own, with its own timeout: the time a person
// takes to answer is not the server's, so no call timeout runs while they
// do.
func (p *Pipeline) inputStage(next Func) Func {
	return func(ctx context.Context, c *Call) (*Result, error) {
		if r := c.Options.Resume; len(r) > 0 {
			input, err := resumeMembers(r)
			if err != nil {
				return nil, err
			}
			c.input = input
		}
		for round := 1; ; round++ {
			res, err := next(ctx, c)
			if err != nil || res != nil || !protocol.IsInputRequired(c.raw) || !c.ToolCall() && !TakesInput(c.Method) {
				return res, err
			}
			if c.Options.PassInput {
				return &Result{Type: ResultString, Raw: c.raw, InputRequired: true}, nil
			}
			rctx, span := tracing.Child(ctx, "input round "+strconv.Itoa(round))
			c.input, err = p.inputRound(rctx, c.Server, c.raw, round)
			tracing.End(span, errorType(err))
			if err != nil {
				if c.ToolCall() {
					err = fmt.Errorf("%s: %w", c.Tool, err)
				}
				return nil, err // another method's is worded by its caller (opError)
			}
		}
	}
}

// inputRound fulfils the input requests of one input_required result and
// returns the members the retry carries: inputResponses and requestState
// (byte for byte as the server wrote it).
func (p *Pipeline) inputRound(ctx context.Context, server string, raw json.RawMessage, round int) (json.RawMessage, error) {
	max := p.cfg.MaxInputRounds
	if max <= 0 {
		max = DefaultMaxInputRounds
	}
	if round > max {
		return nil, fmt.Errorf("%w: the server still asks for input after %d rounds", ErrInputRounds, max)
	}
	var r protocol.InputRequiredResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("malformed input_required result: %w", err)
	}
	if len(r.InputRequests) == 0 && len(r.RequestState) == 0 {
		return nil, errors.New("the server asked for input without inputRequests or requestState")
	}
	responses := make(map[string]json.RawMessage, len(r.InputRequests))
	keys := make([]string, 0, len(r.InputRequests))
	for k := range r.InputRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys) // a person sees the questions in a stable order
	for _, key := range keys {
		req := r.InputRequests[key]
		if p.cfg.Flows == nil {
			continue
		}
		res, err := p.cfg.Flows.Fulfil(ctx, server, req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w: %w", actors.ErrCancelled, ctx.Err())
			}
			// Left out: the server asks again or says what is missing.
			p.cfg.Logger.Warn("input request not fulfilled", "server", server, "key", key, "method", req.Method, "err", err)
			continue
		}
		responses[key] = res
	}
	out := []byte{}
	if len(r.InputRequests) > 0 {
		b, err := json.Marshal(responses)
		if err != nil {
			return nil, err
		}
		out = append(append(out, `"inputResponses":`...), b...)
	}
	if len(r.RequestState) > 0 {
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = append(append(out, `"requestState":`...), r.RequestState...)
	}
	return out, nil
}

// resumeMembers returns the members of a client's retry that answer an
// input_required result (CallOptions.Resume): inputResponses and
// requestState, byte for byte; other members are left out.
func resumeMembers(resume json.RawMessage) (json.RawMessage, error) {
	var r struct {
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   json.RawMessage `json:"requestState"`
	}
	if err := json.Unmarshal(resume, &r); err != nil {
		return nil, &protocol.Error{Code: protocol.CodeInvalidParams, Message: "the retry's inputResponses or requestState: " + err.Error()}
	}
	var out []byte
	if len(r.InputResponses) > 0 {
		out = append(append(out, `"inputResponses":`...), r.InputResponses...)
	}
	if len(r.RequestState) > 0 {
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = append(append(out, `"requestState":`...), r.RequestState...)
	}
	return out, nil
}

// withInput returns a request's params with one round's members added.
func withInput(params, input json.RawMessage) json.RawMessage {
	if len(input) == 0 {
		return params
	}
	params = bytes.TrimSpace(params)
	if len(params) < 2 || params[len(params)-1] != '}' {
		return append(append([]byte{'{'}, input...), '}')
	}
	body := bytes.TrimSpace(params[:len(params)-1])
	out := make([]byte, 0, len(params)+len(input)+1)
	out = append(out, body...)
	if len(body) > 1 { // not just "{"
		out = append(out, ',')
	}
	out = append(out, input...)
	return append(out, '}')
}

// TakesInput reports whether a server may answer a request of method,
// besides tools/call, with input_required (SEP-2322): prompts/get and
// resources/read.
func TakesInput(method string) bool {
	return method == protocol.MethodPromptsGet || method == protocol.MethodResourcesRead
}
