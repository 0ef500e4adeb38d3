package mcpvisor_test

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// processCPU is the CPU time this process has used, user and system: the
// host's, Badger's goroutines included, the server subprocess's not.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the process's CPU per op since start, and the calls/s.
func reportCPU(b *testing.B, cpu0 time.Duration, start time.Time) {
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

// BenchmarkCallHistoryCPU is the CPU per call of 64 callers on one server
// with call history on and off, beside the pipelined raw client's (the
// bench's floor: its process's CPU per call): what the history costs.
func BenchmarkCallHistoryCPU(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		cpu0, start := processCPU(b), time.Now()
		BenchmarkRawPipeParallel(b)
		reportCPU(b, cpu0, start)
	})
	for _, c := range []struct {
		name string
		opts mcpvisor.JournalOptions
	}{
		{"history", mcpvisor.JournalOptions{}},
		{"no-history", mcpvisor.JournalOptions{NoCallHistory: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := benchHost(b, c.opts)
			ctx := context.Background()
			args := json.RawMessage(`{"n":1}`)
			b.SetParallelism(32)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, start := processCPU(b), time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := h.Call(ctx, "mcp__b__echo", args); err != nil {
						b.Fatal(err)
					}
				}
			})
			if c.opts.NoCallHistory {
				reportCPU(b, cpu0, start)
				return
			}
			// The calls' records are the journal's work too: count the CPU
			// until they are committed.
			if err := h.Journal().Write(ctx); err != nil {
				b.Fatal(err)
			}
			reportCPU(b, cpu0, start)
		})
	}
}
