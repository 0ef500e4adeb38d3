package harness

import (
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// samples are call latencies in nanoseconds.
type samples []int64

// summary is the distribution of a set of samples.
type summary struct {
	n                  int
	p50, p90, p99, max time.Duration
}

func (s samples) summary() summary {
	if len(s) == 0 {
		return summary{}
	}
	v := slices.Clone(s)
	slices.Sort(v)
	return summary{n: len(v), p50: time.Duration(rank(v, 0.50)), p90: time.Duration(rank(v, 0.90)), p99: time.Duration(rank(v, 0.99)), max: time.Duration(v[len(v)-1])}
}

// median is the median of values (the mean of the middle two when there
// is an even number of them), 0 for none. values is left as it was.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	v := slices.Clone(values)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// rank is the nearest-rank percentile of sorted values.
func rank(sorted []int64, p float64) int64 {
	i := int(float64(len(sorted))*p+0.999999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rssKB is this process's resident set (VmRSS), in KiB, after a GC that
// returns freed memory to the OS, so that only live memory is counted.
// Child processes are not included: they are processes of their own.
func rssKB() float64 {
	runtime.GC()
	debug.FreeOSMemory()
	return vmRSSKB()
}

// vmRSSKB is this process's resident set as it is now (no GC), in KiB.
func vmRSSKB() float64 { return statusKB("/proc/self/status", "VmRSS:") }

// statusKB reads one "Name:   N kB" line of a /proc/*/status file (0 if
// unreadable).
func statusKB(path, name string) float64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, name); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				v, _ := strconv.ParseFloat(f[0], 64)
				return v
			}
		}
	}
	return 0
}

// sampleEvery calls sample at once, then every d, on a goroutine of its
// own, until stop is called. stop returns once the last sample has
// returned; it may be called more than once.
func sampleEvery(d time.Duration, sample func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-tick.C:
			case <-quit:
				return
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(quit)
		<-done
	})
}

// rssPeakEvery is how often a peakRSS samples VmRSS.
const rssPeakEvery = 10 * time.Millisecond

// peakRSS follows this process's resident set from its start (after a GC,
// the baseline) to end, sampling VmRSS every rssPeakEvery with no GC: the
// memory a burst really took, garbage not yet returned included.
//
// It follows the anonymous part (RssAnon) apart too: the rest of VmRSS is
// file-backed, such as the pages of a store's memory-mapped files, which
// the kernel takes back under pressure like any page cache.
type peakRSS struct {
	base, peak         float64 // KiB, VmRSS
	anonBase, anonPeak float64 // KiB, RssAnon
	stop               func()
}

func watchRSS() *peakRSS {
	p := &peakRSS{base: rssKB()}
	p.peak = p.base
	p.anonBase = statusKB("/proc/self/status", "RssAnon:")
	p.anonPeak = p.anonBase
	p.stop = sampleEvery(rssPeakEvery, func() {
		p.peak = max(p.peak, vmRSSKB())
		p.anonPeak = max(p.anonPeak, statusKB("/proc/self/status", "RssAnon:"))
	})
	return p
}

// end stops the sampling and returns the peak over the baseline, in MiB.
func (p *peakRSS) end() float64 {
	p.stop()
	return (p.peak - p.base) / 1024
}

// anon is the peak of anonymous memory over its baseline, in MiB; call it
// after end.
func (p *peakRSS) anon() float64 { return (p.anonPeak - p.anonBase) / 1024 }
