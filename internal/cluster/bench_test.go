package cluster

import (
	"context"
	"syscall"
	"testing"
	"time"
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
		cpu := startCPU()
		defer cpu.report(b)
		for b.Loop() {
			if _, err := nodes[0].Forward(ctx, to, body, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(32)
		cpu := startCPU()
		defer cpu.report(b)
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

// cpuClock is this process's CPU time (user and system) from a start: a
// benchmark's CPU per operation, which a busy machine blurs less than its
// wall time.
type cpuClock struct{ start time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock{processCPU()} }

// report adds the CPU time per operation since the start to b's figures.
func (c cpuClock) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-c.start)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	}
}
