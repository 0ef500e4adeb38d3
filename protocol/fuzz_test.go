package protocol

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// classifySeeds are frames of every shape, for the fuzzers' seed corpus (more
// live in testdata/fuzz).
var classifySeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}`,
	`{"result":{"a":[1,2.5e-3,true,false,null,"\u00e9\n"]},"jsonrpc":"2.0","id":"x"}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":[1]}}`,
	`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"}}`,
	`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"messages":[]}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
	`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1}`,
	`[{"jsonrpc":"2.0","id":1,"result":{}}]`,
	`{"id":1,"result":{}}`,
	`{"jsonrpc":"1.0","id":1,"result":{}}`,
	`{"json\u0072pc":"2.0","\u0069d":5,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`,
	`Listening on stdio...`,
	` {"jsonrpc" : "2.0", "method":"x"} `,
	`{"jsonrpc":"2.0","id":1,"result":{"a":[[[[{"b":[]}]]]]}} x`,
}

func FuzzClassify(f *testing.F) {
	for _, s := range classifySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		got, err := Classify(frame)
		ref, refErr := referenceClassify(frame)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("Classify(%q) error = %v, reference error = %v", frame, err, refErr)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidMessage) || got.Kind != KindInvalid {
				t.Fatalf("Classify(%q) = %v, %v", frame, got.Kind, err)
			}
			return
		}
		if diff := cmp.Diff(ref, got); diff != "" {
			t.Fatalf("Classify(%q) mismatch (-reference +got):\n%s", frame, diff)
		}
		switch got.Kind {
		case KindResponse:
			if got.Method != "" || (got.Result == nil) == (got.Error == nil) {
				t.Fatalf("bad response %+v", got)
			}
		case KindRequest:
			if got.ID == nil || isNull(got.ID) {
				t.Fatalf("request without id: %+v", got)
			}
		case KindNotification:
			if got.ID != nil {
				t.Fatalf("notification with id: %+v", got)
			}
		default:
			t.Fatalf("kind %v without error", got.Kind)
		}
		checkSniffers(t, frame, got)
		checkReencode(t, got)
	})
}

// checkSniffers asserts that on any prefix or suffix of a valid frame, the
// sniffers find the frame's id or nothing.
func checkSniffers(t *testing.T, frame []byte, msg Message) {
	var id []byte
	if msg.ID != nil && !isNull(msg.ID) {
		id = msg.ID
	}
	if got := SniffID(frame); got != nil && !bytes.Equal(got, id) {
		t.Fatalf("SniffID(%q) = %s, want %s", frame, got, id)
	}
	step := max(1, len(frame)/64)
	for k := 0; k <= len(frame); k += step {
		if got := SniffID(frame[:k]); got != nil && !bytes.Equal(got, id) {
			t.Fatalf("SniffID(%q) = %s, want %s or nil", frame[:k], got, id)
		}
		if got := SniffTrailingID(frame[k:]); got != nil && !bytes.Equal(got, id) {
			t.Fatalf("SniffTrailingID(%q) = %s, want %s or nil", frame[k:], got, id)
		}
	}
}

// checkReencode asserts the encoders reproduce a classified message.
func checkReencode(t *testing.T, msg Message) {
	var frame []byte
	switch {
	case msg.Kind == KindRequest:
		id, ok := msg.IntID()
		if !ok {
			return
		}
		frame = AppendRequest(nil, id, msg.Method, msg.Params)
	case msg.Kind == KindNotification:
		frame = AppendNotification(nil, msg.Method, msg.Params)
	case msg.Result != nil:
		frame = AppendResult(nil, msg.ID, msg.Result)
	default:
		frame = AppendError(nil, msg.ID, msg.Error.Code, msg.Error.Message, msg.Error.Data)
	}
	if bytes.IndexByte(frame, '\n') >= 0 {
		t.Fatalf("encoded frame holds a newline: %q", frame)
	}
	again, err := Classify(frame)
	if err != nil {
		t.Fatalf("re-encoded %q: %v", frame, err)
	}
	// Raw newlines come back as spaces, and nothing else changes.
	want := msg
	want.Params = newlinesToSpaces(msg.Params)
	want.Result = newlinesToSpaces(msg.Result)
	if msg.Error != nil {
		e := *msg.Error
		e.Data = newlinesToSpaces(e.Data)
		if isBlank(e.Data) {
			e.Data = nil
		}
		want.Error = &e
	}
	if want.Kind == KindResponse && want.Error != nil && want.ID == nil {
		want.ID = raw(`null`)
	}
	if diff := cmp.Diff(want, again); diff != "" {
		t.Fatalf("re-encoded %q mismatch (-want +got):\n%s", frame, diff)
	}
}

func newlinesToSpaces(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.ReplaceAll(b, []byte("\n"), []byte(" "))
}

// chunkReader returns its data in reads of 1, 2, …, n bytes, round and round.
type chunkReader struct {
	data []byte
	n, k int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	r.k = r.k%r.n + 1
	c := copy(p[:min(len(p), r.k)], r.data)
	r.data = r.data[c:]
	return c, nil
}

// referenceFrames is FrameReader's contract computed on the whole input.
func referenceFrames(data []byte, limit int) []event {
	var events []event
	lines := bytes.Split(data, []byte("\n"))
	for i, line := range lines {
		if i == len(lines)-1 && len(line) == 0 {
			break
		}
		frame := bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(frame) > limit:
			events = append(events, event{TooLarge: FrameTooLargeError{
				Size: int64(len(line)), Limit: limit,
				Prefix: bytes.Clone(line[:min(len(line), sniffSize)]),
				Suffix: bytes.Clone(line[max(0, len(line)-sniffSize):]),
			}})
		case isLineBlank(line):
		default:
			events = append(events, event{Frame: string(frame)})
		}
	}
	return append(events, event{Err: io.EOF})
}

func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n\n  \r\nlast"), uint16(8), uint8(0), uint8(3))
	f.Add([]byte("123456789\r\n12345678\r\n\r\n1234567\r"), uint16(8), uint8(0), uint8(1))
	f.Add(bytes.Repeat([]byte("x\r"), 200), uint16(40), uint8(5), uint8(16))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16, bufSize, chunk uint8) {
		max := int(limit%512) + 1
		r := &chunkReader{data: data, n: int(chunk%32) + 1}
		fr := newFrameReader(r, max, 16+int(bufSize%64))
		got := readEvents(t, fr)
		want := referenceFrames(data, max)
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
			t.Fatalf("max %d: events mismatch (-want +got):\n%s", max, diff)
		}
	})
}

// FuzzFrameReaderDiscardLimit reads with a discard limit: the events are
// those of a reader without one, up to a line it gives up, which must be
// an oversized line that ran past the limit, after which every call
// returns that same error.
func FuzzFrameReaderDiscardLimit(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n"+strings.Repeat("x", 300)+"\n{\"b\":2}\n"), uint16(8), uint8(0), uint8(3), uint16(100))
	f.Add([]byte(strings.Repeat("y", 100)+"\nlast"), uint16(8), uint8(5), uint8(31), uint16(200))
	f.Add([]byte(strings.Repeat("z\r", 400)), uint16(4), uint8(1), uint8(7), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16, bufSize, chunk uint8, discard uint16) {
		max := int(limit%512) + 1
		discardMax := int64(max) + int64(discard%1024)
		fr := newFrameReader(&chunkReader{data: data, n: int(chunk%32) + 1}, max, 16+int(bufSize%64))
		fr.SetDiscardLimit(discardMax)
		want := referenceFrames(data, max)
		for i := 0; ; i++ {
			frame, err := fr.ReadFrame()
			var tl *FrameTooLargeError
			switch {
			case errors.As(err, &tl) && tl.Unterminated:
				if i >= len(want) || want[i].TooLarge.Size < tl.Size || tl.Size <= discardMax {
					t.Fatalf("event %d: gave up a line at %d bytes (discard limit %d); the reference has %+v", i, tl.Size, discardMax, want[min(i, len(want)-1)])
				}
				if _, again := fr.ReadFrame(); again != err {
					t.Fatalf("after giving up: %v, want the same error", again)
				}
				return
			case i >= len(want):
				t.Fatalf("event %d past the reference's %d", i, len(want))
			}
			got := event{Frame: string(frame), Err: err}
			if tl != nil {
				got = event{TooLarge: *tl}
			}
			if diff := cmp.Diff(want[i], got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Fatalf("event %d (-want +got):\n%s", i, diff)
			}
			if err != nil && tl == nil {
				return
			}
		}
	})
}
