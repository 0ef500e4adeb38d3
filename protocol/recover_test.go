package protocol

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// deep is a response whose result is nested levels deep.
func deep(levels int, idLast bool) string {
	result := strings.Repeat("[", levels) + strings.Repeat("]", levels)
	if idLast {
		return `{"result":` + result + `,"jsonrpc":"2.0","id":7}`
	}
	return `{"jsonrpc":"2.0","id":7,"result":` + result + `}`
}

// A frame that is not JSON is rejected with what is wrong and where, so
// that the call it answered fails with a reason a person can act on.
func TestClassifySyntaxReasons(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		want  string
	}{
		{"invalid utf-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\xff\xfe}", "malformed json: invalid utf-8 at offset 33"},
		{"latin-1 key", "{\"jsonrpc\":\"2.0\",\"id\":1,\xe9:1}", "malformed json: invalid utf-8 at offset 24"},
		{"other character", `{"jsonrpc":"2.0","id":1,"result":é}`, "malformed json: unexpected character at offset 33"},
		{"nested 100,000 deep", deep(100000, false), "malformed json: nested deeper than 10000 levels at offset 10032"},
		{"nested 100,000 deep, id last", deep(100000, true), "malformed json: nested deeper than 10000 levels at offset 10009"},
		{"truncated", `{"jsonrpc":"2.0","id":1,"result":{"content":[`, "malformed json: truncated: the frame ends inside a value after 45 bytes"},
		{"truncated in a string", `{"jsonrpc":"2.0","id":1,"result":{"text":"abc`, "truncated: the frame ends inside a value after 45 bytes"},
		{"truncated after a member", `{"jsonrpc":"2.0","id":1`, "truncated: the frame ends inside a value after 23 bytes"},
		{"control character", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"a\tb\"}", "malformed json: control character 0x09 at offset 35"},
		{"log line in braces", `{INFO} started`, `malformed json: unexpected 'I' at offset 1`},
		{"trailing comma", `{"jsonrpc":"2.0","id":1,"result":{},}`, `malformed json: unexpected '}' at offset 36`},
		{"bracket in key position", `{"jsonrpc":"2.0",{"id":1}}`, `malformed json: unexpected '{' at offset 17`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The error's offset shows where Classify stopped (a frame nested
			// 100,000 deep is refused at 10,000 levels); its speed is
			// BenchmarkClassify*'s, not a wall-clock bound here.
			_, err := Classify([]byte(tt.frame))
			if !errors.Is(err, ErrInvalidMessage) || !strings.HasSuffix(err.Error(), tt.want) {
				t.Fatalf("Classify error = %v, want ErrInvalidMessage ending %q", err, tt.want)
			}
		})
	}
}

func TestRecoverID(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		want  string // "" means nil
	}{
		{"invalid utf-8, id first", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\xff}", `1`},
		{"invalid utf-8, id last", "{\"result\":\xff,\"jsonrpc\":\"2.0\",\"id\":2}", `2`},
		{"nested too deep, id first", deep(100000, false), `7`},
		{"nested too deep, id last", deep(100000, true), `7`},
		{"truncated, id first", `{"jsonrpc":"2.0","id":"c-3","result":{"content":[{"type":"text","te`, `"c-3"`},
		{"truncated, id last", `{"result":{"content":[{"type":"text","te`, ``},
		// Cut just after a nested object with an id of its own: the tail
		// looks like a frame that ends with "id":5, but the brackets do not
		// close, so it is not read.
		{"truncated after a nested id", `{"result":{"items":[{"name":"a","id":5}`, ``},
		{"truncated after a nested id, string cut", `{"result":{"text":"}","id":5}`, ``},
		{"valid json, not json-rpc", `{"jsonrpc":"1.0","id":4,"result":{}}`, `4`},
		{"no outcome", `{"jsonrpc":"2.0","id":4}`, `4`},
		{"error not an object", `{"jsonrpc":"2.0","id":4,"error":"boom"}`, `4`},
		{"id last after a bad value", `{"result":01,"jsonrpc":"2.0","id":8}`, `8`},
		{"a request is not an answer", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sampling/createMessage\",\"params\":\xff}", ``},
		{"a request with id last", `{"method":"ping","params":{"a":[}},"jsonrpc":"2.0","id":3}`, ``},
		{"a banner with braces", `Loaded config {"id":5}`, ``},
		{"a banner ending in braces", `{"id":5} loaded`, `5`},
		{"null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"`, ``},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"result":]`, ``},
		{"empty", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Classify([]byte(tt.frame)); err == nil {
				t.Fatalf("Classify accepted %q", tt.frame)
			}
			got := RecoverID([]byte(tt.frame))
			if string(got) != tt.want || (tt.want == "") != (got == nil) {
				t.Errorf("RecoverID = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzRecoverID checks RecoverID on any frame: it returns nil or a string
// or number id; on a frame Classify accepts it agrees with Classify (a
// response's id, nothing for a request or a notification); and on any
// prefix of a response, a frame cut short, it returns the response's id or
// nil, never another value (a nested "id" is never taken for the frame's).
// More seeds live in testdata/fuzz/FuzzRecoverID.
func FuzzRecoverID(f *testing.F) {
	for _, s := range classifySeeds {
		f.Add([]byte(s), uint16(0))
	}
	for _, s := range []string{
		`{"result":{"items":[{"name":"a","id":5}]},"jsonrpc":"2.0","id":9}`,
		`{"jsonrpc":"2.0","id":9,"result":{"items":[{"id":5,"s":"}\"]"}]}}`,
		deep(200, true),
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\xff}",
		`{"jsonrpc":"2.0","id":3,"method":"x","params":{"id":4}}`,
	} {
		f.Add([]byte(s), uint16(40))
	}
	f.Fuzz(func(t *testing.T, frame []byte, cut uint16) {
		id := RecoverID(frame)
		if id != nil && (!json.Valid(id) || scalarID(id) == nil) {
			t.Fatalf("RecoverID(%q) = %q, not a string or number", frame, id)
		}
		msg, err := Classify(frame)
		if err != nil {
			return
		}
		want := json.RawMessage(nil)
		if msg.Kind == KindResponse && msg.ID != nil && !isNull(msg.ID) {
			want = msg.ID
		}
		if msg.Kind == KindResponse && string(id) != string(want) {
			t.Fatalf("RecoverID(%q) = %q, Classify's id %q", frame, id, want)
		}
		if msg.Kind != KindResponse && id != nil {
			t.Fatalf("RecoverID(%q) = %q for a %v", frame, id, msg.Kind)
		}
		if want == nil || len(frame) == 0 {
			return
		}
		prefix := frame[:int(cut)%len(frame)]
		if got := RecoverID(prefix); got != nil && string(got) != string(want) {
			t.Fatalf("RecoverID(%q), a prefix of a response with id %s, = %s", prefix, want, got)
		}
	})
}
