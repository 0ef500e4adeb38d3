// Package schema validates JSON documents against the JSON Schemas a server
// declares: a tool's inputSchema and outputSchema.
//
//	var c schema.Cache // one per host; safe for concurrent use
//	err := c.Validate(tool.InputSchema, args)
//	var m *schema.Mismatch
//	switch {
//	case errors.As(err, &m):
//		// m.Detail: "- at '/a': got string, want integer", one line a failure
//	case errors.Is(err, schema.ErrUnsupportedDialect), errors.Is(err, schema.ErrInvalidSchema):
//		// the schema cannot be used
//	}
//
// A schema is compiled once per distinct content and kept in a bounded
// cache. Its dialect comes from $schema (2020-12, the MCP default, without
// one; 2019-09, draft-07, draft-06 and draft-04 otherwise). Compiling loads
// nothing: a schema may refer only to itself and the bundled meta-schemas,
// never to the network or the host's files. Patterns are Go's RE2; one RE2
// cannot express is not enforced rather than failing the whole schema.
package schema
