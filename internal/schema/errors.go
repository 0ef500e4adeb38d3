package schema

import "errors"

// Sentinel errors, for a schema that cannot be used; they arrive wrapped
// with the reason. A document that does not match a usable schema is a
// *Mismatch instead.
var (
	// ErrUnsupportedDialect: the schema's $schema names a dialect other
	// than 2020-12 (the default), 2019-09, draft-07, draft-06 and draft-04.
	ErrUnsupportedDialect = errors.New("unsupported JSON Schema dialect")
	// ErrInvalidSchema: the schema is not JSON, is not valid in its
	// dialect, or refers to a document other than itself and the bundled
	// meta-schemas.
	ErrInvalidSchema = errors.New("invalid JSON Schema")
)
