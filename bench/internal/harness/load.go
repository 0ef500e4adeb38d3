package harness

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Latency is scenario 1: one caller, one server, calls one after another.
// The raw pipe is its simple form: write a line, read a line.
func Latency(ctx context.Context, env *Env) ([]Record, error) {
	return compare(ctx, env, ScenarioLatency, 1, 1, env.Sizes.LatencyCalls, false)
}

// Throughput is scenario 2: many concurrent callers on one server.
func Throughput(ctx context.Context, env *Env) ([]Record, error) {
	return compare(ctx, env, ScenarioThroughput, 1, env.Sizes.Callers, env.Sizes.ThroughputCalls, true)
}

// Fanout is scenario 3: many concurrent callers spreading their calls over
// many servers: one host with every server for mcpvisor, one session (or
// pipe) per server for the others.
func Fanout(ctx context.Context, env *Env) ([]Record, error) {
	return compare(ctx, env, ScenarioFanout, env.Sizes.FanoutServers, env.Sizes.Callers, env.Sizes.FanoutCalls, true)
}

// compare runs one load on every contender in the same run, interleaved:
// the calls are split into Rounds rounds, and in each round every contender
// runs its share in turn, starting from a different contender each round, so
// that a slow moment of the machine falls on all of them alike.
func compare(ctx context.Context, env *Env, scenario string, servers, callers, calls int, pipelined bool) ([]Record, error) {
	env.logf("%s: %d server(s), %d caller(s), %d calls per contender", scenario, servers, callers, calls)
	type run struct {
		c        client
		lat      samples
		elapsed  time.Duration
		errs     int
		firstErr error
		note     string
	}
	runs := make([]*run, len(contenders))
	for i, ct := range contenders {
		c, err := ct.connect(ctx, env, servers, pipelined)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			runs[i] = &run{note: fmt.Sprintf("could not connect: %v", err)}
			continue
		}
		runs[i] = &run{c: c, lat: make(samples, calls)}
		defer c.close()
	}
	for _, r := range runs {
		if r.c != nil {
			drive(ctx, r.c, callers, env.Sizes.WarmupCalls, servers, nil)
		}
	}
	rounds := max(1, min(env.Sizes.Rounds, calls))
	for round := range rounds {
		lo, hi := calls*round/rounds, calls*(round+1)/rounds
		for k := range runs {
			r := runs[(round+k)%len(runs)]
			if r.c == nil {
				continue
			}
			d, errs, first := drive(ctx, r.c, callers, hi-lo, servers, r.lat[lo:hi])
			r.elapsed += d
			r.errs += errs
			if r.firstErr == nil {
				r.firstErr = first
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	var recs []Record
	for i, r := range runs {
		rec := Record{Scenario: scenario, Contender: contenders[i].name(), Servers: servers, Callers: callers, Note: r.note}
		if r.c != nil {
			s := r.lat.summary()
			rec.Calls, rec.Errors = calls, r.errs
			rec.P50us, rec.P99us, rec.MaxUs = micros(s.p50), micros(s.p99), micros(s.max)
			rec.CallsPerSec = float64(calls) / r.elapsed.Seconds()
			if r.firstErr != nil {
				rec.Note = fmt.Sprintf("%d call(s) failed, first: %v", r.errs, r.firstErr)
			}
			env.logf("  %-10s p50 %7.1fµs  p99 %8.1fµs  %9.0f calls/s  errors %d", rec.Contender, rec.P50us, rec.P99us, rec.CallsPerSec, rec.Errors)
		} else {
			env.logf("  %-10s %s", rec.Contender, rec.Note)
		}
		recs = append(recs, rec)
	}
	return recs, nil
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
