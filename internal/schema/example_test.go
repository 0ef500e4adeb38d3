package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpvisor/mcpvisor/internal/schema"
)

func ExampleCache_Validate() {
	var c schema.Cache
	inputSchema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a","b"]}`)

	fmt.Println(c.Validate(inputSchema, json.RawMessage(`{"a":1,"b":2}`)))

	var m *schema.Mismatch
	if err := c.Validate(inputSchema, json.RawMessage(`{"a":"1"}`)); errors.As(err, &m) {
		fmt.Println(m.Detail)
	}

	err := c.Validate(json.RawMessage(`{"$schema":"http://json-schema.org/draft-03/schema#"}`), json.RawMessage(`{}`))
	fmt.Println(errors.Is(err, schema.ErrUnsupportedDialect))
	// Output:
	// <nil>
	// - at (root): missing property 'b'
	// - at '/a': got string, want integer
	// true
}
