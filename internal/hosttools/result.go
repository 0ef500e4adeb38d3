package hosttools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// decodeArgs decodes a tool's arguments strictly: an unknown field is
// named, with the fields the tool takes.
func decodeArgs(args json.RawMessage, v any, fields string) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return fmt.Errorf("field %q: want %s", typeErr.Field, typeErr.Type)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("%s (the fields are %s)", strings.TrimPrefix(err.Error(), "json: "), fields)
		}
		return fmt.Errorf("arguments: %v", err)
	}
	return nil
}

// --- shared -----------------------------------------------------------

// knownServer is nil for a registered server, else an error listing them.
func (ts *Toolset) knownServer(name string) error {
	if name == "" {
		return errors.New("a server name is required")
	}
	var names []string
	for _, st := range ts.rt.Status() {
		if st.Name == name {
			return nil
		}
		names = append(names, st.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("no server is named %q: there are no servers", name)
	}
	return fmt.Errorf("no server is named %q (servers: %s)", name, strings.Join(names, ", "))
}

// awaitSettled waits until server is ready or has failed to come up (its
// first failure, not the end of its retries), or ctx ends, and returns its
// status then.
func (ts *Toolset) awaitSettled(ctx context.Context, server string) actors.ServerStatus {
	for {
		changed := ts.rt.StatusChanged()
		st, ok := ts.rt.ServerStatus(server)
		if !ok {
			return actors.ServerStatus{Name: server, State: actors.StateStopped, LastError: "the server is gone"}
		}
		switch st.State {
		case actors.StateReady, actors.StateBackoff, actors.StateFailed, actors.StateStopped, actors.StateDisabled, actors.StateNeedsAuth:
			return st
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return st
		}
	}
}

// serverOutcome reports a server just registered or enabled: ready with
// its tools, or why not (a tool error, so the model notices).
func (ts *Toolset) serverOutcome(st actors.ServerStatus, done string) json.RawMessage {
	var tools []string
	for _, t := range ts.rt.ToolsOf(nil, func(s string) bool { return s == st.Name }) {
		tools = append(tools, t.Name)
	}
	v := map[string]any{"name": st.Name, "state": st.State, "tools": tools}
	if st.State == actors.StateReady {
		text := fmt.Sprintf("Server %q %s and ready with %d tools: %s. Activate the group %q to call them.",
			st.Name, done, len(tools), strings.Join(tools, ", "), st.Name)
		return structured(text, v, false)
	}
	why := st.LastError
	if why == "" {
		why = "it did not become ready in time"
	}
	v["error"] = why
	text := fmt.Sprintf("Server %q %s but not ready (%s): %s.", st.Name, done, st.State, why)
	if st.State == actors.StateBackoff || st.State == actors.StateStarting || st.State == actors.StateInitializing {
		text += " It keeps retrying; toggle_item disables it, delete_mcp removes it."
	}
	return structured(text, v, true)
}

// structured is a host tool's result: text for the model, and the same as
// structuredContent.
func structured(text string, v any, isError bool) json.RawMessage {
	sc, err := json.Marshal(v)
	if err != nil {
		return toolError("encoding the result: %v", err)
	}
	raw, _ := json.Marshal(protocol.CallToolResult{
		Content:           []protocol.ContentBlock{{Type: protocol.ContentText, Text: text}},
		StructuredContent: sc, IsError: isError,
	})
	return raw
}

// toolError is a failed call's result: its text, for the model.
func toolError(format string, args ...any) json.RawMessage {
	raw, _ := json.Marshal(protocol.CallToolResult{
		Content: []protocol.ContentBlock{{Type: protocol.ContentText, Text: fmt.Sprintf(format, args...)}}, IsError: true})
	return raw
}

// Redact is a host tool's arguments as the call history may keep them:
// register_mcp's api_key and the values of its env and headers replaced.
// Another tool's are returned as they are.
func Redact(tool string, args json.RawMessage) json.RawMessage {
	if tool != Register {
		return args
	}
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	if _, ok := m["api_key"]; ok {
		m["api_key"] = redacted
	}
	for _, field := range []string{"env", "headers"} {
		if obj, ok := m[field].(map[string]any); ok {
			for k := range obj {
				obj[k] = redacted
			}
		}
	}
	b, _ := json.Marshal(m)
	return b
}

const redacted = "(redacted)"
