package sidecar

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckStrict(t *testing.T) {
	for _, tc := range []struct {
		in, err string // err: "" for none, else a part of the message
	}{
		{`{"tool":"a"}`, ""},
		{` {"a":1} ` + "\n", ""},
		{`{"a":{"b":1},"b":{"b":2},"c":[{"b":1},{"b":2}]}`, ""},
		{`[1,2,{"a":1}]`, ""},
		{`"x"`, ""},
		{`{}`, ""},
		{`{"tool":"a","tool":"b"}`, `key "tool" is given more than once in the top-level object`},
		{`{"a":1,"\u0061":2}`, `key "a" is given more than once`},
		{`{"arguments":{"x":1,"y":{},"x":2}}`, `key "x" is given more than once in the object at arguments`},
		{`{"arguments":{"items":[{},{"k":1,"k":1}]}}`, `in the object at arguments.items[1]`},
		{`[[{"a":[]}],{"a":1,"a":2}]`, `in the object at [1]`},
		{`{"tool":"a"} {"tool":"b"}`, "trailing data after the JSON value, at byte 12"},
		{`{"tool":"a"}x`, "trailing data"},
		{`{"tool":"a"`, "not valid JSON"},
		{``, "empty"},
		{`   `, "empty"},
	} {
		_, err := checkStrict([]byte(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: err %v, want it to say %q", tc.in, err, tc.err)
		}
	}
}

// FuzzCheckStrict: what checkStrict accepts is one valid JSON value, with
// nothing but blanks after it, that decodeStrict decodes.
func FuzzCheckStrict(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `[{"a":{"b":[1,{"c":1,"c":2}]}}]`, `{"a":1} 2`, `"\u0061"`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		end, err := checkStrict(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if strings.TrimSpace(string(data[end:])) != "" {
			t.Fatalf("accepted trailing data %q", data[end:])
		}
		var v any
		if err := decodeStrict(data, &v); err != nil {
			t.Fatalf("decodeStrict refused what checkStrict accepted: %v", err)
		}
	})
}
