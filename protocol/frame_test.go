package protocol

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// event is one ReadFrame outcome, in a form cmp can compare.
type event struct {
	Frame    string
	TooLarge FrameTooLargeError // a value: a pointer would be compared as an error
	Err      error
}

// readEvents reads until ReadFrame returns an error other than
// FrameTooLargeError, and returns every outcome.
func readEvents(t *testing.T, fr *FrameReader) []event {
	t.Helper()
	var events []event
	for range 10000 {
		frame, err := fr.ReadFrame()
		var tooLarge *FrameTooLargeError
		switch {
		case err == nil:
			events = append(events, event{Frame: string(frame)})
		case errors.As(err, &tooLarge):
			if !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("%v is not ErrFrameTooLarge", err)
			}
			events = append(events, event{TooLarge: *tooLarge})
		default:
			return append(events, event{Err: err})
		}
	}
	t.Fatal("reader did not end")
	return nil
}

func tooLarge(size int64, limit int, line string) FrameTooLargeError {
	return FrameTooLargeError{Size: size, Limit: limit, Prefix: []byte(line[:min(len(line), sniffSize)]), Suffix: []byte(line[max(0, len(line)-sniffSize):])}
}

func TestFrameReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	huge := `{"jsonrpc":"2.0","id":3,"result":"` + strings.Repeat("z", 9000) + `"}`
	tests := []struct {
		name    string
		input   string
		max     int
		bufSize int
		want    []event
	}{
		{
			name:  "lines",
			input: "{\"a\":1}\n{\"b\":2}\n",
			want:  []event{{Frame: `{"a":1}`}, {Frame: `{"b":2}`}, {Err: io.EOF}},
		},
		{
			name:  "crlf",
			input: "one\r\ntwo\r\n",
			want:  []event{{Frame: "one"}, {Frame: "two"}, {Err: io.EOF}},
		},
		{
			name:  "only one trailing cr is stripped",
			input: "one\r\r\n\rtwo\n",
			want:  []event{{Frame: "one\r"}, {Frame: "\rtwo"}, {Err: io.EOF}},
		},
		{
			name:  "blank lines are skipped",
			input: "\n\n  \t \n\r\na\n \r\n\nb\n\n",
			want:  []event{{Frame: "a"}, {Frame: "b"}, {Err: io.EOF}},
		},
		{
			name:  "surrounding spaces are kept",
			input: "  {} \n",
			want:  []event{{Frame: "  {} "}, {Err: io.EOF}},
		},
		{
			name:  "partial last line",
			input: "a\nlast",
			want:  []event{{Frame: "a"}, {Frame: "last"}, {Err: io.EOF}},
		},
		{
			name:  "blank partial last line",
			input: "a\n  ",
			want:  []event{{Frame: "a"}, {Err: io.EOF}},
		},
		{
			name:  "empty input",
			input: "",
			want:  []event{{Err: io.EOF}},
		},
		{
			name:  "exactly max",
			input: "12345678\n",
			max:   8,
			want:  []event{{Frame: "12345678"}, {Err: io.EOF}},
		},
		{
			name:  "exactly max with cr",
			input: "12345678\r\n",
			max:   8,
			want:  []event{{Frame: "12345678"}, {Err: io.EOF}},
		},
		{
			name:  "max plus one",
			input: "123456789\nok\n",
			max:   8,
			want:  []event{{TooLarge: tooLarge(9, 8, "123456789")}, {Frame: "ok"}, {Err: io.EOF}},
		},
		{
			name:  "max plus one at EOF",
			input: "ok\n123456789",
			max:   8,
			want:  []event{{Frame: "ok"}, {TooLarge: tooLarge(9, 8, "123456789")}, {Err: io.EOF}},
		},
		{
			name:    "long lines within the limit cross the buffer",
			input:   long + "\n" + long + "\r\n" + long,
			max:     100,
			bufSize: 16,
			want:    []event{{Frame: long}, {Frame: long}, {Frame: long}, {Err: io.EOF}},
		},
		{
			name:    "cr split from its newline by the buffer",
			input:   strings.Repeat("y", 15) + "\r\n",
			max:     15,
			bufSize: 16,
			want:    []event{{Frame: strings.Repeat("y", 15)}, {Err: io.EOF}},
		},
		{
			name:    "oversized across the buffer, then the next line",
			input:   long + "\n" + "next\n",
			max:     50,
			bufSize: 16,
			want:    []event{{TooLarge: tooLarge(100, 50, long)}, {Frame: "next"}, {Err: io.EOF}},
		},
		{
			name:    "prefix and suffix are 4 KiB of a long line",
			input:   huge + "\n{}\n",
			max:     1000,
			bufSize: 64,
			want:    []event{{TooLarge: tooLarge(int64(len(huge)), 1000, huge)}, {Frame: "{}"}, {Err: io.EOF}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bufSize := tt.bufSize
			if bufSize == 0 {
				bufSize = frameBufferSize
			}
			for _, reader := range []struct {
				name string
				r    io.Reader
			}{
				{"whole", strings.NewReader(tt.input)},
				{"one byte at a time", iotest.OneByteReader(strings.NewReader(tt.input))},
				{"data with EOF", iotest.DataErrReader(strings.NewReader(tt.input))},
			} {
				t.Run(reader.name, func(t *testing.T) {
					got := readEvents(t, newFrameReader(reader.r, tt.max, bufSize))
					if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
						t.Errorf("events mismatch (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

func TestFrameReaderDefaultLimit(t *testing.T) {
	fr := NewFrameReader(strings.NewReader(""), 0)
	if fr.max != DefaultMaxFrame {
		t.Errorf("max = %d, want %d", fr.max, DefaultMaxFrame)
	}
	fr = NewFrameReader(strings.NewReader(""), -1)
	if fr.max != DefaultMaxFrame {
		t.Errorf("max = %d, want %d", fr.max, DefaultMaxFrame)
	}
}

func TestFrameReaderFramesAreOwned(t *testing.T) {
	fr := newFrameReader(strings.NewReader("aaaa\nbbbb\ncccc\n"), 0, 16)
	first, _ := fr.ReadFrame()
	second, _ := fr.ReadFrame()
	first[0] = 'X'
	third, _ := fr.ReadFrame()
	if string(second) != "bbbb" || string(third) != "cccc" {
		t.Errorf("frames share memory: %q %q %q", first, second, third)
	}
}

func TestFrameReaderPropagatesErrors(t *testing.T) {
	boom := errors.New("pipe broke")
	r := io.MultiReader(strings.NewReader("a\nb\npartial"), iotest.ErrReader(boom))
	got := readEvents(t, newFrameReader(r, 0, 16))
	want := []event{{Frame: "a"}, {Frame: "b"}, {Err: boom}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	// The error is sticky.
	fr := newFrameReader(iotest.ErrReader(boom), 0, 16)
	for range 3 {
		if _, err := fr.ReadFrame(); err != boom {
			t.Fatalf("ReadFrame error = %v, want %v", err, boom)
		}
	}
}

func TestFrameReaderErrorInsideOversizedLine(t *testing.T) {
	boom := errors.New("pipe broke")
	r := io.MultiReader(strings.NewReader(`{"id":5,"result":"`+strings.Repeat("q", 200)), iotest.ErrReader(boom))
	fr := newFrameReader(r, 50, 16)
	_, err := fr.ReadFrame()
	var tl *FrameTooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("ReadFrame error = %v, want FrameTooLargeError", err)
	}
	if tl.Size != 218 || tl.Suffix != nil || string(tl.ID()) != "5" {
		t.Errorf("got Size %d, Suffix %q, ID %s; want 218, nil, 5", tl.Size, tl.Suffix, tl.ID())
	}
	if _, err := fr.ReadFrame(); err != boom {
		t.Errorf("next ReadFrame error = %v, want %v", err, boom)
	}
}

// endlessA produces n bytes of 'a' and no newline.
type endlessA struct{ n int64 }

var aBlock = bytes.Repeat([]byte{'a'}, 64<<10)

func (r *endlessA) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.n))
	for done := 0; done < n; {
		done += copy(p[done:n], aBlock)
	}
	r.n -= int64(n)
	return n, nil
}

func TestFrameReaderBoundsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 500 MB")
	}
	const (
		total    = 500 << 20
		maxFrame = 1 << 20
	)
	r := &endlessA{n: total}
	start := time.Now()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fr := NewFrameReader(r, maxFrame)
	_, err := fr.ReadFrame()
	_, eof := fr.ReadFrame()
	runtime.ReadMemStats(&after)

	var tl *FrameTooLargeError
	if !errors.As(err, &tl) || tl.Size != total || tl.Limit != maxFrame {
		t.Fatalf("ReadFrame error = %v, want a FrameTooLargeError of %d bytes", err, total)
	}
	if len(tl.Prefix) != sniffSize || len(tl.Suffix) != sniffSize {
		t.Errorf("prefix %d bytes, suffix %d bytes, want %d", len(tl.Prefix), len(tl.Suffix), sniffSize)
	}
	if eof != io.EOF {
		t.Errorf("then ReadFrame error = %v, want EOF", eof)
	}
	// The reader may hold maxFrame (+1 for a "\r") of the line before it
	// knows the line is too long, plus its buffer and the sniffed ends.
	allocated := after.TotalAlloc - before.TotalAlloc
	if limit := uint64(maxFrame + frameBufferSize + 3*sniffSize + 64<<10); allocated > limit {
		t.Errorf("reading a %d MB line allocated %d bytes, want at most %d", total>>20, allocated, limit)
	}
	t.Logf("500 MB line: %d bytes allocated in %v", allocated, time.Since(start))
}

// A line that runs past the discard limit with no newline is given up
// there, for good, having read no more than the limit and a buffer; a
// longer line that ends below the limit is still read past, and the next
// frame returned.
func TestFrameReaderDiscardLimit(t *testing.T) {
	const maxFrame, discardMax = 1 << 10, 1 << 20
	t.Run("endless", func(t *testing.T) {
		r := &endlessA{n: 1 << 40}
		fr := NewFrameReader(r, maxFrame)
		fr.SetDiscardLimit(discardMax)
		_, err := fr.ReadFrame()
		var tl *FrameTooLargeError
		if !errors.As(err, &tl) || !tl.Unterminated || tl.Size <= discardMax || tl.Limit != maxFrame {
			t.Fatalf("ReadFrame = %v (%+v), want an unterminated FrameTooLargeError past %d bytes", err, tl, discardMax)
		}
		if read := 1<<40 - r.n; read > discardMax+frameBufferSize {
			t.Errorf("read %d bytes of an endless line; the discard limit is %d", read, discardMax)
		}
		if !strings.Contains(err.Error(), "without a newline") {
			t.Errorf("error %q does not say the line did not end", err)
		}
		left := r.n
		if _, again := fr.ReadFrame(); again != err || r.n != left {
			t.Errorf("ReadFrame after giving up = %v (read %d more bytes), want the same error and no read", again, left-r.n)
		}
	})
	t.Run("ends below the limit", func(t *testing.T) {
		in := strings.Repeat("a", discardMax/2) + "\n{\"ok\":1}\n"
		fr := NewFrameReader(strings.NewReader(in), maxFrame)
		fr.SetDiscardLimit(discardMax)
		_, err := fr.ReadFrame()
		var tl *FrameTooLargeError
		if !errors.As(err, &tl) || tl.Unterminated || tl.Size != discardMax/2 {
			t.Fatalf("ReadFrame = %v, want a terminated FrameTooLargeError of %d bytes", err, discardMax/2)
		}
		if frame, err := fr.ReadFrame(); err != nil || string(frame) != `{"ok":1}` {
			t.Errorf("next ReadFrame = %q, %v", frame, err)
		}
	})
}
