package schema

import (
	"fmt"
	"strings"

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

// dialectKey is a $schema without its scheme and empty fragment.
func dialectKey(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(s), "#")
	if rest, ok := strings.CutPrefix(s, "https://"); ok {
		return rest
	}
	return strings.TrimPrefix(s, "http://")
}

// dialectError is ErrUnsupportedDialect naming the dialect.
type dialectError struct{ dialect string }

func (e *dialectError) Error() string {
	return fmt.Sprintf("JSON Schema dialect %q is not supported (2020-12, 2019-09, draft-07, draft-06, draft-04 are)", e.dialect)
}

func (e *dialectError) Is(target error) bool { return target == ErrUnsupportedDialect }
