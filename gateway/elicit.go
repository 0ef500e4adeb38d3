package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Requests to the client: a server's elicitation that belongs to a call the
// client made is forwarded to that client, on the call's own stream, when
// the client declared elicitation (and the mode) at initialize. Otherwise
// it is passed back to the host, whose inbox answers it.

// clientCaps is what the downstream client declared that the gateway uses.
type clientCaps struct {
	elicitForm, elicitURL bool
}

// parseClientCaps reads elicitation's modes: an empty object is form mode
// only, as the spec says for clients of earlier revisions.
func parseClientCaps(c protocol.ClientCapabilities) clientCaps {
	if len(c.Elicitation) == 0 || bytes.Equal(bytes.TrimSpace(c.Elicitation), []byte("null")) {
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

// elicit asks the client and waits for its answer. The host completes and
// validates an accept's content before the server sees it.
func (s *session) elicit(ctx context.Context, send func([]byte), req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
	params := protocol.ElicitRequestParams{Mode: string(req.Mode), Message: req.Message}
	if req.Mode == mcpvisor.ElicitURL {
		params.URL, params.ElicitationID = req.URL, req.ElicitationID
	} else {
		params.RequestedSchema = req.Schema
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return mcpvisor.ElicitationResponse{}, err
	}
	res, err := s.request(ctx, send, protocol.MethodElicitationCreate, raw)
	if err != nil && ctx.Err() != nil {
		// The call ended, or the server gave up: nobody answered.
		return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitCancel}, nil
	}
	if err != nil {
		return mcpvisor.ElicitationResponse{}, err
	}
	var out protocol.ElicitResult
	if err := json.Unmarshal(res, &out); err != nil {
		return mcpvisor.ElicitationResponse{}, fmt.Errorf("gateway: the client's elicitation result: %w", err)
	}
	if err := out.Validate(); err != nil {
		return mcpvisor.ElicitationResponse{}, fmt.Errorf("gateway: the client's elicitation result: %w", err)
	}
	return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitationAction(out.Action), Content: out.Content}, nil
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
