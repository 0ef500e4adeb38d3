package protocol

import (
	"strings"
	"testing"
)

func TestSniffID(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		want   string // "" means nil
	}{
		{"id first", `{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"aaaa`, `42`},
		{"string id", `{"jsonrpc":"2.0","id":"req-7","result":{"x`, `"req-7"`},
		{"id after a complete value", `{"jsonrpc":"2.0","result":{"a":[1,2]},"id":9,"x":"tr`, `9`},
		{"spaces", ` { "jsonrpc" : "2.0" , "id" : -3 , "result"`, `-3`},
		{"escaped key", `{"\u0069d":5,"result":`, `5`},
		{"number cut at the end", `{"jsonrpc":"2.0","id":12`, ``},
		{"number then space", `{"jsonrpc":"2.0","id":12 `, `12`},
		{"string cut in the middle", `{"jsonrpc":"2.0","id":"ab`, ``},
		{"id after the cut", `{"jsonrpc":"2.0","result":{"content":"xxxxxxx`, ``},
		{"key cut", `{"jsonrpc":"2.0","i`, ``},
		{"nested id is not the id", `{"result":{"id":5},"jsonrpc":"2.0"`, ``},
		{"nested id then cut", `{"result":{"id":5,"more":"x`, ``},
		{"null id", `{"jsonrpc":"2.0","id":null,"error":`, ``},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"result":`, ``},
		{"not an object", `[{"id":1}`, ``},
		{"banner", `Starting up... "id":1`, ``},
		{"empty", ``, ``},
		{"malformed before the id", `{"jsonrpc":2.0.1,"id":1,`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SniffID([]byte(tt.prefix))
			if string(got) != tt.want || (tt.want == "") != (got == nil) {
				t.Errorf("SniffID(%s) = %q, want %q", tt.prefix, got, tt.want)
			}
		})
	}
}

func TestSniffTrailingID(t *testing.T) {
	tests := []struct {
		name   string
		suffix string
		want   string
	}{
		{"typescript order", `aaaa"}]},"jsonrpc":"2.0","id":7}`, `7`},
		{"string id", `xx"}]},"jsonrpc":"2.0","id":"a\"b"}`, `"a\"b"`},
		{"trailing whitespace", "x\"}]} , \"id\" : 12 }\r", `12`},
		{"id before other scalars", `}],"id":3,"jsonrpc":"2.0","n":-1.5e3,"t":true,"f":null}`, `3`},
		{"escaped backslash before the quote", `"}},"k":"v\\","id":4}`, `4`},
		{"escaped key", `]},"\u0069d":8}`, `8`},
		{"id in a nested object only", `{"id":5}}`, ``},
		{"id before an object value", `"id":5,"result":{"a":1}}`, ``},
		{"no closing brace", `"id":5`, ``},
		{"cut inside the key", `d":5}`, ``},
		{"null id", `,"id":null}`, ``},
		{"empty", ``, ``},
		{"garbage", `}}}}}`, ``},
		{"key holding an escaped id, cut after its backslash", `"id":5}`, ``},
		{"cut inside a backslash run", `\\"id":5}`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SniffTrailingID([]byte(tt.suffix))
			if string(got) != tt.want || (tt.want == "") != (got == nil) {
				t.Errorf("SniffTrailingID(%s) = %q, want %q", tt.suffix, got, tt.want)
			}
		})
	}
}

func TestFrameTooLargeErrorID(t *testing.T) {
	body := strings.Repeat("b", 10000)
	tests := []struct {
		name string
		line string
		want string
	}{
		{"python order: id in the prefix", `{"jsonrpc":"2.0","id":11,"result":{"text":"` + body + `"}}`, `11`},
		{"typescript order: id in the suffix", `{"result":{"text":"` + body + `"},"jsonrpc":"2.0","id":12}`, `12`},
		{"no id", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + body + `"}}`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr := newFrameReader(strings.NewReader(tt.line+"\n"), 1000, 256)
			_, err := fr.ReadFrame()
			tl, ok := err.(*FrameTooLargeError)
			if !ok {
				t.Fatalf("ReadFrame error = %v, want *FrameTooLargeError", err)
			}
			if got := tl.ID(); string(got) != tt.want {
				t.Errorf("ID() = %s, want %s", got, tt.want)
			}
		})
	}
}
