package harness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// progressEvery is how often ScaleHTTP samples the descriptors and the echo
// server's connections while the servers start, for their peaks.
const progressEvery = 100 * time.Millisecond

// ScaleHTTP is scenario 9: ScaleHTTPServers "http" servers in one Host,
// distinct names, all pointing at the one echo server process. It reports
// the time until all are ready (and until half and nine in ten are), the
// host's RSS, descriptors and goroutines before and after, per server, the
// echo server's view (connections open, requests answered, its own RSS),
// calls to random servers one at a time, and Host.Close. The raw contender
// (one net/http client per session, the same handshake, all at once) is the
// floor: how long the echo server itself needs to open as many sessions.
func ScaleHTTP(ctx context.Context, env *Env) ([]Record, error) {
	n := env.Sizes.ScaleHTTPServers
	srv, err := startEchoHTTP(ctx, env, false)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	e := *env
	e.httpURL = srv.url
	env.logf("%s: %d HTTP servers at once, one echo server at %s", ScenarioScaleHTTP, n, srv.url)
	var recs []Record

	rawRec := Record{Scenario: ScenarioScaleHTTP, Contender: Raw, Servers: n}
	fds0 := fdCount()
	st0, _ := srv.counters()
	raw, err := startOpen(ctx, &e, rawHTTPContender{}, n)
	if err != nil {
		rawRec.Errors, rawRec.Note = 1, err.Error()
		env.logf("  %-10s %v", Raw, err)
	} else {
		fds1 := fdCount()
		st1, _ := srv.counters()
		t0 := time.Now()
		err := raw.c.close()
		closing := time.Since(t0)
		rawRec.Metrics = map[string]float64{
			"ready_ms": millis(raw.ready), "close_ms": millis(closing),
			"fds_per_server":          float64(fds1-fds0) / float64(n),
			"server_conns_per_server": float64(st1.Open-st0.Open) / float64(n),
		}
		if err != nil {
			rawRec.Note = "close: " + err.Error()
		}
		env.logf("  %-10s ready in %7.1f ms, %.2f fds and %.2f server connections per session, closed in %.0f ms",
			Raw, millis(raw.ready), rawRec.Metrics["fds_per_server"], rawRec.Metrics["server_conns_per_server"], millis(closing))
	}
	recs = append(recs, rawRec)
	if ctx.Err() != nil {
		return recs, ctx.Err()
	}

	// Above scaleHTTPSmall servers, a run at that size first measures the
	// descriptors a server costs at the peak of start-up.
	var small *Record
	if n > scaleHTTPSmall {
		r := scaleHTTPHost(ctx, &e, srv, MscaleSmall, scaleHTTPSmall, 0, false)
		recs = append(recs, r)
		if clean(&r) {
			small = &r
		}
	}
	main := scaleHTTPHost(ctx, &e, srv, Mcpvisor, n, millis(raw.ready), false)
	recs = append(recs, main)
	if clean(&main) || small == nil || ctx.Err() != nil {
		return recs, ctx.Err()
	}

	// n did not start cleanly: find the largest size the open-file limit
	// allows at the small run's cost per server, and check that it does,
	// stepping down 5% at a time (at most scaleHTTPFitTries runs, each
	// abandoned at the first server that fails).
	perServer := small.Metrics["peak_fds_per_server"]
	fit := int((float64(fdLimit())-float64(fdCount())-scaleHTTPFdMargin)/perServer) / 100 * 100
	env.logf("  %d servers did not start cleanly; the open-file limit (%d) at %.2f descriptors per server (the %d-server run's peak) fits %d",
		n, fdLimit(), perServer, scaleHTTPSmall, fit)
	for try := 0; try < scaleHTTPFitTries && fit > scaleHTTPSmall && fit < n; try++ {
		r := scaleHTTPHost(ctx, &e, srv, MscaleFit, fit, 0, true)
		r.Metrics["fit_estimate_fds_per_server"] = perServer
		r.Metrics["fit_try"] = float64(try + 1)
		recs = append(recs, r)
		if clean(&r) || ctx.Err() != nil {
			break
		}
		fit = fit * 95 / 100 / 100 * 100
	}
	return recs, ctx.Err()
}

// Record names of ScaleHTTP's extra runs: at scaleHTTPSmall servers, and at
// the largest size the open-file limit fits when the size fails.
const (
	MscaleSmall = "mcpvisor-small"
	MscaleFit   = "mcpvisor-fit"
)

const (
	scaleHTTPSmall    = 1000
	scaleHTTPFitTries = 3
	scaleHTTPFdMargin = 100 // descriptors kept free besides the servers'
)

// clean reports whether a scale run had every server ready without a
// restart and every call answered.
func clean(r *Record) bool {
	return r.Errors == 0 && r.Metrics != nil && r.Metrics["restarts"] == 0 && r.Metrics["ready_ms"] > 0
}

// scaleHTTPHost is one Host of n HTTP servers, recorded as contender name.
// With abort, the wait ends at the first server that fails.
func scaleHTTPHost(ctx context.Context, env *Env, srv *echoHTTP, name string, n int, rawReadyMs float64, abort bool) Record {
	rec := Record{Scenario: ScenarioScaleHTTP, Contender: name, Servers: n}
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	abortCtx, abortNow := context.WithCancel(ctx)
	defer abortNow()
	servers := make([]mcpvisor.ServerConfig, n)
	tools := make([]string, n)
	for i := range servers {
		servers[i] = mcpvisor.ServerConfig{Name: serverName(i), Type: "http", URL: env.httpURL, AllowPrivate: true, Enabled: true}
		tools[i] = "mcp__" + serverName(i) + "__echo"
	}
	// Let the previous part's connections finish closing at the server.
	time.Sleep(200 * time.Millisecond)
	rss0, fds0, gor0 := rssKB(), fdCount(), runtime.NumGoroutine()
	st0, _ := srv.counters()

	// State events count the servers as they become ready (for the time
	// until half and nine in ten are) and collect the errors of the others.
	// The sampler reads, every progressEvery from before Open until all are
	// ready, this process's descriptors and the echo server's open
	// connections, for their peaks.
	var half, most time.Duration
	var mu sync.Mutex
	counted := false // set once all are ready (or the wait ended): later events are not counted
	readySeen := map[string]bool{}
	reasons := newReasonTally()
	t0 := time.Now()
	onEvent := func(ev mcpvisor.Event) {
		if ev.Kind != mcpvisor.EventState {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if counted {
			return
		}
		if ev.Err != "" && ev.State != mcpvisor.StateReady {
			reasons.add(ev.Server, ev.Err)
			if abort {
				abortNow()
			}
		}
		if ev.State == mcpvisor.StateReady && !readySeen[ev.Server] {
			readySeen[ev.Server] = true
			if len(readySeen)*2 >= n && half == 0 {
				half = time.Since(t0)
			}
			if len(readySeen)*10 >= 9*n && most == 0 {
				most = time.Since(t0)
			}
		}
	}
	var peakFds int
	var peakSrvOpen int64
	stopSampling := sampleEvery(progressEvery, func() {
		peakFds = max(peakFds, fdCount())
		if st, err := srv.counters(); err == nil {
			peakSrvOpen = max(peakSrvOpen, st.Open)
		}
	})
	h, err := openHost(ctx, env, mcpvisor.Options{Config: &mcpvisor.Config{Servers: servers}, OnEvent: onEvent})
	if err != nil {
		stopSampling()
		rec.Errors, rec.Note = 1, err.Error()
		return rec
	}
	openMs := millis(time.Since(t0))
	wctx, cancel := context.WithTimeout(abortCtx, env.Sizes.ScaleHTTPWait)
	err = h.WaitReady(wctx)
	cancel()
	ready := time.Since(t0)
	stopSampling()
	peakFds = max(peakFds, fdCount())
	mu.Lock()
	counted = true
	mu.Unlock()
	if half == 0 {
		half = ready
	}
	if most == 0 {
		most = ready
	}
	if err != nil {
		readyNow, restarts := 0, 0
		for _, s := range h.Status() {
			restarts += s.Restarts
			if s.State == mcpvisor.StateReady {
				readyNow++
			}
		}
		rec.Errors = n - readyNow
		rec.Metrics = map[string]float64{"open_ms": openMs, "waited_ms": millis(ready), "ready_servers": float64(readyNow),
			"restarts": float64(restarts), "peak_fds": float64(peakFds), "fd_limit": float64(fdLimit()),
			"server_peak_open_conns": float64(peakSrvOpen), "servers_that_failed": float64(reasons.servers())}
		// With every descriptor in use, /proc cannot be read: no figure.
		if kb := rssKB(); kb > 0 {
			rec.Metrics["rss_mb"] = kb / 1024
		}
		if kb := srv.rssKB(); kb > 0 {
			rec.Metrics["server_rss_mb"] = kb / 1024
		}
		why := fmt.Sprintf("not all ready after %.1f s", ready.Seconds())
		if abortCtx.Err() != nil && ctx.Err() == nil {
			why = fmt.Sprintf("abandoned %.1f s in, at the first server that failed", ready.Seconds())
		}
		rec.Note = fmt.Sprintf("%s: %d of %d ready, %d restarts, peak %d fds of %d allowed; errors seen: %s",
			why, readyNow, n, restarts, peakFds, fdLimit(), reasons)
		env.logf("  %-14s %s", name, rec.Note)
		t1 := time.Now()
		h.close()
		rec.Metrics["close_ms"] = millis(time.Since(t1))
		return rec
	}
	rss1, fds1, gor1 := rssKB(), fdCount(), runtime.NumGoroutine()
	if env.HeapProfile != "" {
		if err := writeHeapProfile(env.HeapProfile); err != nil {
			env.logf("  heap profile: %v", err)
		}
	}
	st1, _ := srv.counters()
	srvRSS1 := srv.rssKB()
	restarts := 0
	for _, s := range h.Status() {
		restarts += s.Restarts
	}

	c := &hostClient{benchHost: h, tools: tools}
	lat := make(samples, env.Sizes.ScaleHTTPCalls)
	var failed int
	var first error
	for k := range lat {
		t := time.Now()
		err := c.call(ctx, rand.IntN(n))
		lat[k] = int64(time.Since(t))
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	fds2 := fdCount()
	st2, _ := srv.counters()

	t1 := time.Now()
	if err := h.close(); err != nil && first == nil {
		first = fmt.Errorf("close: %w", err)
	}
	closing := time.Since(t1)
	time.Sleep(200 * time.Millisecond) // goroutines that end after Close returns
	fds3, gor3 := fdCount(), runtime.NumGoroutine()
	st3, _ := srv.counters()

	s := lat.summary()
	rec.Calls, rec.Callers, rec.Errors = len(lat), 1, failed
	rec.P50us, rec.P99us, rec.MaxUs = micros(s.p50), micros(s.p99), micros(s.max)
	per := func(v float64) float64 { return v / float64(n) }
	rec.Metrics = map[string]float64{
		"open_ms":                   openMs,
		"ready_ms":                  millis(ready),
		"ready_half_ms":             millis(half),
		"ready_90pct_ms":            millis(most),
		"rss_mb":                    rss1 / 1024,
		"rss_before_mb":             rss0 / 1024,
		"rss_per_server_kb":         per(rss1 - rss0),
		"fds":                       float64(fds1),
		"fds_before":                float64(fds0),
		"fds_per_server":            per(float64(fds1 - fds0)),
		"fds_after_calls":           float64(fds2),
		"fds_after_close":           float64(fds3),
		"goroutines":                float64(gor1),
		"goroutines_per_server":     per(float64(gor1 - gor0)),
		"goroutines_after_close":    float64(gor3 - gor0),
		"server_conns_per_server":   per(float64(st1.Open - st0.Open)),
		"server_conns_opened":       float64(st1.Conns - st0.Conns),
		"server_posts_per_server":   per(float64(st1.Posts - st0.Posts)),
		"server_gets_per_server":    per(float64(st1.Gets - st0.Gets)),
		"server_conns_during_calls": float64(st2.Conns - st1.Conns),
		"server_deletes":            float64(st3.Deletes - st2.Deletes),
		"server_open_after_close":   float64(st3.Open),
		"server_rss_mb":             srvRSS1 / 1024,
		"restarts":                  float64(restarts),
		"peak_fds":                  float64(peakFds),
		"peak_fds_per_server":       per(float64(peakFds - fds0)),
		"fd_limit":                  float64(fdLimit()),
		"server_peak_open_conns":    float64(peakSrvOpen),
		"first_call_us":             float64(lat[0]) / 1e3,
		"close_ms":                  millis(closing),
	}
	rec.Metrics["servers_that_failed"] = float64(reasons.servers())
	if rawReadyMs > 0 {
		rec.Metrics["after_raw_ms"] = millis(ready) - rawReadyMs
	}
	var notes []string
	if first != nil {
		notes = append(notes, fmt.Sprintf("%d call failure(s), first: %v", failed, first))
	}
	if r := reasons.String(); r != "" {
		notes = append(notes, fmt.Sprintf("%d server(s) failed while starting and were restarted: %s", reasons.servers(), r))
	}
	rec.Note = strings.Join(notes, "; ")
	m := rec.Metrics
	env.logf("  %-14s %d servers ready in %.2f s (half %.2f s, 90%% %.2f s; Open %.0f ms), host RSS %.1f MB (%.1f KiB/server), %.0f fds (%.2f/server, peak %.2f), %.2f goroutines/server, %.2f server conns/server, %.0f restarts",
		name, n, m["ready_ms"]/1000, m["ready_half_ms"]/1000, m["ready_90pct_ms"]/1000, m["open_ms"], m["rss_mb"], m["rss_per_server_kb"],
		m["fds"], m["fds_per_server"], m["peak_fds_per_server"], m["goroutines_per_server"], m["server_conns_per_server"], m["restarts"])
	env.logf("  %-14s random call p50 %.1fµs p99 %.1fµs max %.0fµs (%d errors); closed in %.0f ms (%.0f DELETEs), fds after close %.0f (before %d), goroutines left %.0f, server conns open %.0f",
		name, rec.P50us, rec.P99us, rec.MaxUs, failed, m["close_ms"], m["server_deletes"], m["fds_after_close"], fds0, m["goroutines_after_close"], m["server_open_after_close"])
	return rec
}

// reasonTally counts the distinct errors servers reported while starting
// (Host.Status LastError, sampled), each error counted once per server.
type reasonTally struct {
	last   map[string]string // server → its last error as reported
	seen   map[string]bool   // server + reason
	counts map[string]int
}

func newReasonTally() *reasonTally {
	return &reasonTally{last: map[string]string{}, seen: map[string]bool{}, counts: map[string]int{}}
}

// numbers are what differ between otherwise equal errors: ports, counts.
var numbers = regexp.MustCompile(`[0-9]+`)

func (t *reasonTally) add(server, err string) {
	if t.last[server] == err {
		return
	}
	t.last[server] = err
	reason := numbers.ReplaceAllString(err, "N")
	if len(reason) > 160 {
		reason = reason[:160] + "…"
	}
	if key := server + "\x00" + reason; !t.seen[key] {
		t.seen[key] = true
		t.counts[reason]++
	}
}

func (t *reasonTally) servers() int { return len(t.last) }

// String is the three most frequent reasons with their counts.
func (t *reasonTally) String() string {
	var rs []string
	for r := range t.counts {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b string) int { return t.counts[b] - t.counts[a] })
	var parts []string
	for i, r := range rs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d other reason(s)", len(rs)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%d× %q", t.counts[r], r))
	}
	return strings.Join(parts, ", ")
}

// fdLimit is this process's open-file limit (RLIMIT_NOFILE, soft).
func fdLimit() uint64 {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	return lim.Cur
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
