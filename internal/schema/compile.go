package schema

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaBase and schemaURL are where a schema being compiled lives. Its
// relative $refs resolve under schemaBase, to URLs refusedLoader refuses
// like any other.
const (
	schemaBase = "https://mcpvisor.invalid/"
	schemaURL  = schemaBase + "schema.json"
)

// compile compiles one schema in its own compiler (a compiler is not safe
// for concurrent use, and remembers every document it has seen).
func compile(raw []byte) (*jsonschema.Schema, error) {
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
