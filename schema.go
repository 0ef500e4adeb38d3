package mcpvisor

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// dialect is a JSON Schema draft the validator supports.
type dialect struct {
	name  string
	draft *jsonschema.Draft
}

// defaultDialect is that of a schema without $schema, as the MCP spec
// (2025-11-25) says.
var defaultDialect = dialect{"2020-12", jsonschema.Draft2020}

// supportedDialects maps each $schema the validator accepts, without its
// scheme and empty fragment, to its dialect.
var supportedDialects = map[string]dialect{
	"json-schema.org/draft/2020-12/schema": defaultDialect,
	"json-schema.org/draft/2019-09/schema": {"2019-09", jsonschema.Draft2019},
	"json-schema.org/draft-07/schema":      {"draft-07", jsonschema.Draft7},
	"json-schema.org/draft-06/schema":      {"draft-06", jsonschema.Draft6},
	"json-schema.org/draft-04/schema":      {"draft-04", jsonschema.Draft4},
}

// dialectError is ErrUnsupportedDialect naming the dialect.
type dialectError struct{ dialect string }

func (e *dialectError) Error() string {
	return fmt.Sprintf("JSON Schema dialect %q is not supported (2020-12, 2019-09, draft-07, draft-06, draft-04 are)", e.dialect)
}

func (e *dialectError) Is(target error) bool { return target == ErrUnsupportedDialect }

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

// maxSchemaDetail bounds the failures a SchemaError lists.
const maxSchemaDetail = 20

// maxCachedSchemas bounds the cache; past it, the cache starts over. A
// catalog has far fewer distinct schemas; only a server changing its
// schemas on every listing would reach it.
const maxCachedSchemas = 4096

// schemaCache compiles each distinct schema once and validates documents
// against it. It is safe for concurrent use; a compile runs outside the
// cache's lock, so a slow schema delays only the calls that need it.
type schemaCache struct {
	mu       sync.Mutex
	entries  map[[sha256.Size]byte]*compiledSchema
	compiles atomic.Int64 // schemas compiled, for tests
}

type compiledSchema struct {
	once   sync.Once
	schema *jsonschema.Schema
	err    error
}

// get returns the compiled schema for raw, compiling it on first use. A
// schema that fails to compile is remembered too: it fails the same way
// every time.
func (c *schemaCache) get(raw []byte) (*jsonschema.Schema, error) {
	key := sha256.Sum256(raw)
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= maxCachedSchemas {
		c.entries = make(map[[sha256.Size]byte]*compiledSchema)
	}
	e, ok := c.entries[key]
	if !ok {
		e = &compiledSchema{}
		c.entries[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		c.compiles.Add(1)
		e.schema, e.err = compileSchema(raw)
	})
	return e.schema, e.err
}

// schemaBase and schemaURL are where a schema being compiled lives. Its
// relative $refs resolve under schemaBase, to URLs refusedLoader refuses
// like any other.
const (
	schemaBase = "https://mcpvisor.invalid/"
	schemaURL  = schemaBase + "schema.json"
)

// compileSchema compiles one schema in its own compiler (a compiler is not
// safe for concurrent use, and remembers every document it has seen).
func compileSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	d := defaultDialect
	if obj, ok := doc.(map[string]any); ok {
		if v, ok := obj["$schema"]; ok {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%w: $schema is not a string", ErrInvalidSchema)
			}
			if d, ok = supportedDialects[dialectKey(s)]; !ok {
				return nil, &dialectError{s}
			}
		}
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(defaultDialect.draft)
	comp.UseLoader(refusedLoader{})
	comp.UseRegexpEngine(lenientRegexp)
	if err := comp.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	sch, err := comp.Compile(schemaURL)
	if err != nil {
		var merr *jsonschema.SchemaValidationError
		var verr *jsonschema.ValidationError
		if errors.As(err, &merr) && errors.As(merr.Err, &verr) {
			return nil, fmt.Errorf("%w: not valid against the %s meta-schema:\n%s", ErrInvalidSchema, d.name, validationDetail(verr))
		}
		return nil, fmt.Errorf("%w: %s", ErrInvalidSchema, strings.ReplaceAll(err.Error(), schemaBase, ""))
	}
	return sch, nil
}

// dialectKey is a $schema without its scheme and empty fragment.
func dialectKey(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(s), "#")
	if rest, ok := strings.CutPrefix(s, "https://"); ok {
		return rest
	}
	return strings.TrimPrefix(s, "http://")
}

// refusedLoader loads nothing: a server's schema is compiled from its own
// bytes and the library's bundled meta-schemas only, never from the network
// or the host's files.
type refusedLoader struct{}

func (refusedLoader) Load(string) (any, error) {
	return nil, errors.New("not loaded: a schema may refer only to itself and the standard meta-schemas")
}

// lenientRegexp compiles patterns with Go's regexp (RE2). A pattern RE2
// cannot express (ECMA-262 lookaround, backreferences) matches everything
// rather than making the whole schema unusable: the server validates its
// own arguments anyway, and a tool that works elsewhere keeps working here.
func lenientRegexp(pattern string) (jsonschema.Regexp, error) {
	if re, err := regexp.Compile(pattern); err == nil {
		return re, nil
	}
	return anyString(pattern), nil
}

// anyString is a pattern that is not enforced.
type anyString string

func (p anyString) String() string        { return string(p) }
func (anyString) MatchString(string) bool { return true }

// validate checks doc against schema. The error is ErrUnsupportedDialect or
// ErrInvalidSchema (wrapped) for a schema that cannot be used, a
// *SchemaError (without Tool and Kind) for a document that does not match,
// or a plain error for a document that is not JSON.
func (c *schemaCache) validate(schema json.RawMessage, doc json.RawMessage) error {
	sch, err := c.get(schema)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("document is not valid JSON: %v", err)
	}
	err = sch.Validate(v)
	var verr *jsonschema.ValidationError
	if errors.As(err, &verr) {
		return &SchemaError{Detail: validationDetail(verr)}
	}
	return err
}

// validationDetail writes a validation error as the library's tree, one
// failure a line with the instance location it concerns, without the
// library's header line:
//
//   - at '/a': got string, want integer
//   - at (root): 'anyOf' failed
//   - at (root): got boolean, want string
func validationDetail(verr *jsonschema.ValidationError) string {
	lines := strings.Split(verr.Error(), "\n")
	if len(lines) > 1 && strings.HasPrefix(lines[0], "jsonschema validation failed") {
		lines = lines[1:]
	}
	lines = sortTopLevel(lines)
	if len(lines) > maxSchemaDetail {
		lines = append(lines[:maxSchemaDetail], fmt.Sprintf("- and %d more", len(lines)-maxSchemaDetail))
	}
	for i, l := range lines {
		l = strings.Replace(l, "at '':", "at (root):", 1)
		lines[i] = strings.ReplaceAll(l, schemaBase, "")
	}
	return strings.Join(lines, "\n")
}

// sortTopLevel orders the tree's top-level failures, each with the lines
// nested under it: the library reports sibling properties in map order, and
// the same result must always read the same.
func sortTopLevel(lines []string) []string {
	var blocks [][]string
	for _, l := range lines {
		if len(blocks) == 0 || !strings.HasPrefix(l, " ") {
			blocks = append(blocks, nil)
		}
		blocks[len(blocks)-1] = append(blocks[len(blocks)-1], l)
	}
	slices.SortStableFunc(blocks, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	out := make([]string, 0, len(lines))
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out
}

// checkOutput validates a result's structuredContent against the tool's
// outputSchema. A tool without one, and a tool error (IsError), pass. The
// spec requires structuredContent from a tool that declares an
// outputSchema, so its absence is a *SchemaError too. An outputSchema that
// cannot be used is ErrUnsupportedDialect or ErrInvalidSchema, wrapped with
// the tool.
func (c *schemaCache) checkOutput(tool Tool, r *Result) error {
	if !hasSchema(tool.OutputSchema) || r == nil || r.IsError {
		return nil
	}
	if len(r.JSON) == 0 {
		return &SchemaError{Tool: tool.Name, Kind: SchemaStructuredContent, Detail: "structuredContent is missing"}
	}
	err := c.validate(tool.OutputSchema, r.JSON)
	var serr *SchemaError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &serr):
		serr.Tool, serr.Kind = tool.Name, SchemaStructuredContent
		return serr
	}
	return fmt.Errorf("tool %s: outputSchema: %w", tool.Name, err)
}

// checkArguments validates a call's arguments (nil means {}) against the
// tool's inputSchema before they are sent. It returns nil when they match
// or the tool has no inputSchema, and otherwise a tool error the model can
// read and correct: "invalid arguments for <tool>: <detail>". An
// inputSchema that cannot be used also yields a tool error, naming why:
// the spec asks a client to say so rather than guess.
func (c *schemaCache) checkArguments(tool Tool, args json.RawMessage) *Result {
	if !hasSchema(tool.InputSchema) {
		return nil
	}
	if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		args = json.RawMessage("{}")
	}
	err := c.validate(tool.InputSchema, args)
	if err == nil {
		return nil
	}
	var serr *SchemaError
	text := fmt.Sprintf("cannot check arguments for %s: inputSchema: %v", tool.Name, err)
	if errors.As(err, &serr) {
		text = "invalid arguments for " + tool.Name + detailSuffix(serr.Detail)
	}
	return &Result{Type: ResultString, IsError: true, Text: text}
}

// hasSchema reports whether a tool declared a schema.
func hasSchema(s []byte) bool {
	s = bytes.TrimSpace(s)
	return len(s) > 0 && !bytes.Equal(s, []byte("null"))
}
