package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Requests to the client: a server's elicitation that belongs to a call the
// client made is forwarded to that client, on the call's own stream, when
// the client declared elicitation (and the mode) at initialize. Otherwise
// it is passed back to the host, whose inbox answers it.

// maxURLElicitations bounds the URL elicitations a session remembers for
// their completion notice.
const maxURLElicitations = 256

// clientCaps is what the downstream client declared that the gateway uses.
type clientCaps struct {
	elicitForm, elicitURL bool
	sampling              bool
	roots                 bool
}

// parseClientCaps reads sampling, roots, and elicitation's modes: an empty
// object is form mode only, as the spec says for clients of earlier
// revisions.
func parseClientCaps(c protocol.ClientCapabilities) clientCaps {
	caps := parseElicitation(c)
	caps.sampling = declared(c.Sampling)
	caps.roots = c.Roots != nil
	return caps
}

// declared reports whether a capability is present (an object, not null).
func declared(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func parseElicitation(c protocol.ClientCapabilities) clientCaps {
	if !declared(c.Elicitation) {
		return clientCaps{}
	}
	var modes struct {
		Form *json.RawMessage `json:"form"`
		URL  *json.RawMessage `json:"url"`
	}
	if json.Unmarshal(c.Elicitation, &modes) != nil {
		return clientCaps{}
	}
	if modes.Form == nil && modes.URL == nil {
		return clientCaps{elicitForm: true}
	}
	return clientCaps{elicitForm: modes.Form != nil, elicitURL: modes.URL != nil}
}

// elicitHandler returns the call's elicitation handler, or nil when the
// client cannot be asked (it declared no elicitation, or the call has no
// stream to ask on).
func (s *session) elicitHandler(send func([]byte)) mcpvisor.ElicitationHandler {
	caps := s.clientCaps()
	if send == nil || (!caps.elicitForm && !caps.elicitURL) {
		return nil
	}
	return func(ctx context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
		if (req.Mode == mcpvisor.ElicitURL && !caps.elicitURL) || (req.Mode == mcpvisor.ElicitForm && !caps.elicitForm) {
			return mcpvisor.ElicitationResponse{}, mcpvisor.ErrElicitationPassed
		}
		return s.elicit(ctx, send, req)
	}
}

// sampleHandler returns the call's sampling handler: the server's
// sampling/createMessage forwarded to the client on the call's stream, or
// nil when the client did not declare sampling or the call has no stream.
func (s *session) sampleHandler(send func([]byte)) mcpvisor.SamplingHandler {
	if send == nil || !s.clientCaps().sampling {
		return nil
	}
	return func(ctx context.Context, _ string, req *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
		params, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		return requestResult[protocol.CreateMessageResult](ctx, s, send, protocol.MethodSamplingCreateMessage, params)
	}
}

// rootsHandler returns the call's roots: the server's roots/list forwarded
// to the client on the call's stream, or nil when the client did not
// declare roots or the call has no stream (the host's roots answer).
func (s *session) rootsHandler(send func([]byte)) mcpvisor.RootsProvider {
	if send == nil || !s.clientCaps().roots {
		return nil
	}
	return func(ctx context.Context, _ string) ([]protocol.Root, error) {
		res, err := requestResult[protocol.ListRootsResult](ctx, s, send, protocol.MethodRootsList, nil)
		if err != nil {
			return nil, err
		}
		return res.Roots, nil
	}
}

// approveWithClient is a host-tool call's approval by the person at the
// client (Options.ApproveWithClient): calls that change nothing pass; the
// others are asked as a form with no fields, where accept allows.
func (s *session) approveWithClient(send func([]byte)) mcpvisor.ApprovalFunc {
	return func(ctx context.Context, req *mcpvisor.ApprovalRequest) (mcpvisor.ApprovalDecision, error) {
		if !req.Changes {
			return mcpvisor.ApprovalDecision{Allow: true}, nil
		}
		if send == nil || !s.clientCaps().elicitForm {
			return mcpvisor.ApprovalDecision{Reason: "this client cannot ask its user (it declared no form elicitation, or did not accept a stream for the call)"}, nil
		}
		resp, err := s.elicit(ctx, send, &mcpvisor.ElicitationRequest{Mode: mcpvisor.ElicitForm,
			Message: approvalMessage(req), Schema: json.RawMessage(`{"type":"object","properties":{}}`)})
		if err != nil {
			return mcpvisor.ApprovalDecision{}, err
		}
		switch resp.Action {
		case mcpvisor.ElicitAccept:
			return mcpvisor.ApprovalDecision{Allow: true}, nil
		case mcpvisor.ElicitDecline:
			return mcpvisor.ApprovalDecision{Reason: "the user declined"}, nil
		}
		return mcpvisor.ApprovalDecision{Reason: "the user did not answer"}, nil
	}
}

// approvalMessage is what the person reads: the summary, and a stdio
// registration's command line one argument a line, quoted so that every
// argument's bounds and any invisible character show.
func approvalMessage(req *mcpvisor.ApprovalRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Allow the model to %s?\n%s.", strings.ReplaceAll(req.Tool, "_", " "), req.Summary)
	if len(req.Command) > 0 {
		b.WriteString("\nThe command it will run, one argument a line:")
		for i, a := range req.Command {
			fmt.Fprintf(&b, "\n  [%d] %s", i, strconv.QuoteToGraphic(a))
		}
	}
	if req.Destructive {
		b.WriteString("\nThis cannot be undone.")
	}
	b.WriteString("\nAccept to allow, decline to refuse.")
	return b.String()
}

// elicit asks the client and waits for its answer. The host completes and
// validates an accept's content before the server sees it.
func (s *session) elicit(ctx context.Context, send func([]byte), req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
	params := protocol.ElicitRequestParams{Mode: string(req.Mode), Message: req.Message}
	if req.Mode == mcpvisor.ElicitURL {
		params.URL, params.ElicitationID = req.URL, req.ElicitationID
		// Its completion, when the server sends one, is forwarded.
		s.mu.Lock()
		if s.urls == nil {
			s.urls = map[string]string{}
		}
		if len(s.urls) < maxURLElicitations {
			s.urls[req.ElicitationID] = req.Server
		}
		s.mu.Unlock()
	} else {
		params.RequestedSchema = req.Schema
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return mcpvisor.ElicitationResponse{}, err
	}
	out, err := requestResult[protocol.ElicitResult](ctx, s, send, protocol.MethodElicitationCreate, raw)
	if err != nil && ctx.Err() != nil {
		// The call ended, or the server gave up: nobody answered.
		return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitCancel}, nil
	}
	if err != nil {
		return mcpvisor.ElicitationResponse{}, err
	}
	if err := out.Validate(); err != nil {
		return mcpvisor.ElicitationResponse{}, fmt.Errorf("gateway: the client's elicitation result: %w", err)
	}
	return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitationAction(out.Action), Content: out.Content}, nil
}

// requestResult is request's result decoded as T; the client's JSON-RPC
// error passes through as it is.
func requestResult[T any](ctx context.Context, s *session, send func([]byte), method string, params json.RawMessage) (*T, error) {
	raw, err := s.request(ctx, send, method, params)
	if err != nil {
		return nil, err
	}
	var res T
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("gateway: the client's %s result: %w", method, err)
	}
	return &res, nil
}

// request sends the client a request and waits for its response. If ctx
// ends first, the client is sent notifications/cancelled.
func (s *session) request(ctx context.Context, send func([]byte), method string, params json.RawMessage) (json.RawMessage, error) {
	id := s.nextOut.Add(1)
	key := strconv.FormatInt(id, 10)
	ch := make(chan protocol.Message, 1)
	s.mu.Lock()
	s.outbound[key] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.outbound, key)
		s.mu.Unlock()
	}()
	send(protocol.AppendRequest(nil, id, method, params))
	select {
	case msg := <-ch:
		if msg.Error != nil {
			return nil, msg.Error
		}
		return msg.Result, nil
	case <-ctx.Done():
		cancelled, _ := json.Marshal(protocol.CancelledParams{RequestID: json.RawMessage(key), Reason: "the request was cancelled upstream"})
		send(protocol.AppendNotification(nil, protocol.MethodCancelled, cancelled))
		return nil, ctx.Err()
	}
}

// deliver hands the client's response to the request waiting for it;
// responses to unknown ids are dropped.
func (s *session) deliver(msg protocol.Message) {
	s.mu.Lock()
	ch := s.outbound[string(bytes.TrimSpace(msg.ID))]
	s.mu.Unlock()
	if ch != nil {
		select {
		case ch <- msg:
		default: // a duplicate response
		}
	}
}
