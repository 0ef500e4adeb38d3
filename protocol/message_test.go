package protocol

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		want  Message
		err   string // substring of the error; "" means success
	}{
		{
			name:  "result response",
			frame: `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
			want:  Message{Kind: KindResponse, ID: raw(`1`), Result: raw(`{"content":[]}`)},
		},
		{
			name:  "members in any order, id last",
			frame: `{"result":{"a":[1,{"b":null}]},"jsonrpc":"2.0","id":42}`,
			want:  Message{Kind: KindResponse, ID: raw(`42`), Result: raw(`{"a":[1,{"b":null}]}`)},
		},
		{
			name:  "whitespace everywhere",
			frame: " \t{ \"jsonrpc\" : \"2.0\" ,\r\n \"id\" : 3 , \"result\" : [ ] } \r\n",
			want:  Message{Kind: KindResponse, ID: raw(`3`), Result: raw(`[ ]`)},
		},
		{
			name:  "string id",
			frame: `{"jsonrpc":"2.0","id":"abc-1","result":{}}`,
			want:  Message{Kind: KindResponse, ID: raw(`"abc-1"`), Result: raw(`{}`)},
		},
		{
			name:  "negative and fractional ids are numbers",
			frame: `{"jsonrpc":"2.0","id":-1.5e3,"result":{}}`,
			want:  Message{Kind: KindResponse, ID: raw(`-1.5e3`), Result: raw(`{}`)},
		},
		{
			name:  "null result is a result",
			frame: `{"jsonrpc":"2.0","id":1,"result":null}`,
			want:  Message{Kind: KindResponse, ID: raw(`1`), Result: raw(`null`)},
		},
		{
			name:  "result with error null",
			frame: `{"jsonrpc":"2.0","id":1,"result":{},"error":null}`,
			want:  Message{Kind: KindResponse, ID: raw(`1`), Result: raw(`{}`)},
		},
		{
			name:  "error response",
			frame: `{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Unknown tool: x","data":{"tool":"x"}}}`,
			want:  Message{Kind: KindResponse, ID: raw(`9`), Error: &Error{Code: CodeInvalidParams, Message: "Unknown tool: x", Data: raw(`{"tool":"x"}`)}},
		},
		{
			name:  "error response with id null",
			frame: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
			want:  Message{Kind: KindResponse, ID: raw(`null`), Error: &Error{Code: CodeParseError, Message: "Parse error"}},
		},
		{
			name:  "error response without id",
			frame: `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"}}`,
			want:  Message{Kind: KindResponse, Error: &Error{Code: CodeInvalidRequest, Message: "Invalid Request"}},
		},
		{
			name:  "server to client request with an id a call might have",
			frame: `{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"messages":[]}}`,
			want:  Message{Kind: KindRequest, ID: raw(`7`), Method: MethodSamplingCreateMessage, Params: raw(`{"messages":[]}`)},
		},
		{
			name:  "request without params",
			frame: `{"jsonrpc":"2.0","id":"p","method":"ping"}`,
			want:  Message{Kind: KindRequest, ID: raw(`"p"`), Method: MethodPing},
		},
		{
			name:  "request with unknown method",
			frame: `{"jsonrpc":"2.0","id":1,"method":"x/\u00e9t\u00e9"}`,
			want:  Message{Kind: KindRequest, ID: raw(`1`), Method: "x/été"},
		},
		{
			name:  "notification",
			frame: `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`,
			want:  Message{Kind: KindNotification, Method: MethodLoggingMessage, Params: raw(`{"level":"info","data":"hi"}`)},
		},
		{
			name:  "notification with params null",
			frame: `{"jsonrpc":"2.0","method":"notifications/initialized","params":null}`,
			want:  Message{Kind: KindNotification, Method: MethodInitialized},
		},
		{
			name:  "escaped keys and version",
			frame: `{"json\u0072pc":"2\u002e0","\u0069d":5,"result":{}}`,
			want:  Message{Kind: KindResponse, ID: raw(`5`), Result: raw(`{}`)},
		},
		{
			name:  "unknown members are ignored",
			frame: `{"jsonrpc":"2.0","id":1,"result":{},"extra":[1,2],"ID":"x"}`,
			want:  Message{Kind: KindResponse, ID: raw(`1`), Result: raw(`{}`)},
		},
		{name: "both result and error", frame: `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, err: `both "result" and "error"`},
		{name: "neither result nor error", frame: `{"jsonrpc":"2.0","id":1}`, err: `"id" without`},
		{name: "request carrying a result", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, err: `"method" with "result"`},
		{name: "request carrying an error", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","error":{"code":1,"message":""}}`, err: `"method" with "result"`},
		{name: "request with null id", frame: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, err: `"id": null`},
		{name: "result with null id", frame: `{"jsonrpc":"2.0","id":null,"result":{}}`, err: `non-null "id"`},
		{name: "result without id", frame: `{"jsonrpc":"2.0","result":{}}`, err: `non-null "id"`},
		{name: "no method no id", frame: `{"jsonrpc":"2.0"}`, err: `no "method" and no "id"`},
		{name: "empty object", frame: `{}`, err: `missing "jsonrpc"`},
		{name: "missing jsonrpc", frame: `{"id":1,"result":{}}`, err: `missing "jsonrpc"`},
		{name: "wrong version", frame: `{"jsonrpc":"1.0","id":1,"result":{}}`, err: `not "2.0"`},
		{name: "version as number", frame: `{"jsonrpc":2.0,"id":1,"result":{}}`, err: `not "2.0"`},
		{name: "boolean id", frame: `{"jsonrpc":"2.0","id":true,"result":{}}`, err: `"id" is not`},
		{name: "object id", frame: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, err: `"id" is not`},
		{name: "method not a string", frame: `{"jsonrpc":"2.0","id":1,"method":5}`, err: `"method" is not`},
		{name: "error not an object", frame: `{"jsonrpc":"2.0","id":1,"error":"boom"}`, err: `"error" is not an object`},
		{name: "error code not an integer", frame: `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`, err: `malformed "error"`},
		{name: "duplicate id", frame: `{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`, err: "duplicate"},
		{name: "duplicate via escape", frame: `{"jsonrpc":"2.0","id":1,"\u0069d":2,"result":{}}`, err: "duplicate"},
		{name: "batch array", frame: `[{"jsonrpc":"2.0","id":1,"result":{}}]`, err: "batch"},
		{name: "banner line", frame: `Server listening on stdio`, err: "not a json object"},
		{name: "log line in braces", frame: `{INFO} started`, err: "malformed json"},
		{name: "number", frame: `42`, err: "not a json object"},
		{name: "empty", frame: ``, err: "empty"},
		{name: "whitespace", frame: " \t ", err: "empty"},
		{name: "trailing garbage", frame: `{"jsonrpc":"2.0","id":1,"result":{}}x`, err: "after the object"},
		{name: "two objects", frame: `{"jsonrpc":"2.0","id":1,"result":{}}{"jsonrpc":"2.0","id":2,"result":{}}`, err: "after the object"},
		{name: "truncated", frame: `{"jsonrpc":"2.0","id":1,"result":{"content":[`, err: "malformed json"},
		{name: "bad json in result", frame: `{"jsonrpc":"2.0","id":1,"result":{"a":01}}`, err: "malformed json"},
		{name: "bad escape in result", frame: `{"jsonrpc":"2.0","id":1,"result":"\x"}`, err: "malformed json"},
		{name: "raw control byte in string", frame: "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"a\tb\"}", err: "malformed json"},
		{name: "trailing comma", frame: `{"jsonrpc":"2.0","id":1,"result":{},}`, err: "malformed json"},
		{name: "single quotes", frame: `{'jsonrpc':'2.0'}`, err: "malformed json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Classify([]byte(tt.frame))
			if tt.err != "" {
				if !errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Classify(%s) error = %v, want ErrInvalidMessage with %q", tt.frame, err, tt.err)
				}
				if got.Kind != KindInvalid {
					t.Errorf("Kind = %v with an error, want invalid", got.Kind)
				}
			} else {
				if err != nil {
					t.Fatalf("Classify(%s): %v", tt.frame, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Classify(%s) mismatch (-want +got):\n%s", tt.frame, diff)
				}
			}
			// The reference agrees on every row.
			ref, refErr := referenceClassify([]byte(tt.frame))
			if (refErr == nil) != (err == nil) {
				t.Fatalf("reference error = %v, Classify error = %v", refErr, err)
			}
			if err == nil {
				if diff := cmp.Diff(ref, got); diff != "" {
					t.Errorf("reference mismatch (-ref +got):\n%s", diff)
				}
			}
		})
	}
}

func TestClassifyAliasesFrame(t *testing.T) {
	frame := []byte(`{"jsonrpc":"2.0","id":12,"result":{"x":1}}`)
	msg, err := Classify(frame)
	if err != nil {
		t.Fatal(err)
	}
	if &msg.Result[0] != &frame[len(`{"jsonrpc":"2.0","id":12,"result":`)] {
		t.Error("Result does not alias the frame")
	}
	if &msg.ID[0] != &frame[len(`{"jsonrpc":"2.0","id":`)] {
		t.Error("ID does not alias the frame")
	}
}

func TestClassifyNestingLimit(t *testing.T) {
	// encoding/json allows 10000 levels, the frame's object included.
	nest := func(levels int) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `}`)
	}
	for _, tt := range []struct {
		levels int
		ok     bool
	}{{9999, true}, {10000, false}, {100000, false}} {
		frame := nest(tt.levels)
		_, err := Classify(frame)
		if (err == nil) != tt.ok || json.Valid(frame) != tt.ok {
			t.Errorf("%d levels: Classify error %v, json.Valid %v, want ok=%v", tt.levels, err, json.Valid(frame), tt.ok)
		}
	}
	// Beyond 64 levels the container stack spills; mixed objects and arrays
	// must still close in the right order.
	var b strings.Builder
	for range 200 {
		b.WriteString(`{"a":[`)
	}
	b.WriteString("1")
	for range 200 {
		b.WriteString(`]}`)
	}
	good := []byte(`{"jsonrpc":"2.0","id":1,"result":` + b.String() + `}`)
	if _, err := Classify(good); err != nil {
		t.Errorf("deep mixed nesting: %v", err)
	}
	bad := []byte(strings.Replace(string(good), "]}]}", "}]}]", 1))
	if _, err := Classify(bad); err == nil {
		t.Error("deep mismatched brackets accepted")
	}
}

func TestClassifyAllocs(t *testing.T) {
	frames := map[string][]byte{
		"result":       []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`),
		"request":      []byte(`{"jsonrpc":"2.0","id":"a","method":"roots/list"}`),
		"notification": []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}`),
		"banner":       []byte(`npm WARN deprecated`),
	}
	for name, frame := range frames {
		t.Run(name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(100, func() { _, _ = Classify(frame) })
			if allocs != 0 {
				t.Errorf("Classify allocates %v times, want 0", allocs)
			}
		})
	}
}

func TestIntID(t *testing.T) {
	tests := []struct {
		id     string
		want   int64
		wantOK bool
	}{
		{`0`, 0, true},
		{`7`, 7, true},
		{`-3`, -3, true},
		{`9223372036854775807`, 9223372036854775807, true},
		{`-9223372036854775808`, -9223372036854775808, true},
		{`9223372036854775808`, 0, false},
		{`99999999999999999999`, 0, false},
		{`1.0`, 0, false},
		{`1e3`, 0, false},
		{`"7"`, 0, false},
		{`null`, 0, false},
		{``, 0, false},
		{`-`, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			m := Message{ID: raw(tt.id)}
			got, ok := m.IntID()
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("IntID(%s) = %d, %v; want %d, %v", tt.id, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindInvalid: "invalid", KindRequest: "request", KindNotification: "notification", KindResponse: "response", 9: "Kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

func TestErrorString(t *testing.T) {
	e := &Error{Code: CodeMethodNotFound, Message: "method not found"}
	if got, want := e.Error(), "code -32601: method not found"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }
