package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/schema"
)

// SchemaError is a document that does not match its schema: a tool's
// arguments against its inputSchema, or its structuredContent against its
// outputSchema.
type SchemaError struct {
	Tool   string // namespaced tool name
	Kind   string // "arguments" or "structuredContent"
	Detail string // one line per failure: "- at '/path': message", nested for anyOf and the like
}

// Schema error kinds.
const (
	SchemaArguments         = "arguments"
	SchemaStructuredContent = "structuredContent"
)

func (e *SchemaError) Error() string {
	switch e.Kind {
	case SchemaArguments:
		return fmt.Sprintf("tool %s: arguments do not match the inputSchema%s", e.Tool, detailSuffix(e.Detail))
	case SchemaStructuredContent:
		return fmt.Sprintf("tool %s: structuredContent does not match the outputSchema%s", e.Tool, detailSuffix(e.Detail))
	}
	return fmt.Sprintf("tool %s: %s does not match its schema%s", e.Tool, e.Kind, detailSuffix(e.Detail))
}

// detailSuffix puts a one-line detail after ": " and a list on lines of
// its own.
func detailSuffix(d string) string {
	if strings.HasPrefix(d, "- ") {
		return ":\n" + d
	}
	return ": " + d
}

// schemaCache is the host's cache of compiled tool schemas, with the
// checks the call pipeline makes against a tool's definition. It is safe
// for concurrent use.
type schemaCache struct{ cache schema.Cache }

// checkOutput validates a result's structuredContent against the tool's
// outputSchema. A tool without one, and a tool error (IsError), pass. The
// spec requires structuredContent from a tool that declares an
// outputSchema, so its absence is a *SchemaError too. An outputSchema that
// cannot be used is ErrUnsupportedDialect or ErrInvalidSchema, wrapped with
// the tool.
func (c *schemaCache) checkOutput(tool *actors.Tool, r *Result) error {
	if !hasSchema(tool.OutputSchema) || r == nil || r.IsError {
		return nil
	}
	if len(r.JSON) == 0 {
		return &SchemaError{Tool: tool.Name, Kind: SchemaStructuredContent, Detail: "structuredContent is missing"}
	}
	err := c.cache.Validate(tool.OutputSchema, r.JSON)
	var m *schema.Mismatch
	switch {
	case err == nil:
		return nil
	case errors.As(err, &m):
		return &SchemaError{Tool: tool.Name, Kind: SchemaStructuredContent, Detail: m.Detail}
	}
	return fmt.Errorf("tool %s: outputSchema: %w", tool.Name, err)
}

// checkArguments validates a call's arguments (nil means {}) against the
// tool's inputSchema before they are sent. It returns nil when they match
// or the tool has no inputSchema, and otherwise a tool error the model can
// read and correct: "invalid arguments for <tool>: <detail>". An
// inputSchema that cannot be used also yields a tool error, naming why:
// the spec asks a client to say so rather than guess.
func (c *schemaCache) checkArguments(tool *actors.Tool, args json.RawMessage) *Result {
	if !hasSchema(tool.InputSchema) {
		return nil
	}
	if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		args = json.RawMessage("{}")
	}
	err := c.cache.Validate(tool.InputSchema, args)
	if err == nil {
		return nil
	}
	var m *schema.Mismatch
	text := fmt.Sprintf("cannot check arguments for %s: inputSchema: %v", tool.Name, err)
	if errors.As(err, &m) {
		text = "invalid arguments for " + tool.Name + detailSuffix(m.Detail)
	}
	return &Result{Type: ResultString, IsError: true, Text: text}
}

// hasSchema reports whether a tool declared a schema.
func hasSchema(s []byte) bool {
	s = bytes.TrimSpace(s)
	return len(s) > 0 && !bytes.Equal(s, []byte("null"))
}
