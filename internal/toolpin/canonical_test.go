package toolpin

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"key order", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"nested key order", `{"z":{"y":[{"b":true,"a":null}],"x":"s"},"a":[]}`, `{"a":[],"z":{"x":"s","y":[{"a":null,"b":true}]}}`},
		{"whitespace", " {\n\t\"a\" : [ 1 , 2 ]\r\n} ", `{"a":[1,2]}`},
		{"utf16 key order", `{"\ud83d\ude00":1,"\ufb01":2,"a":3}`, "{\"a\":3,\"\U0001F600\":1,\"\uFB01\":2}"},
		{"unicode escapes decoded", `{"a":"\u00e9\u4e2d\ud83d\ude00"}`, "{\"a\":\"é中\U0001F600\"}"},
		{"minimal escapes", `{"a":"\"\\\/\b\f\n\r\t\u0001\u001f\u007f\u2028<>&"}`, "{\"a\":\"\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\u007f\u2028<>&\"}"},
		{"invisible kept", `"a\u200bb"`, "\"a\u200bb\""},
		{"integers", `[0,-0,1,-1,10,1e2,1E+2,100.0]`, `[0,0,1,-1,10,100,100,100]`},
		{"fractions", `[0.5,1.25,-0.0001,1.5e-7,0.000001,3.14159]`, `[0.5,1.25,-0.0001,1.5e-7,0.000001,3.14159]`},
		{"large", `[1e21,1e20,123456789012345678901234,9007199254740993]`, `[1e+21,100000000000000000000,1.2345678901234569e+23,9007199254740992]`},
		{"shortest round trip", `[0.1,0.30000000000000004,5e-324,1.7976931348623157e308]`, `[0.1,0.30000000000000004,5e-324,1.7976931348623157e+308]`},
		{"out of range kept as written", `[1E400,-1e999]`, `[1e400,-1e999]`},
		{"duplicate keys kept in order", `{"b":1,"a":2,"b":3}`, `{"a":2,"b":1,"b":3}`},
		{"scalars", `true`, `true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalJSON([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("CanonicalJSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
			again, err := CanonicalJSON(got)
			if err != nil || string(again) != string(got) {
				t.Errorf("not idempotent: %s → %s (%v)", got, again, err)
			}
		})
	}
}

// RFC 8785 appendix B's number examples.
func TestCanonicalNumberRFC8785(t *testing.T) {
	for lit, want := range map[string]string{
		"4.50":                  "4.5",
		"2e-3":                  "0.002",
		"0.000001":              "0.000001",
		"0.0000001":             "1e-7",
		"1e+30":                 "1e+30",
		"333333333.33333329":    "333333333.3333333",
		"1E30":                  "1e+30",
		"-5e-324":               "-5e-324",
		"295147905179352830000": "295147905179352830000",
		"9.999999999999997e+22": "9.999999999999997e+22",
	} {
		if got := canonicalNumber(lit); got != want {
			t.Errorf("canonicalNumber(%s) = %s, want %s", lit, got, want)
		}
	}
}

func TestCanonicalJSONInvalid(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a":1,}`, `{} {}`, `[1] x`, `{1:2}`, `nul`, `"\x01"`} {
		if _, err := CanonicalJSON([]byte(in)); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("CanonicalJSON(%q) error = %v, want ErrInvalidJSON", in, err)
		}
	}
}

func TestCanonicalMatchesEncodingJSON(t *testing.T) {
	// Without duplicates, the canonical form decodes to what the input does.
	in := `{"b":[1,2.5,{"y":"\u00e9","x":null}],"a":{"c":"d"}}`
	out, err := CanonicalJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("decoded differently: %s vs %s", ja, jb)
	}
}
