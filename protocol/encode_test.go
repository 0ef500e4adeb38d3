package protocol

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestEncodersRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		want  Message
		text  string // the exact frame, when it matters
	}{
		{
			name:  "request",
			frame: AppendRequest(nil, 1, MethodInitialize, raw(`{"protocolVersion":"2025-11-25"}`)),
			want:  Message{Kind: KindRequest, ID: raw(`1`), Method: MethodInitialize, Params: raw(`{"protocolVersion":"2025-11-25"}`)},
			text:  `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
		},
		{
			name:  "request without params",
			frame: AppendRequest(nil, -5, MethodToolsList, nil),
			want:  Message{Kind: KindRequest, ID: raw(`-5`), Method: MethodToolsList},
			text:  `{"jsonrpc":"2.0","id":-5,"method":"tools/list"}`,
		},
		{
			name:  "request with whitespace-only params",
			frame: AppendRequest(nil, 2, MethodPing, raw(" \n")),
			want:  Message{Kind: KindRequest, ID: raw(`2`), Method: MethodPing},
		},
		{
			name:  "notification",
			frame: AppendNotification(nil, MethodCancelled, raw(`{"requestId":3,"reason":"timeout"}`)),
			want:  Message{Kind: KindNotification, Method: MethodCancelled, Params: raw(`{"requestId":3,"reason":"timeout"}`)},
			text:  `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"timeout"}}`,
		},
		{
			name:  "notification without params",
			frame: AppendNotification(nil, MethodInitialized, nil),
			want:  Message{Kind: KindNotification, Method: MethodInitialized},
			text:  `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		},
		{
			name:  "result echoes a string id byte for byte",
			frame: AppendResult(nil, raw(`"a\u0062c"`), raw(`{"roots":[]}`)),
			want:  Message{Kind: KindResponse, ID: raw(`"a\u0062c"`), Result: raw(`{"roots":[]}`)},
			text:  `{"jsonrpc":"2.0","id":"a\u0062c","result":{"roots":[]}}`,
		},
		{
			name:  "empty result is {}",
			frame: AppendResult(nil, raw(`17`), nil),
			want:  Message{Kind: KindResponse, ID: raw(`17`), Result: raw(`{}`)},
		},
		{
			name:  "error",
			frame: AppendError(nil, raw(`4`), CodeMethodNotFound, `method "x" not found`, raw(`{"method":"x"}`)),
			want:  Message{Kind: KindResponse, ID: raw(`4`), Error: &Error{Code: CodeMethodNotFound, Message: `method "x" not found`, Data: raw(`{"method":"x"}`)}},
			text:  `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"method \"x\" not found","data":{"method":"x"}}}`,
		},
		{
			name:  "error without id",
			frame: AppendError(nil, nil, CodeParseError, "parse error", nil),
			want:  Message{Kind: KindResponse, ID: raw(`null`), Error: &Error{Code: CodeParseError, Message: "parse error"}},
			text:  `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		},
		{
			name:  "call tool",
			frame: AppendCallTool(nil, 7, "read_file", raw(`{"path":"/etc/hosts"}`), raw(`{"progressToken":7}`)),
			want: Message{Kind: KindRequest, ID: raw(`7`), Method: MethodToolsCall,
				Params: raw(`{"name":"read_file","arguments":{"path":"/etc/hosts"},"_meta":{"progressToken":7}}`)},
			text: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/etc/hosts"},"_meta":{"progressToken":7}}}`,
		},
		{
			name:  "call tool without arguments",
			frame: AppendCallTool(nil, 8, "now", nil, nil),
			want:  Message{Kind: KindRequest, ID: raw(`8`), Method: MethodToolsCall, Params: raw(`{"name":"now","arguments":{}}`)},
		},
		{
			name:  "call tool with null arguments",
			frame: AppendCallTool(nil, 9, "now", raw(` null `), nil),
			want:  Message{Kind: KindRequest, ID: raw(`9`), Method: MethodToolsCall, Params: raw(`{"name":"now","arguments":{}}`)},
		},
		{
			name:  "pretty-printed arguments stay on one line",
			frame: AppendCallTool(nil, 10, "t", raw("{\n  \"a\": \"x\\ny\"\n}"), nil),
			want:  Message{Kind: KindRequest, ID: raw(`10`), Method: MethodToolsCall, Params: raw(`{"name":"t","arguments":{   "a": "x\ny" }}`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFrame(t, tt.frame)
			if tt.text != "" && string(tt.frame) != tt.text {
				t.Errorf("frame = %s\nwant    %s", tt.frame, tt.text)
			}
			got, err := Classify(tt.frame)
			if err != nil {
				t.Fatalf("Classify(%s): %v", tt.frame, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// checkFrame asserts a frame is one line of valid JSON.
func checkFrame(t *testing.T, frame []byte) {
	t.Helper()
	if !json.Valid(frame) {
		t.Fatalf("not valid JSON: %s", frame)
	}
	if bytes.IndexByte(frame, '\n') >= 0 {
		t.Fatalf("frame holds a newline: %q", frame)
	}
}

// checkCompact asserts a frame is compact JSON (no insignificant whitespace).
func checkCompact(t *testing.T, frame []byte) {
	t.Helper()
	var compact bytes.Buffer
	if err := json.Compact(&compact, frame); err != nil {
		t.Fatalf("json.Compact(%s): %v", frame, err)
	}
	if !bytes.Equal(compact.Bytes(), frame) {
		t.Errorf("frame is not compact:\n got %s\nwant %s", frame, compact.Bytes())
	}
}

func TestAppendCallToolEscapesNames(t *testing.T) {
	names := []string{
		"plain",
		`quote"d`,
		`back\slash`,
		"new\nline\r\ttab",
		"nul\x00and\x1fcontrol",
		"ünïcødé ツール 🔧",
		"line\u2028para\u2029sep",
		"<html> & 'x'",
		"bad\xffutf8\xc3",
		"",
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			frame := AppendCallTool(nil, 1, name, raw(`{"k":"v"}`), nil)
			checkFrame(t, frame)
			checkCompact(t, frame)
			msg, err := Classify(frame)
			if err != nil {
				t.Fatal(err)
			}
			var p CallToolParams
			if err := json.Unmarshal(msg.Params, &p); err != nil {
				t.Fatal(err)
			}
			// Valid names come back unchanged; invalid UTF-8 comes back as
			// encoding/json would have written it, with U+FFFD.
			std, _ := json.Marshal(name)
			var want string
			_ = json.Unmarshal(std, &want)
			if utf8.ValidString(name) && want != name {
				t.Fatalf("encoding/json changed a valid name: %q", want)
			}
			if p.Name != want {
				t.Errorf("name decoded as %q, want %q", p.Name, want)
			}
			if string(p.Arguments) != `{"k":"v"}` {
				t.Errorf("arguments = %s", p.Arguments)
			}
		})
	}
}

func TestEncodersAreCompact(t *testing.T) {
	frames := [][]byte{
		AppendRequest(nil, 1, "m", raw(`{"a":1}`)),
		AppendNotification(nil, "n", nil),
		AppendResult(nil, raw(`"x"`), raw(`[1,2]`)),
		AppendError(nil, raw(`1`), -1, "m", raw(`"d"`)),
		AppendCallTool(nil, 1, "t", raw(`{"a":[1]}`), raw(`{"m":true}`)),
	}
	for _, f := range frames {
		checkCompact(t, f)
	}
}

func TestAppendReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 256)
	args := raw(`{"path":"/tmp/x"}`)
	allocs := testing.AllocsPerRun(100, func() {
		buf = AppendCallTool(buf[:0], 12345, "read_file", args, nil)
	})
	if allocs != 0 {
		t.Errorf("AppendCallTool into a roomy buffer allocates %v times", allocs)
	}
	prefix := []byte("keep:")
	out := AppendRequest(prefix, 1, "ping", nil)
	if !bytes.HasPrefix(out, []byte("keep:{")) {
		t.Errorf("AppendRequest dropped dst: %s", out)
	}
}
