package toolpin

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCanonicalJSON: never panics; the canonical form of valid JSON is
// valid JSON with the same canonical form (idempotent), and invalid input
// is refused.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1e2,-0,"\u200b"]}`, `[1E400]`, `{"a":1,"a":2}`, `"\ud800"`, `0.1`, `{"\ufb01":1,"\ud83d\ude00":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := CanonicalJSON(in)
		if err != nil {
			if json.Valid(in) {
				t.Fatalf("valid JSON %q refused: %v", in, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("canonical form %q of %q is not JSON", out, in)
		}
		again, err := CanonicalJSON(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q → %q → %q (%v)", in, out, again, err)
		}
	})
}

// FuzzCanonical: a definition built from arbitrary bytes never panics,
// and decoding its canonical form back into a Definition gives the same
// canonical form when the bytes were JSON.
func FuzzCanonical(f *testing.F) {
	f.Add("add", "Adds.", []byte(`{"type":"object","properties":{"a":{}}}`), []byte(`{"readOnlyHint":true}`))
	f.Add("", "", []byte(`null`), []byte(`{}`))
	f.Add("x", "\u200b", []byte(`{`), []byte(`[1]`))
	f.Add("r\u0435ad_file", "p\u0430ssword", []byte(`{"ui":{"resourceUri":"ui://a"}}`), []byte(`[{"src":"https://a/b.png"}]`))
	f.Fuzz(func(t *testing.T, name, desc string, schema, annotations []byte) {
		def := Definition{Name: name, Description: desc, InputSchema: schema, OutputSchema: schema, Annotations: annotations,
			Icons: annotations, Meta: schema}
		out := Canonical(def)
		_ = Hash(def)
		_ = Check(def)
		_ = Diff(def, Definition{Name: name}).String()
		if !json.Valid(out) {
			t.Fatalf("canonical form %q is not JSON", out)
		}
		if !json.Valid(schema) || !json.Valid(annotations) {
			return
		}
		var back Definition
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		if again := Canonical(back); !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%s\n%s", out, again)
		}
	})
}
