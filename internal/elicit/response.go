package elicit

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
)

// Response is the answer to an elicitation: the ElicitResult before encoding.
//
// Content holds what the person entered, possibly secrets. String, GoString
// and LogValue show only the action and the field names, so a Response passed
// to fmt or slog never reveals a value; only ResultJSON encodes the content.
type Response struct {
	Action Action
	// Content is the form's answer, keyed by field name (accept in form mode
	// only). Values are string, float64, int64, bool or []string.
	Content map[string]any
}

// fieldNames returns the content's keys, sorted.
func (r Response) fieldNames() []string {
	names := make([]string, 0, len(r.Content))
	for k := range r.Content {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// String returns the action and the names of the fields answered, e.g.
// "accept [age name]"; never their values.
func (r Response) String() string {
	if len(r.Content) == 0 {
		return string(r.Action)
	}
	return string(r.Action) + " [" + strings.Join(r.fieldNames(), " ") + "]"
}

// GoString is String, so that %#v does not print the content either.
func (r Response) GoString() string { return r.String() }

// LogValue logs the action and the field names; never their values.
func (r Response) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("action", string(r.Action))}
	if len(r.Content) > 0 {
		attrs = append(attrs, slog.Any("fields", r.fieldNames()))
	}
	return slog.GroupValue(attrs...)
}

// ResultJSON encodes resp as an ElicitResult, {"action":...,"content":{...}},
// with content only for an accept that carries some. A reply must go out
// whatever happens, so an invalid action, or content that does not encode,
// yields {"action":"cancel"}.
func ResultJSON(resp Response) json.RawMessage {
	cancel := json.RawMessage(`{"action":"cancel"}`)
	if !resp.Action.Valid() {
		return cancel
	}
	result := struct {
		Action  Action         `json:"action"`
		Content map[string]any `json:"content,omitempty"`
	}{Action: resp.Action}
	if resp.Action == ActionAccept {
		result.Content = resp.Content
	}
	b, err := json.Marshal(result)
	if err != nil {
		return cancel
	}
	return b
}

// Handler answers an elicitation: an embedder's own UI, or a Broker's Handle.
// It may block until the person answers, and returns early with a cancel when
// ctx ends. A non-nil error means no answer could be had; the host then
// replies with a JSON-RPC error (-32602 for an *InvalidError).
type Handler func(ctx context.Context, req *Request) (Response, error)
