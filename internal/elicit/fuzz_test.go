package elicit

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse feeds arbitrary params through Parse and, for those it accepts,
// Complete with the defaults and ResultJSON: none may panic, every error is an
// *InvalidError, and the result is JSON.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string","default":"x"},"b":{"type":"integer","minimum":1,"default":2}},"required":["a"]}}`,
		`{"message":"m","requestedSchema":{"type":"object","properties":{"c":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]},"default":["x"]}}}}`,
		`{"message":"m","requestedSchema":{"type":"object","properties":{"e":{"type":"string","enum":["a"],"enumNames":["A"]}}}}`,
		`{"mode":"url","message":"m","url":"https://example.com","elicitationId":"e"}`,
		`{"mode":"url","message":"m","url":"http://[::1]:80/x","elicitationId":"e"}`,
		`{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"object"}}}}`,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		req, err := Parse("s", params)
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v (%T) is not an *InvalidError", err, err)
			}
			return
		}
		content, err := req.Complete(nil)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Complete error %v is not ErrInvalid", err)
			}
			return
		}
		if out := ResultJSON(Response{Action: ActionAccept, Content: content}); !json.Valid(out) {
			t.Fatalf("ResultJSON not JSON: %s", out)
		}
	})
}
