package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/mcpserve"
)

// clientCaps remembers, from initialize, whether the client takes form
// elicitation requests.
type clientCaps struct {
	formElicitation atomic.Bool
}

// middleware reads capabilities.elicitation from initialize: present and
// empty ({}, the 2025-06-18 form) or with a "form" member means form mode.
func (c *clientCaps) middleware(next mcpserve.Handler) mcpserve.Handler {
	return func(ctx context.Context, req *mcpserve.Request) (any, error) {
		if req.Method == "initialize" {
			var p struct {
				Capabilities struct {
					Elicitation *map[string]json.RawMessage `json:"elicitation"`
				} `json:"capabilities"`
			}
			if json.Unmarshal(req.Params, &p) == nil && p.Capabilities.Elicitation != nil {
				m := *p.Capabilities.Elicitation
				_, form := m["form"]
				c.formElicitation.Store(len(m) == 0 || form)
			} else {
				c.formElicitation.Store(false)
			}
		}
		return next(ctx, req)
	}
}

// asker obtains a secret from the user. message is the elicitation's text,
// title the masked field's title, and fallback the advice given when the
// client cannot be asked ("set SSH_MCP_KEY_PASSPHRASE", ...).
type asker func(ctx context.Context, message, title, fallback string) (secret, error)

// elicitAsker asks through elicitation/create on behalf of call: a form with
// one masked field, "password". A declined or cancelled form is
// errSignInCancelled; a client without form elicitation is errNoElicitation.
func elicitAsker(caps *clientCaps, call *mcpserve.ToolCall) asker {
	return func(ctx context.Context, message, title, fallback string) (secret, error) {
		if call == nil || !caps.formElicitation.Load() {
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
