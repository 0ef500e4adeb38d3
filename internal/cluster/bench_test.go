package cluster

import (
	"context"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// BenchmarkForward is a forwarded request and its answer between two
// members on loopback (no TLS), with a handler that answers at once: the
// hop alone, what a call to a server on another member adds.
func BenchmarkForward(b *testing.B) {
	nodes := testNodes(b, 2)
	body := []byte(`{"server":"s1","tool":"echo","params":{"name":"echo","arguments":{"n":1}}}`)
	ctx := context.Background()
	to := nodes[1].Self()
	b.Run("one", func(b *testing.B) {
		b.ReportAllocs()
		defer testenv.ReportCPU(b)()
		for b.Loop() {
			if _, err := nodes[0].Forward(ctx, to, body, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(32)
		defer testenv.ReportCPU(b)()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := nodes[0].Forward(ctx, to, body, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
