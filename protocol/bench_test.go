package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

var (
	smallResponse = []byte(`{"jsonrpc":"2.0","id":4711,"result":{"content":[{"type":"text","text":"{\"temperature\":22.5,\"conditions\":\"Partly cloudy\"}"}],"structuredContent":{"temperature":22.5,"conditions":"Partly cloudy"},"isError":false}}`)
	largeResponse = []byte(`{"jsonrpc":"2.0","id":4712,"result":{"content":[{"type":"text","text":"` +
		strings.Repeat(`lorem ipsum \"dolor\" sit amet, `, 256) + `"}],"isError":false}}`)
)

// wireMessage is how one would classify with encoding/json: the baseline.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
}

func BenchmarkClassifyResponse(b *testing.B) {
	for _, frame := range []struct {
		name string
		data []byte
	}{{"small", smallResponse}, {"8KiB-text", largeResponse}} {
		b.Run(frame.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(frame.data)))
			for b.Loop() {
				msg, err := Classify(frame.data)
				if err != nil || msg.Kind != KindResponse {
					b.Fatal(err)
				}
			}
		})
		b.Run(frame.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(frame.data)))
			for b.Loop() {
				var m wireMessage
				if err := json.Unmarshal(frame.data, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendCallTool(b *testing.B) {
	args := json.RawMessage(`{"path":"/srv/data/report-2025.csv","encoding":"utf-8","maxBytes":65536}`)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for i := int64(0); b.Loop(); i++ {
		buf = AppendCallTool(buf[:0], i, "read_file", args, nil)
	}
	b.SetBytes(int64(len(buf)))
}

// repeatReader yields the same line forever.
type repeatReader struct {
	line []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.line[r.off:])
		n += c
		r.off = (r.off + c) % len(r.line)
	}
	return n, nil
}

func BenchmarkFrameReader(b *testing.B) {
	for _, frame := range []struct {
		name string
		data []byte
	}{{"small", smallResponse}, {"8KiB-text", largeResponse}} {
		b.Run(frame.name, func(b *testing.B) {
			fr := NewFrameReader(&repeatReader{line: append(frame.data, '\n')}, 0)
			b.ReportAllocs()
			b.SetBytes(int64(len(frame.data) + 1))
			for b.Loop() {
				if _, err := fr.ReadFrame(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
