package sse

import (
	"bytes"
	"io"
	"testing"
)

// repeatReader yields data over and over, without allocating.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

func BenchmarkNext(b *testing.B) {
	for _, bm := range []struct {
		name  string
		event []byte
	}{
		{"response", []byte("id: 1f0c6e2a-17\nevent: message\ndata: " +
			`{"jsonrpc":"2.0","id":4711,"result":{"content":[{"type":"text","text":"{\"temperature\":22.5,\"conditions\":\"Partly cloudy\"}"}],"structuredContent":{"temperature":22.5,"conditions":"Partly cloudy"},"isError":false}}` +
			"\n\n")},
		{"8KiB-response", []byte("id: 1f0c6e2a-18\nevent: message\ndata: " +
			`{"jsonrpc":"2.0","id":4712,"result":{"content":[{"type":"text","text":"` +
			string(bytes.Repeat([]byte(`lorem ipsum \"dolor\" sit amet, `), 256)) + `"}],"isError":false}}` +
			"\n\n")},
	} {
		b.Run(bm.name, func(b *testing.B) {
			var rd io.Reader = &repeatReader{data: bm.event}
			r := NewReader(rd, 0)
			b.SetBytes(int64(len(bm.event)))
			b.ReportAllocs()
			for b.Loop() {
				ev, err := r.Next()
				if err != nil || len(ev.Data) == 0 {
					b.Fatalf("Next = %q, %v", ev.Data, err)
				}
			}
		})
	}
}
