package harness

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Latency is scenario 1: one caller, one server, calls one after another.
// The raw floor is its synchronous form: write a line, read a line. The
// sidecar contenders run here and in Throughput, and so do the modern-era
// contenders (2026-07-28), in the same repeats as the legacy ones.
func Latency(ctx context.Context, env *Env) ([]Record, error) {
	return compare(ctx, env, ScenarioLatency, loadContenders, 1, env.Sizes.LatencyCalls, nil)
}

// Throughput is scenario 2: many concurrent callers on one server. The raw
// floor is its pipelined form: one writer lock, one reader goroutine per
// pipe.
func Throughput(ctx context.Context, env *Env) ([]Record, error) {
	return compare(ctx, env, ScenarioThroughput, loadContenders, env.Sizes.Callers, env.Sizes.ThroughputCalls, nil)
}

// Fanout is scenario 3: many concurrent callers spreading their calls over
// many servers: one host with every server for mcpvisor, one session (or
// pipe) per server for the others. Unlike the other load scenarios it
// connects each contender once and interleaves rounds (interleave).
func Fanout(ctx context.Context, env *Env) ([]Record, error) {
	servers, callers, calls := env.Sizes.FanoutServers, env.Sizes.Callers, env.Sizes.FanoutCalls
	env.logf("%s: %d server(s), %d caller(s), %d calls per contender", ScenarioFanout, servers, callers, calls)
	runs, err := interleave(ctx, env, contenders, servers, callers, calls, true, nil)
	defer closeRuns(runs)
	if err != nil {
		return nil, err
	}
	var recs []Record
	for i, r := range runs {
		rec := r.record(ScenarioFanout, contenders[i].name(), servers, callers, calls)
		if fs, ok := r.c.(frameSizer); ok {
			req, reply := fs.frameBytes()
			rec.Metrics = map[string]float64{"request_bytes": float64(req), "reply_bytes": float64(reply)}
		}
		logRecord(env, rec)
		recs = append(recs, rec)
	}
	return recs, nil
}

// LatencyHTTP is scenario 7: scenario 1 over Streamable HTTP, every
// contender on the one echo server process (echoserver -http).
func LatencyHTTP(ctx context.Context, env *Env) ([]Record, error) {
	return compareHTTP(ctx, env, ScenarioLatencyHTTP, 1, env.Sizes.LatencyCalls)
}

// ThroughputHTTP is scenario 8: scenario 2 over Streamable HTTP.
func ThroughputHTTP(ctx context.Context, env *Env) ([]Record, error) {
	return compareHTTP(ctx, env, ScenarioThroughputHTTP, env.Sizes.Callers, env.Sizes.ThroughputCalls)
}

func compareHTTP(ctx context.Context, env *Env, scenario string, callers, calls int) ([]Record, error) {
	srv, err := startEchoHTTP(ctx, env, false)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	e := *env
	e.httpURL = srv.url
	return compare(ctx, &e, scenario, httpContenders, callers, calls, srv)
}

// compare runs one load on one server for every contender, env.Sizes.Repeats
// times, interleaved (repeatLoad), and returns one record per contender
// with the medians of its repeats. With one caller the raw floor is
// synchronous, with more it is pipelined. With srv (the HTTP echo server),
// the records have the connections the server accepted and the POSTs it
// answered during each contender's measured calls.
func compare(ctx context.Context, env *Env, scenario string, contenders []contender, callers, calls int, srv *echoHTTP) ([]Record, error) {
	env.logf("%s: 1 server, %d caller(s), %d calls per contender in each of %d repeats", scenario, callers, calls, env.Sizes.Repeats)
	var counters func() serverStats
	if srv != nil {
		counters = func() serverStats {
			st, err := srv.counters()
			if err != nil {
				env.logf("  reading the echo server's counters: %v", err)
			}
			return st
		}
	}
	runs, err := repeatLoad(ctx, env, contenders, 1, callers, calls, callers > 1, counters)
	if err != nil {
		return nil, err
	}
	var recs []Record
	for i, cr := range runs {
		rec := cr.record(scenario, contenders[i].name(), 1, callers, srv != nil)
		logRecord(env, rec)
		recs = append(recs, rec)
	}
	return recs, nil
}

// logRecord logs a load record's figures, or why it has none.
func logRecord(env *Env, rec Record) {
	if !ran(&rec) {
		env.logf("  %-16s %s", rec.Contender, rec.Note)
		return
	}
	spread := ""
	if rec.Repeats > 0 {
		spread = fmt.Sprintf(" (%.1f–%.1f)", rec.P50MinUs, rec.P50MaxUs)
	}
	env.logf("  %-16s p50 %7.1fµs%s  p90 %8.1fµs  p99 %8.1fµs  %9.0f calls/s  CPU s per 100k calls: host %.2f, servers %.2f  errors %d%s",
		rec.Contender, rec.P50us, spread, rec.P90us, rec.P99us, rec.CallsPerSec, rec.HostCPU, rec.ServerCPU, rec.Errors, connNote(rec))
}

// contenderRun is one contender's part of an interleaved load: its client
// (nil if it could not connect, note saying why), every call's latency in
// call order (round k of n made lat[lo:hi], lo, hi = roundSpan(calls, n,
// k)), and the wall time, failures and counters of its measured calls.
type contenderRun struct {
	c            client
	lat          samples
	elapsed      time.Duration
	cpu          cpuUse // over its measured calls, summed
	errs         int
	firstErr     error
	note         string
	conns, posts int64
}

// record is the run's figures as a record of scenario, without metrics.
func (r *contenderRun) record(scenario, name string, servers, callers, calls int) Record {
	rec := Record{Scenario: scenario, Contender: name, Servers: servers, Callers: callers, Note: r.note}
	if r.c == nil {
		return rec
	}
	s := r.lat.summary()
	rec.Calls, rec.Errors = calls, r.errs
	rec.P50us, rec.P90us, rec.P99us, rec.MaxUs = micros(s.p50), micros(s.p90), micros(s.p99), micros(s.max)
	rec.CallsPerSec = float64(calls) / r.elapsed.Seconds()
	rec.HostCPU, rec.ServerCPU = perHundredK(r.cpu.host(), calls), perHundredK(r.cpu.children, calls)
	if r.firstErr != nil {
		rec.Note = fmt.Sprintf("%d call(s) failed, first: %v", r.errs, r.firstErr)
	}
	return rec
}

// rounds is how many rounds interleave splits calls calls into.
func rounds(env *Env, calls int) int { return max(1, min(env.Sizes.Rounds, calls)) }

// roundSpan is the calls of round k of n: calls[lo:hi].
func roundSpan(calls, n, k int) (lo, hi int) { return calls * k / n, calls * (k + 1) / n }

// interleave connects every contender, warms each up, then runs the load
// on all of them in the same run, interleaved: the calls are split into
// rounds (see rounds), and in each round every contender runs its share in
// turn, starting from a different contender each round, so that a slow
// moment of the machine falls on all of them alike. counters, when not nil,
// is read before and after each contender's share: the connections
// accepted and the POSTs answered in between are the contender's; so is
// the CPU time taken meanwhile (the other contenders, connected, are
// idle). The caller closes the runs (closeRuns), also when interleave
// fails. The fan-out and gateway scenarios use it; the others repeat
// (repeatLoad).
func interleave(ctx context.Context, env *Env, contenders []contender, servers, callers, calls int, pipelined bool, counters func() serverStats) ([]*contenderRun, error) {
	if counters == nil {
		counters = func() serverStats { return serverStats{} }
	}
	runs := make([]*contenderRun, len(contenders))
	for i, ct := range contenders {
		c, err := ct.connect(ctx, env, servers, pipelined)
		if err != nil {
			if ctx.Err() != nil {
				return runs, ctx.Err()
			}
			runs[i] = &contenderRun{note: fmt.Sprintf("could not connect: %v", err)}
			continue
		}
		runs[i] = &contenderRun{c: c, lat: make(samples, calls)}
	}
	for _, r := range runs {
		if r.c != nil {
			drive(ctx, r.c, callers, env.Sizes.WarmupCalls, servers, nil)
		}
	}
	n := rounds(env, calls)
	for round := range n {
		lo, hi := roundSpan(calls, n, round)
		for k := range runs {
			r := runs[(round+k)%len(runs)]
			if r.c == nil {
				continue
			}
			before := counters()
			cpu0 := cpuStart()
			d, errs, first := drive(ctx, r.c, callers, hi-lo, servers, r.lat[lo:hi])
			cpu := cpuSince(cpu0)
			after := counters()
			r.conns += after.Conns - before.Conns
			r.posts += after.Posts - before.Posts
			r.cpu.user += cpu.user
			r.cpu.sys += cpu.sys
			r.cpu.children += cpu.children
			r.elapsed += d
			r.errs += errs
			if r.firstErr == nil {
				r.firstErr = first
			}
		}
		if err := ctx.Err(); err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// closeRuns closes the clients of runs (some of which may be nil).
func closeRuns(runs []*contenderRun) {
	for _, r := range runs {
		if r != nil && r.c != nil {
			r.c.close()
		}
	}
}

// A frameSizer is a client that knows the size of a call's lines (the raw
// pipe): the report shows what the modern _meta adds to them.
type frameSizer interface {
	frameBytes() (request, reply int)
}

// drive makes calls calls on c from callers goroutines, call k going to
// server k mod servers, and stores call k's latency in lat[k] when lat is
// not nil. It returns the wall time, the failures and the first failure.
func drive(ctx context.Context, c client, callers, calls, servers int, lat []int64) (time.Duration, int, error) {
	var next, failed atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	start := time.Now()
	for range min(callers, max(calls, 1)) {
		wg.Go(func() {
			for {
				k := next.Add(1) - 1
				if k >= int64(calls) || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				err := c.call(ctx, int(k%int64(servers)))
				if lat != nil {
					lat[k] = int64(time.Since(t0))
				}
				if err != nil {
					failed.Add(1)
					once.Do(func() { first = err })
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), int(failed.Load()), first
}

// connNote is the HTTP counters of a record, or the raw pipe's line sizes,
// for the log.
func connNote(rec Record) string {
	m := rec.Metrics
	if _, ok := m["posts_per_call"]; ok {
		return fmt.Sprintf(" conns opened %.0f, POSTs/call %.2f", m["conns_opened"], m["posts_per_call"])
	}
	if _, ok := m["request_bytes"]; ok {
		return fmt.Sprintf(" %.0f-byte calls, %.0f-byte replies", m["request_bytes"], m["reply_bytes"])
	}
	return ""
}
