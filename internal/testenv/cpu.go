package testenv

import "testing"

// ReportCPU adds this process's CPU time per operation (cpu-ns/op) from now
// until the function it returns runs: a benchmark's CPU cost, which a busy
// machine blurs less than its wall time. Where the system does not tell the
// CPU time, it adds nothing.
func ReportCPU(b *testing.B) func() {
	start, ok := ProcessCPU()
	return func() {
		if end, ok2 := ProcessCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
