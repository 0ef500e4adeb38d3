package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidateDialects(t *testing.T) {
	// tuple is valid only where "items" may be an array (draft-07 and
	// older); prefixItems means something only in 2020-12.
	const tuple = `"type":"array","items":[{"type":"integer"}]`
	tests := []struct {
		name, schema, doc string
		wantMismatch      bool
		wantErr           error
	}{
		{"2020-12 by default", `{"type":"array","prefixItems":[{"type":"integer"}]}`, `["x"]`, true, nil},
		{"2020-12 by default, valid", `{"type":"array","prefixItems":[{"type":"integer"}]}`, `[1,"x"]`, false, nil},
		{"2020-12 by default rejects a draft-07 tuple", `{` + tuple + `}`, `["x"]`, false, ErrInvalidSchema},
		{"2020-12 declared", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"integer"}]}`, `["x"]`, true, nil},
		{"draft-07 with #", `{"$schema":"http://json-schema.org/draft-07/schema#",` + tuple + `}`, `["x"]`, true, nil},
		{"draft-07 without #", `{"$schema":"http://json-schema.org/draft-07/schema",` + tuple + `}`, `["x"]`, true, nil},
		{"draft-07 valid", `{"$schema":"http://json-schema.org/draft-07/schema#",` + tuple + `}`, `[1]`, false, nil},
		{"draft-07 ignores prefixItems", `{"$schema":"http://json-schema.org/draft-07/schema#","prefixItems":[{"type":"integer"}]}`, `["x"]`, false, nil},
		{"2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","dependentRequired":{"a":["b"]}}`, `{"a":1}`, true, nil},
		{"draft-06", `{"$schema":"http://json-schema.org/draft-06/schema#","const":1}`, `2`, true, nil},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"number","maximum":3,"exclusiveMaximum":true}`, `3`, true, nil},
		{"unknown dialect", `{"$schema":"https://example.com/my-dialect","type":"object"}`, `{}`, false, ErrUnsupportedDialect},
		{"draft-03", `{"$schema":"http://json-schema.org/draft-03/schema#"}`, `{}`, false, ErrUnsupportedDialect},
		{"$schema not a string", `{"$schema":7}`, `{}`, false, ErrInvalidSchema},
		{"invalid schema", `{"type":12}`, `1`, false, ErrInvalidSchema},
		{"not JSON", `{"type":`, `1`, false, ErrInvalidSchema},
		{"relative $ref", `{"$ref":"other.json"}`, `1`, false, ErrInvalidSchema},
		{"file $ref", `{"$ref":"file:///etc/passwd"}`, `1`, false, ErrInvalidSchema},
		{"meta-schema $ref is bundled", `{"$ref":"https://json-schema.org/draft/2020-12/schema"}`, `{"type":12}`, true, nil},
		{"local $ref", `{"$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`, `{"a":"x"}`, true, nil},
		{"ECMA pattern RE2 cannot compile is not enforced", `{"type":"string","pattern":"^(?!-)"}`, `"-x"`, false, nil},
		{"RE2 pattern is enforced", `{"type":"string","pattern":"^[a-z]+$"}`, `"-x"`, true, nil},
	}
	var c Cache
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Validate(json.RawMessage(tt.schema), json.RawMessage(tt.doc))
			var m *Mismatch
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("Validate = %v, want %v", err, tt.wantErr)
				}
			case tt.wantMismatch:
				if !errors.As(err, &m) {
					t.Errorf("Validate = %v, want a *Mismatch", err)
				}
			case err != nil:
				t.Errorf("Validate = %v, want nil", err)
			}
		})
	}
}

func TestValidateDocumentNotJSON(t *testing.T) {
	var c Cache
	err := c.Validate(json.RawMessage(`{"type":"integer"}`), json.RawMessage(`{`))
	var m *Mismatch
	if err == nil || errors.As(err, &m) || errors.Is(err, ErrInvalidSchema) ||
		!strings.HasPrefix(err.Error(), "document is not valid JSON: ") {
		t.Errorf("Validate = %v, want a plain error about the document", err)
	}
}

func TestValidateErrorMessages(t *testing.T) {
	tests := []struct {
		name, schema, doc string
		want              string
		wantIs            error
	}{
		{"unsupported dialect", `{"$schema":"https://example.com/my-dialect"}`, `{}`,
			`JSON Schema dialect "https://example.com/my-dialect" is not supported (2020-12, 2019-09, draft-07, draft-06, draft-04 are)`,
			ErrUnsupportedDialect},
		{"invalid against the meta-schema", `{"type":"array","items":[{"type":"integer"}]}`, `[]`,
			"invalid JSON Schema: not valid against the 2020-12 meta-schema:\n" +
				"- at (root): 'allOf' failed\n" +
				"  - at '/items': got array, want boolean or object",
			ErrInvalidSchema},
	}
	var c Cache
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Validate(json.RawMessage(tt.schema), json.RawMessage(tt.doc))
			if err == nil {
				t.Fatalf("Validate = nil, want %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("Validate error (-want +got):\n%s", diff)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("Validate = %v, want errors.Is %v", err, tt.wantIs)
			}
		})
	}
}

func TestValidateRemoteRefRefused(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `{"type":"integer"}`)
	}))
	defer srv.Close()

	var c Cache
	for _, schema := range []string{
		fmt.Sprintf(`{"$ref":%q}`, srv.URL+"/int.json"),
		fmt.Sprintf(`{"$schema":%q}`, srv.URL+"/meta.json"),
		fmt.Sprintf(`{"properties":{"a":{"$ref":%q}}}`, srv.URL+"/int.json#/x"),
		fmt.Sprintf(`{"$id":%q,"properties":{"a":{"$ref":"int.json"}}}`, srv.URL+"/root.json"),
	} {
		err := c.Validate(json.RawMessage(schema), json.RawMessage(`{"a":1}`))
		if !errors.Is(err, ErrInvalidSchema) && !errors.Is(err, ErrUnsupportedDialect) {
			t.Errorf("%s: Validate = %v, want a refused schema", schema, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the validator fetched %d remote schemas, want none", n)
	}
}

// props is an object schema whose properties p00, p01, ... are integers,
// and a document giving each of them a string.
func props(n int) (schema, doc json.RawMessage) {
	var ps, vs []string
	for i := range n {
		ps = append(ps, fmt.Sprintf(`"p%02d":{"type":"integer"}`, i))
		vs = append(vs, fmt.Sprintf(`"p%02d":"x"`, i))
	}
	return json.RawMessage(`{"type":"object","properties":{` + strings.Join(ps, ",") + `}}`),
		json.RawMessage(`{` + strings.Join(vs, ",") + `}`)
}

// propLines is the detail lines for properties p<from> to p<to-1>.
func propLines(from, to int) []string {
	var lines []string
	for i := from; i < to; i++ {
		lines = append(lines, fmt.Sprintf("- at '/p%02d': got string, want integer", i))
	}
	return lines
}

func TestMismatchDetail(t *testing.T) {
	schema3, doc3 := props(3)
	schema20, doc20 := props(20)
	schema25, doc25 := props(25)
	tests := []struct {
		name        string
		schema, doc json.RawMessage
		want        []string
	}{
		{"root location", json.RawMessage(`{"type":"object","required":["a"]}`), json.RawMessage(`{}`),
			[]string{"- at (root): missing property 'a'"}},
		{"nested under anyOf", json.RawMessage(`{"anyOf":[{"type":"string"},{"type":"integer"}]}`), json.RawMessage(`true`),
			[]string{
				"- at (root): 'anyOf' failed",
				"  - at (root): got boolean, want string",
				"  - at (root): got boolean, want integer",
			}},
		{"siblings sorted", schema3, doc3, propLines(0, 3)},
		{"20 lines in full", schema20, doc20, propLines(0, 20)},
		{"past 20 lines, a count", schema25, doc25, append(propLines(0, 20), "- and 5 more")},
	}
	var c Cache
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Map order varies from run to run: the detail must not.
			for range 5 {
				err := c.Validate(tt.schema, tt.doc)
				var m *Mismatch
				if !errors.As(err, &m) {
					t.Fatalf("Validate = %v, want a *Mismatch", err)
				}
				if diff := cmp.Diff(tt.want, strings.Split(m.Detail, "\n")); diff != "" {
					t.Fatalf("Detail (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestCacheCompilesOnce(t *testing.T) {
	var c Cache
	a := json.RawMessage(`{"type":"integer"}`)
	b := json.RawMessage(`{"type":"string"}`)
	bad := json.RawMessage(`{"type":12}`)
	for range 5 {
		c.Validate(a, json.RawMessage(`1`))
		c.Validate(b, json.RawMessage(`"s"`))
		c.Validate(bad, json.RawMessage(`1`))
		c.Validate(a, json.RawMessage(`{}`))
	}
	if n := c.compiles.Load(); n != 3 {
		t.Errorf("compiled %d times, want 3 (once per distinct schema, failures included)", n)
	}
}

func TestCacheBounded(t *testing.T) {
	var c Cache
	for i := range maxCached + 1 {
		c.Validate(json.RawMessage(fmt.Sprintf(`{"maximum":%d}`, i)), json.RawMessage(`0`))
	}
	c.mu.Lock()
	n := len(c.entries)
	c.mu.Unlock()
	if n != 1 {
		t.Errorf("%d schemas cached after %d distinct ones, want 1 (the cache starts over past %d)", n, maxCached+1, maxCached)
	}
}

func TestCacheConcurrent(t *testing.T) {
	var c Cache
	schemas := make([]json.RawMessage, 4)
	for i := range schemas {
		schemas[i] = json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"n":{"type":"integer","maximum":%d}}}`, i))
	}
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k := (g + i) % len(schemas)
				// n == k is valid, n == k+1 is over the maximum.
				if c.Validate(schemas[k], json.RawMessage(fmt.Sprintf(`{"n":%d}`, k))) != nil {
					wrong.Add(1)
				}
				var m *Mismatch
				if !errors.As(c.Validate(schemas[k], json.RawMessage(fmt.Sprintf(`{"n":%d}`, k+1))), &m) ||
					!strings.Contains(m.Detail, "/n") {
					wrong.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := wrong.Load(); n != 0 {
		t.Errorf("%d wrong verdicts under concurrent use", n)
	}
	if n := c.compiles.Load(); n != int64(len(schemas)) {
		t.Errorf("compiled %d times, want %d", n, len(schemas))
	}
}
