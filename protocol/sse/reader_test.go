package sse

import (
	"bytes"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// collect reads events until Next returns an error other than a
// *TooLargeError. Items are Event and TooLargeError values.
func collect(t testing.TB, rd io.Reader, maxEvent int) (items []any, end error) {
	t.Helper()
	r := NewReader(rd, maxEvent)
	for range 100000 {
		ev, err := r.Next()
		var tooLarge *TooLargeError
		switch {
		case err == nil:
			items = append(items, ev)
		case errors.As(err, &tooLarge):
			if !errors.Is(err, protocol.ErrFrameTooLarge) {
				t.Fatalf("%v does not match protocol.ErrFrameTooLarge", err)
			}
			items = append(items, *tooLarge)
		default:
			// The error is sticky.
			if _, again := r.Next(); again != err {
				t.Fatalf("Next after %v returned %v", err, again)
			}
			return items, err
		}
	}
	t.Fatal("Next never returned an error")
	return nil, nil
}

// equalBytes compares byte slices at once rather than byte by byte, telling
// nil from empty.
var equalBytes = cmp.Comparer(func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) })

// readers returns the ways a test feeds input to the Reader: all at once,
// one byte per Read (every line crosses a buffer boundary), and half of what
// is asked for.
func readers(in string) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"whole":   func() io.Reader { return strings.NewReader(in) },
		"onebyte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
		"half":    func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
		"dataEOF": func() io.Reader { return iotest.DataErrReader(strings.NewReader(in)) },
	}
}

func TestNext(t *testing.T) {
	long := strings.Repeat("x", 10000)             // longer than the first buffer
	longer := strings.Repeat("y", maxBufferSize+1) // longer than any buffer
	tests := []struct {
		name string
		in   string
		max  int // 0: default
		want []any
		end  error // nil: io.EOF
	}{
		{name: "empty", in: ""},
		{name: "one event", in: "data: hello\n\n", want: []any{Event{Data: []byte("hello")}}},
		{name: "multi-line data", in: "data: a\ndata: b\ndata:\ndata: c\n\n",
			want: []any{Event{Data: []byte("a\nb\n\nc")}}},
		{name: "two events", in: "data: a\n\ndata: b\n\n",
			want: []any{Event{Data: []byte("a")}, Event{Data: []byte("b")}}},
		{name: "CRLF", in: "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n",
			want: []any{Event{Data: []byte("a\nb")}, Event{Data: []byte("c")}}},
		{name: "CR", in: "data: a\rdata: b\r\rdata: c\r\r",
			want: []any{Event{Data: []byte("a\nb")}, Event{Data: []byte("c")}}},
		{name: "mixed line ends", in: "data: a\r\n\rdata: b\n\r\nid: 1\r\r",
			want: []any{Event{Data: []byte("a")}, Event{Data: []byte("b")}, Event{ID: "1", HasID: true}}},
		{name: "CR then LF ends one line", in: "data: a\r\ndata: b\r\n\n",
			want: []any{Event{Data: []byte("a\nb")}}},
		{name: "comments", in: ": hello\ndata: x\n: in the middle\n\n:only a comment\n\n:\n\n",
			want: []any{Event{Data: []byte("x")}}},
		{name: "priming event", in: "id: 0\ndata:\n\n",
			want: []any{Event{ID: "0", HasID: true}}},
		{name: "priming event with retry", in: "id: 7-a\nretry: 3000\ndata:\n\n",
			want: []any{Event{ID: "7-a", HasID: true, Retry: 3 * time.Second, HasRetry: true}}},
		{name: "id without data", in: "id: 7\n\n", want: []any{Event{ID: "7", HasID: true}}},
		{name: "empty id resets", in: "id\n\nid:\n\n",
			want: []any{Event{HasID: true}, Event{HasID: true}}},
		{name: "id is per event", in: "id: 1\ndata: a\n\ndata: b\n\n",
			want: []any{Event{ID: "1", HasID: true, Data: []byte("a")}, Event{Data: []byte("b")}}},
		{name: "last id wins", in: "id: 1\nid: 2\ndata: a\n\n",
			want: []any{Event{ID: "2", HasID: true, Data: []byte("a")}}},
		{name: "id with NUL ignored", in: "id: a\x00b\ndata: x\n\nid: 1\nid: 2\x00\ndata: y\n\nid: \x00\n\n",
			want: []any{Event{Data: []byte("x")}, Event{ID: "1", HasID: true, Data: []byte("y")}}},
		{name: "retry alone", in: "retry: 2500\n\n",
			want: []any{Event{Retry: 2500 * time.Millisecond, HasRetry: true}}},
		{name: "retry zero", in: "retry:0\ndata: x\n\n",
			want: []any{Event{Data: []byte("x"), HasRetry: true}}},
		{name: "retry invalid", in: "retry: 25x\ndata: a\n\nretry: -1\n\nretry:\n\nretry: 1.5\n\nretry:  100\n\nretry: +1\n\nretry\n\ndata: b\n\n",
			want: []any{Event{Data: []byte("a")}, Event{Data: []byte("b")}}},
		{name: "retry invalid keeps earlier valid", in: "retry: 10\nretry: x\n\n",
			want: []any{Event{Retry: 10 * time.Millisecond, HasRetry: true}}},
		{name: "retry saturates", in: "retry: 99999999999999999999999999\n\n",
			want: []any{Event{Retry: time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond, HasRetry: true}}},
		{name: "event type", in: "event: endpoint\ndata: /messages?s=1\n\nevent:\ndata: x\n\nevent: a\nevent: b\ndata: y\n\n",
			want: []any{
				Event{Type: "endpoint", Data: []byte("/messages?s=1")},
				Event{Data: []byte("x")},
				Event{Type: "b", Data: []byte("y")},
			}},
		{name: "event type is per event", in: "event: ping\ndata: a\n\ndata: b\n\n",
			want: []any{Event{Type: "ping", Data: []byte("a")}, Event{Data: []byte("b")}}},
		{name: "lone event line skipped", in: "event: foo\n\nevent: bar\n: c\n\n", want: nil},
		{name: "BOM", in: "\xEF\xBB\xBFdata: x\n\n", want: []any{Event{Data: []byte("x")}}},
		{name: "BOM alone", in: "\xEF\xBB\xBF"},
		{name: "BOM only once", in: "\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n",
			want: []any{Event{Data: []byte("y")}}},
		{name: "partial BOM", in: "\xEF\xBBdata: x\n\ndata: y\n\n", want: []any{Event{Data: []byte("y")}}},
		{name: "BOM later is data", in: "data: \xEF\xBB\xBF\n\n", want: []any{Event{Data: []byte("\xEF\xBB\xBF")}}},
		{name: "field without colon", in: "data\n\ndata\ndata\n\n",
			want: []any{Event{}, Event{Data: []byte("\n")}}},
		{name: "leading space", in: "data:x\n\ndata:  x\n\ndata:\tx\n\ndata: \n\n",
			want: []any{Event{Data: []byte("x")}, Event{Data: []byte(" x")}, Event{Data: []byte("\tx")}, Event{}}},
		{name: "colon in value", in: "data: a: b\n\n", want: []any{Event{Data: []byte("a: b")}}},
		{name: "unknown fields", in: "foo: bar\ndata: x\nDATA: y\n data: z\nData: w\n\nfoo\n\n",
			want: []any{Event{Data: []byte("x")}}},
		{name: "space before colon", in: "data : x\n\n"},
		{name: "unterminated last event discarded", in: "data: x\n\ndata: y\n",
			want: []any{Event{Data: []byte("x")}}},
		{name: "unterminated last line discarded", in: "data: x\n\nid: 3\ndata: y",
			want: []any{Event{Data: []byte("x")}}},
		{name: "blank lines between events", in: "\n\n\r\ndata: x\n\n\n\n", want: []any{Event{Data: []byte("x")}}},
		{name: "long data", in: "data: " + long + "\ndata: " + long + "\n\n",
			want: []any{Event{Data: []byte(long + "\n" + long)}}},
		{name: "longer data", in: "data: " + longer + "\ndata: " + longer + "\n\ndata: " + longer + "\n\ndata:\ndata: " + longer + "\n\n",
			want: []any{
				Event{Data: []byte(longer + "\n" + longer)},
				Event{Data: []byte(longer)},
				Event{Data: []byte("\n" + longer)},
			}},
		{name: "JSON-RPC", in: "id: s1-42\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
			want: []any{Event{ID: "s1-42", HasID: true, Type: "message", Data: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)}}},

		{name: "data at the limit", max: 10, in: "data:12345\ndata:6789\n\ndata:12345\n\n",
			want: []any{Event{Data: []byte("12345\n6789")}, Event{Data: []byte("12345")}}},
		{name: "line too long ends the stream", max: 8, in: "data: 123456789\n\ndata: ok\n\n",
			want: []any{TooLargeError{Size: 9, Limit: 8, Prefix: []byte("12")}}, end: ErrAbandoned},
		{name: "data too large ends the stream", max: 10, in: "data:1234\nid: 9\nretry: 5\ndata:5678\ndata:more\nid: 10\n\ndata: ok\n\n",
			want: []any{
				TooLargeError{Size: 14, Limit: 10, EventID: "9", HasEventID: true, Retry: 5 * time.Millisecond, HasRetry: true, Prefix: []byte("1234\n5678\nmore")},
			}, end: ErrAbandoned},
		{name: "separators count", max: 10, in: "data:1234" + strings.Repeat("\ndata:", 7) + "\n\n",
			want: []any{TooLargeError{Size: 11, Limit: 10, Prefix: []byte("1234" + strings.Repeat("\n", 7))}}, end: ErrAbandoned},
		{name: "comment too long", max: 8, in: ": 0123456789\ndata: x\n\ndata: ok\n\n",
			want: []any{TooLargeError{Size: 9, Limit: 8}}, end: ErrAbandoned},
		{name: "id too long", max: 8, in: "id: 0123456789\ndata: x\n\n",
			want: []any{TooLargeError{Size: 9, Limit: 8}}, end: ErrAbandoned},
		{name: "too large before EOF", max: 8, in: "data: ok\n\ndata: 123456789\n",
			want: []any{Event{Data: []byte("ok")}, TooLargeError{Size: 9, Limit: 8, Prefix: []byte("12")}}, end: ErrAbandoned},
		{name: "unfinished long line at EOF", max: 8, in: "data: ok\n\nid: 1\ndata: 123456789",
			want: []any{Event{Data: []byte("ok")}, TooLargeError{Size: 9, Limit: 8, EventID: "1", HasEventID: true, Prefix: []byte("12")}}, end: ErrAbandoned},
		{name: "unfinished short line at EOF", max: 10, in: "data: ok\n\ndata: 1234\ndata: 56",
			want: []any{Event{Data: []byte("ok")}}},
		{name: "prefix ends at a cut line", max: 8, in: "data: a\ndata: 123456789\ndata: b\n\n",
			want: []any{TooLargeError{Size: 9, Limit: 8, Prefix: []byte("a\n12")}}, end: ErrAbandoned},
		{name: "prefix bounded", max: 8192, in: strings.Repeat("data: 1234567\n", 2000) + "\ndata: ok\n\n",
			want: []any{
				TooLargeError{Size: 8199, Limit: 8192, Prefix: []byte(strings.Repeat("1234567\n", 512))},
			}, end: ErrAbandoned},
		// 2×8 + 64 KiB of lines without a blank one: each ":" line takes 2.
		{name: "stream cut", max: 8, in: "id: 3\n" + strings.Repeat(":\n", 40000) + "\ndata: ok\n\n",
			want: []any{TooLargeError{Size: 2*8 + streamSlack + 2, Limit: 8, Stream: true, EventID: "3", HasEventID: true}}, end: ErrAbandoned},
		{name: "stream of whole events is not cut", max: 8, in: strings.Repeat(":\n\n", 40000) + "data: ok\n\n",
			want: []any{Event{Data: []byte("ok")}}},
	}
	for _, tt := range tests {
		for how, rd := range readers(tt.in) {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				got, end := collect(t, rd(), tt.max)
				want := tt.end
				if want == nil {
					want = io.EOF
				}
				if end != want {
					t.Errorf("end = %v, want %v", end, want)
				}
				if diff := cmp.Diff(tt.want, got, equalBytes); diff != "" {
					t.Errorf("events mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestNextReaderError(t *testing.T) {
	boom := errors.New("connection reset")
	for _, tt := range []struct {
		name string
		in   string
		want []any
	}{
		{"after an event", "data: x\n\n", []any{Event{Data: []byte("x")}}},
		{"unfinished event dropped", "data: x\n\ndata: y\n", []any{Event{Data: []byte("x")}}},
		{"unfinished line dropped", "data: x\n\ndata: y", []any{Event{Data: []byte("x")}}},
		{"oversized event reported", "data: x\n\ndata: 123456789\n", []any{Event{Data: []byte("x")}, TooLargeError{Size: 9, Limit: 8, Prefix: []byte("12")}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, end := collect(t, io.MultiReader(strings.NewReader(tt.in), iotest.ErrReader(boom)), 8)
			var tooLarge bool
			for _, item := range got {
				_, tooLarge = item.(TooLargeError)
			}
			if want := map[bool]error{false: boom, true: ErrAbandoned}[tooLarge]; end != want {
				t.Errorf("end = %v, want %v", end, want)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestNextNoProgress(t *testing.T) {
	if _, err := NewReader(emptyReader{}, 0).Next(); err != io.ErrNoProgress {
		t.Fatalf("Next = %v, want io.ErrNoProgress", err)
	}
}

func TestNextDataIsOwned(t *testing.T) {
	r := NewReader(strings.NewReader("data: first\n\ndata: second\n\n"), 0)
	first, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if string(first.Data) != "first" {
		t.Fatalf("first event's data changed to %q by the next read", first.Data)
	}
}

func TestTooLargeErrorID(t *testing.T) {
	in := `data: {"jsonrpc":"2.0","id":42,"result":{"text":"` + strings.Repeat("x", 100) + "\"}}\n\n"
	_, err := NewReader(strings.NewReader(in), 64).Next()
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("Next = %v, want a *TooLargeError", err)
	}
	if id := string(tooLarge.ID()); id != "42" {
		t.Fatalf("ID() = %q, want 42", id)
	}
}

// lineReader yields prefix and then n bytes of line repeated, without
// holding them.
type lineReader struct {
	prefix string
	n      int64
	line   int
	off    int
	block  []byte
}

func (lr *lineReader) Read(p []byte) (int, error) {
	if lr.prefix != "" {
		c := copy(p, lr.prefix)
		lr.prefix = lr.prefix[c:]
		return c, nil
	}
	if lr.n == 0 {
		return 0, io.EOF
	}
	c := copy(p[:min(int64(len(p)), lr.n)], lr.block[lr.off:])
	lr.n -= int64(c)
	lr.off = (lr.off + c) % lr.line
	return c, nil
}

func newLineReader(prefix string, n int64, line string) *lineReader {
	return &lineReader{prefix: prefix, n: n, line: len(line), block: bytes.Repeat([]byte(line), (64<<10)/len(line)+2)}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestNextStopsAtLimit checks that an oversized line or event, or a stream
// that never ends an event, costs about the limit in memory and in bytes
// read, not its size: the Reader stops reading the moment the limit is
// passed, and reads nothing more.
func TestNextStopsAtLimit(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name   string
		rd     io.Reader
		size   int64 // of the TooLargeError
		stream bool
		most   int64 // bytes read at most
	}{
		// 1 TB in one line without a newline.
		{"endless line", newLineReader("data: ", 1<<40, "x"), limit + 1, false, limit + maxBufferSize},
		// 1 TB of short data lines in one event, never ended.
		// Each line adds 36 bytes and a separator to the data, and takes 43
		// of the stream.
		{"endless event", newLineReader("id: 1\n", 1<<40, "data: 0123456789abcdefghijklmnopqrstuvwxyz\n"), (limit/37+1)*37 - 1, false, (limit/37+1)*43 + maxBufferSize},
		// 1 TB of comments, and no blank line: 13 bytes of stream a line.
		{"endless comments", newLineReader("", 1<<40, ": keep-alive\n"), ((2*limit+streamSlack)/13 + 1) * 13, true, 2*limit + 2*maxBufferSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cr := &countingReader{r: tt.rd}
			r := NewReader(cr, limit)
			_, err := r.Next()
			runtime.ReadMemStats(&after)
			var tooLarge *TooLargeError
			if !errors.As(err, &tooLarge) {
				t.Fatalf("Next = %v, want a *TooLargeError", err)
			}
			if tooLarge.Size != tt.size || tooLarge.Stream != tt.stream {
				t.Errorf("Size = %d, Stream = %v; want %d, %v", tooLarge.Size, tooLarge.Stream, tt.size, tt.stream)
			}
			if cr.n > tt.most {
				t.Errorf("read %d bytes, want at most %d", cr.n, tt.most)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*limit {
				t.Errorf("reading allocated %d bytes, want < %d", alloc, 8*limit)
			}
			read := cr.n
			if _, err := r.Next(); err != ErrAbandoned {
				t.Errorf("then Next = %v, want ErrAbandoned", err)
			}
			if cr.n != read {
				t.Errorf("Next read %d more bytes after the limit", cr.n-read)
			}
		})
	}
}

// TestNextBufferGrows checks that a Reader starts small and that large
// events make it read in larger chunks.
func TestNextBufferGrows(t *testing.T) {
	r := NewReader(strings.NewReader("data: x\n\n"), 0)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if len(r.buf) != minBufferSize {
		t.Fatalf("buffer = %d bytes after a small event, want %d", len(r.buf), minBufferSize)
	}
	x, y := strings.Repeat("x", 1<<20), strings.Repeat("y", 1<<20)
	r = NewReader(strings.NewReader("data: "+x+"\n\ndata: "+y+"\n\n"), 0)
	first, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if string(first.Data) != x || string(second.Data) != y {
		t.Fatal("large events read wrong, or the second overwrote the first")
	}
	if len(r.buf) != maxBufferSize {
		t.Fatalf("buffer = %d bytes after large events, want %d", len(r.buf), maxBufferSize)
	}
}
