package harness

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
)

// repeatFigures are what one repeat measured: one contender's calls (or
// one isolation phase's) through a fresh client.
type repeatFigures struct {
	calls, errs int
	elapsed     time.Duration // wall time of the calls
	lat         summary
	cpu         cpuUse
}

func (f repeatFigures) callsPerSec() float64 { return float64(f.calls) / f.elapsed.Seconds() }

// fillRepeats sets rec's figures from its repeats: the median of the
// repeats' p50, p90, p99, calls/s and CPU per call; the smallest and
// largest p50, and each repeat's p50, p99 and calls/s, in run order; the largest
// max; the calls and errors of all.
func fillRepeats(rec *Record, reps []repeatFigures) {
	if len(reps) == 0 {
		return
	}
	var p50, p90, p99, cps, host, user, sys, server []float64
	for _, f := range reps {
		rec.Calls += f.calls
		rec.Errors += f.errs
		rec.MaxUs = max(rec.MaxUs, micros(f.lat.max))
		p50 = append(p50, micros(f.lat.p50))
		p90 = append(p90, micros(f.lat.p90))
		p99 = append(p99, micros(f.lat.p99))
		cps = append(cps, f.callsPerSec())
		host = append(host, perHundredK(f.cpu.host(), f.calls))
		user = append(user, perHundredK(f.cpu.user, f.calls))
		sys = append(sys, perHundredK(f.cpu.sys, f.calls))
		server = append(server, perHundredK(f.cpu.children, f.calls))
	}
	rec.Repeats = len(reps)
	rec.P50us, rec.P90us, rec.P99us, rec.CallsPerSec = median(p50), median(p90), median(p99), median(cps)
	rec.P50MinUs, rec.P50MaxUs = slices.Min(p50), slices.Max(p50)
	rec.RepeatP50us, rec.RepeatP99us, rec.RepeatCallsPerSec = p50, p99, cps
	rec.HostCPU, rec.ServerCPU = median(host), median(server)
	if rec.Metrics == nil {
		rec.Metrics = map[string]float64{}
	}
	rec.Metrics["host_user_cpu_s_per_100k_calls"] = median(user)
	rec.Metrics["host_sys_cpu_s_per_100k_calls"] = median(sys)
}

// repeatOrder is the order in which n contenders run in each of repeats
// repeats: every one once per repeat, repeat r starting with contender r
// mod n, so that a contender does not always follow the same one. With two
// or fewer the order is the same in every repeat (a, b, a, b): rotating
// would run one twice in a row.
func repeatOrder(n, repeats int) [][]int {
	order := make([][]int, repeats)
	for r := range order {
		start := 0
		if n > 2 {
			start = r % n
		}
		for k := range n {
			order[r] = append(order[r], (start+k)%n)
		}
	}
	return order
}

// contenderRepeats is one contender's part of a repeated load.
type contenderRepeats struct {
	repeats      []repeatFigures
	firstErr     error  // the first failed call
	note         string // why it stopped early: it could not connect
	conns, posts int64  // the HTTP echo server's counters over the measured calls
	frameReq     int    // a raw pipe's request and reply lines (frameSizer), in bytes
	frameReply   int
}

// repeatLoad measures every contender env.Sizes.Repeats times, interleaved:
// in each repeat the contenders run one after another (repeatOrder), and
// each run is a fresh client: connect, warm up, collect the garbage of
// what ran before, make calls calls from callers goroutines while the wall
// time, the CPU time (cpuStart) and, when counters is not nil, the HTTP
// echo server's counters are taken, then close. A contender that cannot
// connect is not tried again; its record says why. It returns early only
// when ctx ends.
func repeatLoad(ctx context.Context, env *Env, cts []contender, servers, callers, calls int, pipelined bool, counters func() serverStats) ([]*contenderRepeats, error) {
	if counters == nil {
		counters = func() serverStats { return serverStats{} }
	}
	runs := make([]*contenderRepeats, len(cts))
	for i := range runs {
		runs[i] = &contenderRepeats{}
	}
	order := repeatOrder(len(cts), max(1, env.Sizes.Repeats))
	for r, repeat := range order {
		for _, i := range repeat {
			if runs[i].note != "" {
				continue
			}
			if err := runs[i].runOnce(ctx, env, cts[i], servers, callers, calls, pipelined, counters); err != nil {
				return runs, err
			}
		}
		var figs []string
		for i, cr := range runs {
			if len(cr.repeats) == r+1 {
				f := cr.repeats[r]
				figs = append(figs, fmt.Sprintf("%s %.1fµs %.0f/s %.2fs", cts[i].name(), micros(f.lat.p50), f.callsPerSec(), perHundredK(f.cpu.host(), f.calls)))
			}
		}
		env.logf("  repeat %d/%d (p50, calls/s, host CPU s per 100k calls): %s", r+1, len(order), strings.Join(figs, ", "))
	}
	return runs, nil
}

// runOnce is one repeat of ct: see repeatLoad.
func (cr *contenderRepeats) runOnce(ctx context.Context, env *Env, ct contender, servers, callers, calls int, pipelined bool, counters func() serverStats) error {
	c, err := ct.connect(ctx, env, servers, pipelined)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		cr.note = fmt.Sprintf("could not connect: %v", err)
		if len(cr.repeats) > 0 {
			cr.note = fmt.Sprintf("could not connect for repeat %d: %v", len(cr.repeats)+1, err)
		}
		return nil
	}
	defer c.close()
	drive(ctx, c, callers, env.Sizes.WarmupCalls, servers, nil)
	lat := make(samples, calls)
	// The garbage of what ran before (the last contender, this one's
	// connection and warm-up) is not collected on this one's measured time.
	runtime.GC()
	before := counters()
	cpu0 := cpuStart()
	elapsed, errs, first := drive(ctx, c, callers, calls, servers, lat)
	cpu := cpuSince(cpu0)
	after := counters()
	cr.repeats = append(cr.repeats, repeatFigures{calls: calls, errs: errs, elapsed: elapsed, lat: lat.summary(), cpu: cpu})
	cr.conns += after.Conns - before.Conns
	cr.posts += after.Posts - before.Posts
	if cr.firstErr == nil {
		cr.firstErr = first
	}
	if fs, ok := c.(frameSizer); ok {
		cr.frameReq, cr.frameReply = fs.frameBytes()
	}
	return ctx.Err()
}

// record is the contender's record of scenario: its repeats' medians
// (fillRepeats); with http, the connections the echo server accepted and
// the POSTs it answered per call during the measured calls; for a raw
// pipe, its lines' sizes.
func (cr *contenderRepeats) record(scenario, name string, servers, callers int, http bool) Record {
	rec := Record{Scenario: scenario, Contender: name, Servers: servers, Callers: callers}
	fillRepeats(&rec, cr.repeats)
	var notes []string
	if cr.firstErr != nil {
		notes = append(notes, fmt.Sprintf("%d call(s) failed, first: %v", rec.Errors, cr.firstErr))
	}
	if cr.note != "" {
		notes = append(notes, cr.note)
	}
	rec.Note = strings.Join(notes, "; ")
	if len(cr.repeats) == 0 {
		return rec
	}
	if http {
		rec.Metrics["conns_opened"] = float64(cr.conns)
		rec.Metrics["posts_per_call"] = float64(cr.posts) / float64(rec.Calls)
	}
	if cr.frameReq > 0 {
		rec.Metrics["request_bytes"], rec.Metrics["reply_bytes"] = float64(cr.frameReq), float64(cr.frameReply)
	}
	return rec
}
