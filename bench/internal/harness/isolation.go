package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// Isolation tuning. The crash-looping server restarts every 50 ms, far
// harsher than the default policy (500 ms doubling to 60 s); calls to the
// misbehaving servers time out after 200 ms; each of their callers makes at
// most one call per 10 ms, so a call that fails at once does not turn into a
// busy loop of the harness's own. The trouble is given 1.5 s to build up
// before the healthy servers are measured: the host reports a server as not
// reading once a write to it has been blocked for a second.
const (
	badTimeout    = 200 * time.Millisecond
	badPace       = 10 * time.Millisecond
	crashBackoff  = 50 * time.Millisecond
	statusEvery   = 2 * time.Millisecond
	troubleSettle = 1500 * time.Millisecond
)

// deafArgs are large, so that the server that stops reading fills its stdin
// pipe within a few calls and the host's writer blocks on it.
var deafArgs = json.RawMessage(`{"pad":"` + strings.Repeat("x", 16<<10) + `"}`)

// Isolation is scenario 4 (mcpvisor only): calls to healthy servers while a
// hung server, a crash-looping server and a server that never reads its
// stdin are called too, against the same load with the three absent. It also
// samples Host.Status and Host.Tools throughout. Each phase runs
// env.Sizes.Repeats times on a fresh Host, the two alternating (baseline,
// trouble, baseline, ...); the records have the medians of the repeats.
func Isolation(ctx context.Context, env *Env) ([]Record, error) {
	healthy := env.Sizes.IsolationServers - 3
	if healthy < 1 {
		return nil, fmt.Errorf("isolation needs at least 4 servers, have %d", env.Sizes.IsolationServers)
	}
	repeats := max(1, env.Sizes.Repeats)
	env.logf("%s: %d healthy servers (+3 misbehaving), %d callers, %d calls per phase, %d repeats of both phases, alternated",
		ScenarioIsolation, healthy, env.Sizes.IsolationCallers, env.Sizes.IsolationCalls, repeats)
	var base, trouble phase
	for r, order := range repeatOrder(2, repeats) {
		for _, k := range order {
			bad := k == 1
			p, err := isolationPhase(ctx, env, healthy, bad)
			if err != nil {
				return nil, err
			}
			if bad {
				trouble.add(p)
			} else {
				base.add(p)
			}
		}
		env.logf("  repeat %d/%d: healthy p50 %.1fµs → %.1fµs, p99 %.1fµs → %.1fµs", r+1, repeats,
			micros(base.reps[r].lat.p50), micros(trouble.reps[r].lat.p50), micros(base.reps[r].lat.p99), micros(trouble.reps[r].lat.p99))
	}
	b, t := base.record(healthy, env, "mcpvisor-baseline"), trouble.record(healthy+3, env, "mcpvisor-trouble")
	if b.P99us > 0 {
		t.Metrics["p99_ratio"] = t.P99us / b.P99us
		t.Metrics["p50_ratio"] = t.P50us / b.P50us
	}
	t.Metrics["bad_calls"] = float64(trouble.badCalls)
	for kind, n := range trouble.badErrs {
		t.Metrics["bad_"+kind] = float64(n)
	}
	t.Metrics["crash_restarts"] = float64(trouble.restarts)
	env.logf("  healthy p99 %.1fµs → %.1fµs (×%.2f); status p99/max %.1f/%.1fµs; bad calls %d %v; crash restarts %d",
		b.P99us, t.P99us, t.Metrics["p99_ratio"], t.Metrics["status_p99_us"], t.Metrics["status_max_us"], trouble.badCalls, trouble.badErrs, trouble.restarts)
	return []Record{b, t}, nil
}

// phase is what one or more runs of the same phase measured: each run's
// healthy calls, and every run's Status and Tools samples.
type phase struct {
	reps          []repeatFigures
	status, tools samples
	firstErr      error
	badCalls      int
	badErrs       map[string]int
	restarts      int
	closing       time.Duration // the longest Host.Close
	closeErr      error
}

func (p *phase) add(q *phase) {
	p.reps = append(p.reps, q.reps...)
	p.status = append(p.status, q.status...)
	p.tools = append(p.tools, q.tools...)
	if p.firstErr == nil {
		p.firstErr = q.firstErr
	}
	p.badCalls += q.badCalls
	if p.badErrs == nil {
		p.badErrs = map[string]int{}
	}
	for k, v := range q.badErrs {
		p.badErrs[k] += v
	}
	p.restarts += q.restarts
	p.closing = max(p.closing, q.closing)
	if p.closeErr == nil {
		p.closeErr = q.closeErr
	}
}

// record is the phase's record: the medians of its repeats (fillRepeats),
// and the Status and Tools latencies of all of them pooled.
func (p *phase) record(servers int, env *Env, contender string) Record {
	st, tl := p.status.summary(), p.tools.summary()
	r := Record{
		Scenario: ScenarioIsolation, Contender: contender, Servers: servers, Callers: env.Sizes.IsolationCallers,
		Metrics: map[string]float64{
			"status_p99_us": micros(st.p99), "status_max_us": micros(st.max), "status_samples": float64(st.n),
			"tools_p99_us": micros(tl.p99), "tools_max_us": micros(tl.max),
			"close_ms": millis(p.closing),
		},
	}
	fillRepeats(&r, p.reps)
	var notes []string
	if p.firstErr != nil {
		notes = append(notes, fmt.Sprintf("%d healthy call(s) failed, first: %v", r.Errors, p.firstErr))
	}
	if p.closeErr != nil {
		notes = append(notes, fmt.Sprintf("Host.Close: %v", p.closeErr))
	}
	r.Note = strings.Join(notes, "; ")
	return r
}

// isolationPhase opens a host with healthy servers (and, with bad, the three
// misbehaving ones), loads the healthy ones and measures, then closes it.
func isolationPhase(ctx context.Context, env *Env, healthy int, bad bool) (*phase, error) {
	var servers []mcpvisor.ServerConfig
	var ready []string
	for i := range healthy {
		name := fmt.Sprintf("h%02d", i)
		servers = append(servers, mcpvisor.ServerConfig{Name: name, Command: env.Server, Enabled: true})
		ready = append(ready, name)
	}
	badArgs := map[string]json.RawMessage{}
	if bad {
		for _, b := range []struct{ name, flag string }{{"hang", "-hang"}, {"crash", "-crash"}, {"deaf", "-deaf"}} {
			servers = append(servers, mcpvisor.ServerConfig{Name: b.name, Command: env.Server, Args: []string{b.flag},
				Enabled: true, Timeout: mcpvisor.Duration(badTimeout)})
			badArgs[b.name] = echoArgs
		}
		badArgs["deaf"] = deafArgs
		ready = append(ready, "hang", "deaf") // crash never becomes ready
	}
	h, err := openHost(ctx, env, mcpvisor.Options{
		Config:    &mcpvisor.Config{Servers: servers},
		Restart:   mcpvisor.RestartPolicy{InitialInterval: crashBackoff, MaxInterval: crashBackoff, Multiplier: 1, RandomizationFactor: -1, MaxRestarts: -1},
		StopGrace: 200 * time.Millisecond,
		TermGrace: 200 * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	if err := h.WaitReady(ctx, ready...); err != nil {
		h.close()
		return nil, err
	}
	c := &hostClient{benchHost: h}
	for i := range healthy {
		c.tools = append(c.tools, fmt.Sprintf("mcp__h%02d__echo", i))
	}
	drive(ctx, c, env.Sizes.IsolationCallers, env.Sizes.WarmupCalls, healthy, nil)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	p := &phase{badErrs: map[string]int{}}
	var mu sync.Mutex // guards p.badCalls, p.badErrs
	for name, args := range badArgs {
		tool := "mcp__" + name + "__echo"
		for range env.Sizes.BadCallersPerKind {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					t0 := time.Now()
					_, err := h.Call(ctx, tool, args)
					mu.Lock()
					p.badCalls++
					p.badErrs[errKind(err)]++
					mu.Unlock()
					if d := time.Since(t0); d < badPace {
						time.Sleep(badPace - d)
					}
				}
			})
		}
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(statusEvery):
			}
			t0 := time.Now()
			h.Status()
			t1 := time.Now()
			h.Tools()
			t2 := time.Now()
			p.status = append(p.status, int64(t1.Sub(t0)))
			p.tools = append(p.tools, int64(t2.Sub(t1)))
		}
	})
	// Let the trouble build up: the deaf server's pipe fills, the crash loop
	// turns. The baseline waits as long, so that both phases are alike.
	time.Sleep(troubleSettle)
	calls := env.Sizes.IsolationCalls
	lat := make(samples, calls)
	runtime.GC() // the last phase's garbage is not collected on this one's time
	cpu0 := cpuStart()
	elapsed, errs, first := drive(ctx, c, env.Sizes.IsolationCallers, calls, healthy, lat)
	cpu := cpuSince(cpu0)
	p.reps = []repeatFigures{{calls: calls, errs: errs, elapsed: elapsed, lat: lat.summary(), cpu: cpu}}
	p.firstErr = first
	close(stop)
	wg.Wait()
	for _, st := range h.Status() {
		if st.Name == "crash" {
			p.restarts = st.Restarts
		}
	}
	t0 := time.Now()
	p.closeErr = h.close()
	p.closing = time.Since(t0)
	return p, ctx.Err()
}

// errKind names the outcome of a call to a misbehaving server.
func errKind(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, mcpvisor.ErrTimeout):
		return "timeout"
	case errors.Is(err, mcpvisor.ErrNotReading):
		return "not_reading"
	case errors.Is(err, mcpvisor.ErrConnectionLost):
		return "connection_lost"
	case errors.Is(err, mcpvisor.ErrUnavailable):
		return "unavailable"
	}
	return "other"
}
