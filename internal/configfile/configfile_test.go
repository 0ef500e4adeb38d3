package configfile

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// lookupOf is a variable lookup over a fixed map, for tests that must not
// depend on the environment they run in.
func lookupOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two", "EMPTY": "", "URL": "https://x.example"}
	tests := []struct {
		in      string
		want    string
		unset   []string
		wantErr string
	}{
		{in: "plain", want: "plain"},
		{in: "", want: ""},
		{in: "${A}", want: "1"},
		{in: "${env:B}", want: "two"},
		{in: "${MISSING}", want: "", unset: []string{"MISSING"}},
		{in: "${MISSING:-def}", want: "def"},
		{in: "${EMPTY:-def}", want: "def"},
		{in: "${EMPTY}", want: ""},
		{in: "${MISSING:-}", want: ""},
		{in: "${A:-def}", want: "1"},
		{in: "${env:MISSING:-def}", want: "def"},
		{in: "pre-${A}-mid-${B}-post", want: "pre-1-mid-two-post"},
		{in: "${URL}/mcp?k=${A}", want: "https://x.example/mcp?k=1"},
		{in: "${A}${B}${A}", want: "1two1"},
		{in: "${MISSING}-${ALSO}-${MISSING}", want: "--", unset: []string{"MISSING", "ALSO"}},
		{in: "${MISSING:-a b:c}", want: "a b:c"},
		{in: "${MISSING:-${A}}", want: "1"},
		{in: "${MISSING:-x${B}y}", want: "xtwoy"},
		{in: "${MISSING:-${ALSO}}", want: "", unset: []string{"ALSO"}},
		{in: "${A:-${ALSO}}", want: "1"},
		{in: "$$", want: "$$"},
		{in: "$${A}", want: "$1"},
		{in: "$A and $ and $5", want: "$A and $ and $5"},
		{in: "trailing $", want: "trailing $"},
		{in: "{A} and }", want: "{A} and }"},
		{in: "${A", wantErr: `unterminated variable reference "${A"`},
		{in: "${", wantErr: `unterminated variable reference "${"`},
		{in: "x ${A:-default", wantErr: `unterminated variable reference "${A"`},
		{in: "${A:-${B}", wantErr: `unterminated variable reference "${A"`},
		{in: "${A:-${B", wantErr: `unterminated variable reference "${B"`},
		{in: "${}", wantErr: `invalid variable reference "${}" (want ${NAME} or ${NAME:-default})`},
		{in: "${1A}", wantErr: `invalid variable reference "${1A}" (want ${NAME} or ${NAME:-default})`},
		{in: "${A-b}", wantErr: `invalid variable reference "${A-b}" (want ${NAME} or ${NAME:-default})`},
		{in: "${A:=b}", wantErr: `invalid variable reference "${A:=b}" (want ${NAME} or ${NAME:-default})`},
		{in: "${A.B", wantErr: `unterminated variable reference "${A"`},
		{in: "${" + strings.Repeat("x", 30) + " " + strings.Repeat("y", 40) + "}", wantErr: `invalid variable reference "${` + strings.Repeat("x", 30) + " " + strings.Repeat("y", 28) + `..." (want ${NAME} or ${NAME:-default})`},
		{in: "${input:key}", wantErr: `"${input:key}" is a VS Code input prompt, which mcpvisor cannot show: use ${NAME} and set NAME in the environment`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, unset, err := Expand(tt.in, lookupOf(vars), "")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Expand(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Expand(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if diff := cmp.Diff(tt.unset, unset); diff != "" {
				t.Errorf("Expand(%q) unset (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestSyntaxPosition(t *testing.T) {
	data := []byte("ab\ncde\n\nf")
	tests := []struct {
		offset    int64
		line, col int
	}{
		{1, 1, 1}, {2, 1, 2}, {3, 1, 3}, {4, 2, 1}, {6, 2, 3}, {8, 3, 1}, {9, 4, 1}, {10, 4, 2}, {0, 1, 1}, {99, 4, 2},
	}
	for _, tt := range tests {
		if line, col := syntaxPosition(data, tt.offset); line != tt.line || col != tt.col {
			t.Errorf("syntaxPosition(%d) = %d:%d, want %d:%d", tt.offset, line, col, tt.line, tt.col)
		}
	}
}

func TestStrip(t *testing.T) {
	tests := []struct{ in, want string }{
		{in: `{"a": 1}`, want: `{"a": 1}`},
		{in: "\xef\xbb\xbf{}", want: "   {}"},
		{in: "{\"a\": 1, // c\n}", want: "{\"a\": 1      \n}"},
		{in: `{"a": [1, 2,], }`, want: `{"a": [1, 2 ]  }`},
		{in: `{"a": "x // y, /* z */",}`, want: `{"a": "x // y, /* z */" }`},
		{in: "{\"a\": \"q\\\"//\" /* b\nc */}", want: "{\"a\": \"q\\\"//\"     \n    }"},
		{in: `[,]`, want: `[,]`},                         // not a trailing comma: the parser reports it
		{in: `{"a": 1 /* open`, want: `{"a": 1 /* open`}, // unterminated: left for the parser
		{in: "// only a comment", want: "                 "},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := string(strip([]byte(tt.in))); got != tt.want {
				t.Errorf("strip(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzStrip checks that strip keeps every position: the output has the
// input's length and its newlines where the input has them, and it does
// not modify its argument.
func FuzzStrip(f *testing.F) {
	for _, s := range []string{"{\"a\": [1,],} // c\n", "/* x\ny */{}", "\"\\\"//\"", "\xef\xbb\xbf{,}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		out := strip(data)
		if !bytes.Equal(in, data) {
			t.Fatal("strip modified its argument")
		}
		if len(out) != len(in) {
			t.Fatalf("len = %d, want %d", len(out), len(in))
		}
		for i := range in {
			if (in[i] == '\n') != (out[i] == '\n') {
				t.Fatalf("byte %d: %q became %q", i, in[i], out[i])
			}
		}
	})
}

func TestParseReserved(t *testing.T) {
	data := []byte(`{"mcpServers": {"config": {"command": "x"}}}`)
	if _, err := Parse("", data, Options{}); err != nil {
		t.Errorf("Parse with nothing reserved: %v", err)
	}
	_, err := Parse("", data, Options{Reserved: "config"})
	want := `config: server "config": the name "config" is reserved for the host's own tool group`
	if err == nil || err.Error() != want || !errors.Is(err, ErrInvalid) {
		t.Errorf("Parse with config reserved: %v, want %q wrapping ErrInvalid", err, want)
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		in      string
		want    Server
		wantErr string
	}{
		{in: `{"command": "x", "api_key": "k", "disabled": true, "timeout": 1500}`,
			want: Server{Type: "stdio", Command: "x", APIKey: "k", Timeout: 1500 * time.Millisecond}},
		{in: `{"httpUrl": "https://h/mcp"}`, want: Server{Type: "http", URL: "https://h/mcp", Enabled: true}},
		{in: `{"type": "streamable-http", "url": "https://h/mcp"}`, want: Server{Type: "http", URL: "https://h/mcp", Enabled: true}},
		{in: `{"url": "https://h/sse?x=1"}`, want: Server{Type: "sse", URL: "https://h/sse?x=1", Enabled: true}},
		{in: `{"type": "ws", "command": "x"}`, want: Server{Type: "ws", Command: "x", Enabled: true}},
		{in: `{"args": "x"}`, wantErr: `config: field "args": want an array of strings, got a string`},
		{in: `{"enabled": true, "disabled": true}`, wantErr: `config: field "disabled": true contradicts "enabled": true`},
		{in: `[]`, wantErr: `config: entry is an array, want an object`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrInvalid) {
					t.Fatalf("Decode error = %v, want %q wrapping ErrInvalid", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}
