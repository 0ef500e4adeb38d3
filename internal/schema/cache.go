package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxCached bounds the cache; past it, the cache starts over. A catalog
// has far fewer distinct schemas; only a server changing its schemas on
// every listing would reach it.
const maxCached = 4096

// Cache compiles each distinct schema once and validates documents against
// it. The zero value is ready to use. It is safe for concurrent use; a
// compile runs outside the cache's lock, so a slow schema delays only the
// calls that need it.
type Cache struct {
	mu       sync.Mutex
	entries  map[[sha256.Size]byte]*compiled
	compiles atomic.Int64 // schemas compiled, for tests
}

type compiled struct {
	once   sync.Once
	schema *jsonschema.Schema
	err    error
}

// Validate checks doc against schema, compiling schema on first use. It
// returns nil when doc matches; a *Mismatch when it does not; an error
// wrapping ErrUnsupportedDialect or ErrInvalidSchema for a schema that
// cannot be used (remembered: such a schema fails the same way every
// time); or a plain error for a doc that is not JSON.
func (c *Cache) Validate(schema, doc json.RawMessage) error {
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
		return &Mismatch{Detail: validationDetail(verr)}
	}
	return err
}

// get returns the compiled schema for raw, compiling it on first use.
func (c *Cache) get(raw []byte) (*jsonschema.Schema, error) {
	key := sha256.Sum256(raw)
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= maxCached {
		c.entries = make(map[[sha256.Size]byte]*compiled)
	}
	e, ok := c.entries[key]
	if !ok {
		e = &compiled{}
		c.entries[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		c.compiles.Add(1)
		e.schema, e.err = compile(raw)
	})
	return e.schema, e.err
}
