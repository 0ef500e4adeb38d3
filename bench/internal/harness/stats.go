package harness

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"time"
)

// samples are call latencies in nanoseconds.
type samples []int64

// summary is the distribution of a set of samples.
type summary struct {
	n             int
	p50, p99, max time.Duration
}

func (s samples) summary() summary {
	if len(s) == 0 {
		return summary{}
	}
	v := slices.Clone(s)
	slices.Sort(v)
	return summary{n: len(v), p50: time.Duration(rank(v, 0.50)), p99: time.Duration(rank(v, 0.99)), max: time.Duration(v[len(v)-1])}
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
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			fields := bytes.Fields(rest)
			if len(fields) > 0 {
				v, _ := strconv.ParseFloat(string(fields[0]), 64)
				return v
			}
		}
	}
	return 0
}
