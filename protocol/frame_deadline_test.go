package protocol

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// errDeadline is what an *os.File read returns when its deadline passes.
var errDeadline = &fs.PathError{Op: "read", Path: "|0", Err: os.ErrDeadlineExceeded}

// cutReader replays data in the reads its script says: each script byte is
// one Read, a deadline error when it is 0 mod 4, else up to b%32+1 bytes.
// Past the script it returns the rest in reads of 7 bytes.
type cutReader struct {
	data   []byte
	script []byte
	cuts   int // deadline errors returned
}

func (r *cutReader) Read(p []byte) (int, error) {
	n := 7
	if len(r.script) > 0 {
		b := r.script[0]
		r.script = r.script[1:]
		if b%4 == 0 {
			r.cuts++
			return 0, errDeadline
		}
		n = int(b%32) + 1
	}
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n = copy(p[:min(len(p), n)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// readThroughDeadlines reads like readEvents, calling again after each
// deadline error, and counts those errors.
func readThroughDeadlines(t *testing.T, fr *FrameReader) (events []event, deadlines int) {
	t.Helper()
	for range 100000 {
		frame, err := fr.ReadFrame()
		var tooLarge *FrameTooLargeError
		switch {
		case err == nil:
			events = append(events, event{Frame: string(frame)})
		case errors.Is(err, os.ErrDeadlineExceeded):
			deadlines++
		case errors.As(err, &tooLarge):
			events = append(events, event{TooLarge: *tooLarge})
		default:
			return append(events, event{Err: err}), deadlines
		}
	}
	t.Fatal("reader did not end")
	return nil, 0
}

// A deadline anywhere, in a short line, a long one, an oversized one or
// between lines, costs nothing: the frames are those of the whole input,
// and every deadline reaches the caller once.
func TestFrameReaderResumesAfterDeadline(t *testing.T) {
	long := strings.Repeat("x", 100)
	over := `{"id":9,"result":"` + strings.Repeat("q", 200) + `"}`
	tests := []struct {
		name    string
		input   string
		script  []byte // see cutReader
		max     int
		bufSize int
		want    []event
	}{
		{
			name:   "mid-line",
			input:  "{\"a\":1}\n{\"b\":2}\n",
			script: []byte{3, 0, 0, 31},
			want:   []event{{Frame: `{"a":1}`}, {Frame: `{"b":2}`}, {Err: io.EOF}},
		},
		{
			name:   "between lines",
			input:  "one\ntwo\n",
			script: []byte{3, 0, 3},
			want:   []event{{Frame: "one"}, {Frame: "two"}, {Err: io.EOF}},
		},
		{
			name:   "between the cr and its newline",
			input:  "one\r\ntwo\n",
			script: []byte{3, 0, 1, 0},
			want:   []event{{Frame: "one"}, {Frame: "two"}, {Err: io.EOF}},
		},
		{
			name:    "a long line across the buffer",
			input:   long + "\n" + "next\n",
			script:  []byte{15, 0, 15, 15, 0, 0, 15, 15, 15, 15, 0},
			max:     100,
			bufSize: 16,
			want:    []event{{Frame: long}, {Frame: "next"}, {Err: io.EOF}},
		},
		{
			name:    "an oversized line",
			input:   over + "\n" + "next\n",
			script:  []byte{15, 0, 31, 31, 0, 31, 31, 0, 31, 31, 31, 31, 31, 0},
			max:     50,
			bufSize: 16,
			want:    []event{{TooLarge: tooLarge(int64(len(over)), 50, over)}, {Frame: "next"}, {Err: io.EOF}},
		},
		{
			name:   "the last line, without its newline",
			input:  "a\nlast",
			script: []byte{2, 0, 1, 0, 31},
			want:   []event{{Frame: "a"}, {Frame: "last"}, {Err: io.EOF}},
		},
		{
			name:   "a blank line",
			input:  "  \t\r\nb\n",
			script: []byte{1, 0, 1, 0},
			want:   []event{{Frame: "b"}, {Err: io.EOF}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bufSize := tt.bufSize
			if bufSize == 0 {
				bufSize = frameBufferSize
			}
			r := &cutReader{data: []byte(tt.input), script: tt.script}
			got, deadlines := readThroughDeadlines(t, newFrameReader(r, tt.max, bufSize))
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
			if r.cuts == 0 || deadlines != r.cuts {
				t.Errorf("%d deadline errors returned, %d met", deadlines, r.cuts)
			}
		})
	}
}

// Other errors stay sticky and still drop the partial line, after a
// deadline as before one.
func TestFrameReaderErrorAfterDeadline(t *testing.T) {
	boom := errors.New("pipe broke")
	r := io.MultiReader(&cutReader{data: []byte("a\npart"), script: []byte{1, 0, 1, 0, 3}}, errReader{boom})
	got, _ := readThroughDeadlines(t, newFrameReader(r, 0, 16))
	want := []event{{Frame: "a"}, {Err: boom}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// On a real pipe: a deadline set while ReadFrame waits in the middle of a
// line takes it out of its Read, and the line is whole at the next call.
func TestFrameReaderDeadlineOnPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fr := NewFrameReader(r, 0)
	if _, err := w.WriteString(`{"jsonrpc":"2.0",`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := fr.ReadFrame()
		done <- err
	}()
	// Whether the Read has taken the first half yet or not, the deadline
	// ends it and nothing is lost.
	r.SetReadDeadline(time.Now())
	if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadFrame = %v, want a deadline error", err)
	}
	r.SetReadDeadline(time.Time{})
	if _, err := w.WriteString(`"method":"ping"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	frame, err := fr.ReadFrame()
	if err != nil || string(frame) != `{"jsonrpc":"2.0","method":"ping"}` {
		t.Errorf("ReadFrame = %q, %v", frame, err)
	}
}

// FuzzFrameReaderDeadlines interrupts the reader with deadline errors at
// the points script chooses: the frames must be those of the whole input,
// and every deadline must reach the caller exactly once.
func FuzzFrameReaderDeadlines(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n\n  \r\nlast"), uint16(8), uint8(0), []byte{0, 1, 0, 2, 0})
	f.Add([]byte("123456789\r\n12345678\r\n\r\n1234567\r"), uint16(8), uint8(0), []byte{4, 9, 0, 0, 13})
	f.Add(bytes.Repeat([]byte("x\r"), 200), uint16(40), uint8(5), []byte{31, 0, 31, 0, 31, 31, 0})
	f.Fuzz(func(t *testing.T, data []byte, limit uint16, bufSize uint8, script []byte) {
		max := int(limit%512) + 1
		r := &cutReader{data: data, script: script}
		got, deadlines := readThroughDeadlines(t, newFrameReader(r, max, 16+int(bufSize%64)))
		want := referenceFrames(data, max)
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
			t.Fatalf("max %d: events mismatch (-want +got):\n%s", max, diff)
		}
		if deadlines != r.cuts {
			t.Fatalf("%d deadline errors returned, %d met", deadlines, r.cuts)
		}
	})
}
