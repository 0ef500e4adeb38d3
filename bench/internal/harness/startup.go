package harness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Startup is scenario 5: n servers started at once, timed until every one
// has answered initialize and tools/list (for mcpvisor: from Open until
// WaitReady returns). The raw contender spawns and handshakes the same
// servers with no host: the time the processes themselves need to be ready,
// which the host's figure is compared with. The host's resident memory is
// read before and after (children are processes of their own, not counted).
func Startup(ctx context.Context, env *Env) ([]Record, error) {
	n := env.Sizes.StartupServers
	env.logf("%s: %d servers at once, %d run(s) per contender", ScenarioStartup, n, env.Sizes.StartupRuns)
	type result struct {
		ready, closing []float64 // ms
		rssPer         []float64 // KiB per server
		note           string
	}
	results := make([]result, len(contenders))
	for run := range env.Sizes.StartupRuns {
		for k := range contenders {
			i := (run + k) % len(contenders)
			m, err := measureStart(ctx, env, contenders[i], n)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				results[i].note = err.Error()
				continue
			}
			results[i].ready = append(results[i].ready, millis(m.ready))
			results[i].closing = append(results[i].closing, millis(m.closing))
			results[i].rssPer = append(results[i].rssPer, (m.rssAfter-m.rssBefore)/float64(n))
		}
	}
	var recs []Record
	rawReady := median(results[0].ready)
	for i, r := range results {
		rec := Record{Scenario: ScenarioStartup, Contender: contenders[i].name(), Servers: n, Note: r.note}
		if len(r.ready) > 0 {
			rec.Metrics = map[string]float64{
				"ready_ms":           median(r.ready),
				"ready_ms_worst_run": slices.Max(r.ready),
				"after_processes_ms": median(r.ready) - rawReady,
				"close_ms":           median(r.closing),
				"rss_per_server_kb":  median(r.rssPer),
				"runs":               float64(len(r.ready)),
			}
			env.logf("  %-10s ready in %7.1f ms (%+.1f ms after the processes), %6.1f KiB/server, closed in %.1f ms",
				rec.Contender, rec.Metrics["ready_ms"], rec.Metrics["after_processes_ms"], rec.Metrics["rss_per_server_kb"], rec.Metrics["close_ms"])
		} else {
			rec.Errors = 1
			env.logf("  %-10s %s", rec.Contender, rec.Note)
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// startMeasure is one start of n servers by one contender.
type startMeasure struct {
	ready, closing      time.Duration
	rssBefore, rssAfter float64 // KiB
	c                   client  // open when measureStart was asked to keep it
}

// measureStart starts n servers through ct, reads the host's memory once
// they are ready, and closes them.
func measureStart(ctx context.Context, env *Env, ct contender, n int) (startMeasure, error) {
	m, err := startOpen(ctx, env, ct, n)
	if err != nil {
		return m, err
	}
	t0 := time.Now()
	err = m.c.close()
	m.closing = time.Since(t0)
	return m, err
}

// startOpen is measureStart without the close: the client is left in m.c.
func startOpen(ctx context.Context, env *Env, ct contender, n int) (startMeasure, error) {
	var m startMeasure
	m.rssBefore = rssKB()
	t0 := time.Now()
	c, err := ct.connect(ctx, env, n, false)
	m.ready = time.Since(t0)
	if err != nil {
		return m, fmt.Errorf("%s: starting %d servers: %w", ct.name(), n, err)
	}
	m.rssAfter = rssKB()
	m.c = c
	return m, nil
}

// Scale is scenario 6: many servers supervised at once by one host: how long
// until all are ready, the host's memory, and calls to random servers. The
// raw contender's spawn-and-handshake of as many servers is the floor.
func Scale(ctx context.Context, env *Env) ([]Record, error) {
	n := env.Sizes.ScaleServers
	env.logf("%s: %d servers at once", ScenarioScale, n)
	var recs []Record

	raw, err := measureStart(ctx, env, rawContender{}, n)
	rawRec := Record{Scenario: ScenarioScale, Contender: Raw, Servers: n}
	if err != nil {
		rawRec.Errors, rawRec.Note = 1, err.Error()
	} else {
		rawRec.Metrics = map[string]float64{"ready_ms": millis(raw.ready), "close_ms": millis(raw.closing),
			"rss_mb": raw.rssAfter / 1024, "rss_per_server_kb": (raw.rssAfter - raw.rssBefore) / float64(n)}
		env.logf("  %-10s ready in %7.1f ms", Raw, millis(raw.ready))
	}
	recs = append(recs, rawRec)

	host, err := startOpen(ctx, env, hostContender{}, n)
	rec := Record{Scenario: ScenarioScale, Contender: Mcpvisor, Servers: n}
	if err != nil {
		rec.Errors, rec.Note = 1, err.Error()
		return append(recs, rec), nil
	}
	lat := make(samples, env.Sizes.ScaleCalls)
	var failed int
	var first error
	for k := range lat {
		t0 := time.Now()
		err := host.c.call(ctx, rand.IntN(n))
		lat[k] = int64(time.Since(t0))
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	t0 := time.Now()
	if err := host.c.close(); err != nil && first == nil {
		first = fmt.Errorf("close: %w", err)
	}
	closing := time.Since(t0)
	s := lat.summary()
	rec.Calls, rec.Callers, rec.Errors = len(lat), 1, failed
	rec.P50us, rec.P99us, rec.MaxUs = micros(s.p50), micros(s.p99), micros(s.max)
	rec.Metrics = map[string]float64{
		"ready_ms":           millis(host.ready),
		"after_processes_ms": millis(host.ready) - millis(raw.ready),
		"rss_mb":             host.rssAfter / 1024,
		"rss_before_mb":      host.rssBefore / 1024,
		"rss_per_server_kb":  (host.rssAfter - host.rssBefore) / float64(n),
		"first_call_us":      float64(lat[0]) / 1e3,
		"close_ms":           millis(closing),
	}
	if first != nil {
		rec.Note = fmt.Sprintf("%d failure(s), first: %v", failed, first)
	}
	env.logf("  %-10s ready in %7.1f ms, host RSS %.1f MB (%.1f KiB/server), random call p50 %.1fµs p99 %.1fµs, closed in %.0f ms",
		Mcpvisor, rec.Metrics["ready_ms"], rec.Metrics["rss_mb"], rec.Metrics["rss_per_server_kb"], rec.P50us, rec.P99us, rec.Metrics["close_ms"])
	return append(recs, rec), nil
}
