package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/mcpserve"
)

// formElicitation reports whether capabilities (the client's, from
// initialize or a modern request's _meta) take form elicitation requests:
// elicitation present and empty ({}, the 2025-06-18 form) or with a "form"
// member.
func formElicitation(capabilities json.RawMessage) bool {
	var c struct {
		Elicitation *map[string]json.RawMessage `json:"elicitation"`
	}
	if json.Unmarshal(capabilities, &c) != nil || c.Elicitation == nil {
		return false
	}
	m := *c.Elicitation
	_, form := m["form"]
	return len(m) == 0 || form
}

// asker obtains a secret from the user. message is the elicitation's text,
// title the masked field's title, and fallback the advice given when the
// client cannot be asked ("set SSH_MCP_KEY_PASSPHRASE", ...).
type asker func(ctx context.Context, message, title, fallback string) (secret, error)

// elicitAsker asks through elicitation/create on behalf of call: a form with
// one masked field, "password". A declined or cancelled form is
// errSignInCancelled; a client without form elicitation is errNoElicitation.
// With a modern client the ask is an input_required result
// (mcpserve.ErrInputRequired until the client answers): the tool is run
// again with the answer, which is why every ask comes before the side
// effects of a tool (at login, or just before sudo).
func elicitAsker(call *mcpserve.ToolCall) asker {
	return func(ctx context.Context, message, title, fallback string) (secret, error) {
		if call == nil || !formElicitation(call.ClientCapabilities) {
			return secret{}, fmt.Errorf("%s, but %w (it has no form elicitation support); %s", message, errNoElicitation, fallback)
		}
		schema := map[string]any{
			"type": "object",
			"properties": map[string]any{
				"password": map[string]any{"type": "string", "format": "password", "title": title},
			},
			"required": []string{"password"},
		}
		raw, err := call.Call(ctx, "elicitation/create", map[string]any{
			"message":         message,
			"requestedSchema": schema,
		})
		if err != nil {
			if ctx.Err() != nil {
				return secret{}, ctx.Err()
			}
			if errors.Is(err, mcpserve.ErrInputRequired) {
				return secret{}, err
			}
			return secret{}, fmt.Errorf("%s, but asking the client failed: %v", message, err)
		}
		var answer struct {
			Action  string `json:"action"`
			Content struct {
				Password *string `json:"password"`
			} `json:"content"`
		}
		if err := json.Unmarshal(raw, &answer); err != nil {
			return secret{}, fmt.Errorf("malformed elicitation result")
		}
		switch answer.Action {
		case "accept":
			if answer.Content.Password == nil {
				return secret{}, fmt.Errorf("elicitation result has no password")
			}
			return newSecret(*answer.Content.Password), nil
		default: // decline, cancel
			return secret{}, fmt.Errorf("%w (%s)", errSignInCancelled, answer.Action)
		}
	}
}
