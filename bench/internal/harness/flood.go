package harness

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// Flood tuning: each flood call sends floodBurst notifications, and the
// flooding server is called again as soon as it answers; floodSubscribers
// follow the journal throughout (bounded subscriptions, as the sidecar's
// event stream uses), each resuming where it lagged.
const (
	floodBurst       = 5000
	floodSubscribers = 100
	floodSettle      = 500 * time.Millisecond
)

// Flood is scenario 12 (mcpvisor only): calls to a healthy server while
// another server in the same host floods notifications without pause and
// floodSubscribers follow the journal, against the same calls with the
// flooding server and the subscribers absent. Each phase runs
// env.Sizes.Repeats times on a fresh Host, alternated; the records have
// the medians. Issue 39's target: the neighbour's p99 within 1.5× and its
// calls/s within 20% of the baseline's.
func Flood(ctx context.Context, env *Env) ([]Record, error) {
	repeats := max(1, env.Sizes.Repeats)
	env.logf("%s: 1 healthy server, %d callers, %d calls per phase; a server flooding %d-notification bursts and %d journal subscribers; %d repeats of both phases, alternated",
		ScenarioFlood, env.Sizes.IsolationCallers, floodCalls(env), floodBurst, floodSubscribers, repeats)
	var base, flood []repeatFigures
	var sent, journaled, limited, lagged uint64
	for r, order := range repeatOrder(2, repeats) {
		for _, k := range order {
			f, err := floodPhase(ctx, env, k == 1)
			if err != nil {
				return nil, err
			}
			if k == 1 {
				flood = append(flood, f.figures)
				sent += f.sent
				journaled += f.journaled
				limited += f.limited
				lagged += f.lagged
			} else {
				base = append(base, f.figures)
			}
		}
		env.logf("  repeat %d/%d: neighbour p50 %.1fµs → %.1fµs, p99 %.1fµs → %.1fµs, %.0f → %.0f calls/s", r+1, repeats,
			micros(base[r].lat.p50), micros(flood[r].lat.p50), micros(base[r].lat.p99), micros(flood[r].lat.p99),
			base[r].callsPerSec(), flood[r].callsPerSec())
	}
	b := Record{Scenario: ScenarioFlood, Contender: "mcpvisor-alone", Servers: 1, Callers: env.Sizes.IsolationCallers}
	t := Record{Scenario: ScenarioFlood, Contender: "mcpvisor-flooded", Servers: 2, Callers: env.Sizes.IsolationCallers}
	fillRepeats(&b, base)
	fillRepeats(&t, flood)
	t.Metrics["p99_ratio"] = safeDiv(t.P99us, b.P99us)
	t.Metrics["p50_ratio"] = safeDiv(t.P50us, b.P50us)
	t.Metrics["cps_ratio"] = safeDiv(t.CallsPerSec, b.CallsPerSec)
	t.Metrics["flood_events_answered"] = float64(sent) // in flood calls that answered
	t.Metrics["flood_events_journaled"] = float64(journaled)
	t.Metrics["flood_events_rate_limited"] = float64(limited)
	t.Metrics["subscriber_lags"] = float64(lagged)
	t.Metrics["subscribers"] = floodSubscribers
	env.logf("  neighbour p99 %.1fµs → %.1fµs (×%.2f), %.0f → %.0f calls/s (×%.2f); flood %d sent, %d journaled, %d over the rate; %d subscriber lags",
		b.P99us, t.P99us, t.Metrics["p99_ratio"], b.CallsPerSec, t.CallsPerSec, t.Metrics["cps_ratio"], sent, journaled, limited, lagged)
	return []Record{b, t}, nil
}

type floodFigures struct {
	figures                          repeatFigures
	sent, journaled, limited, lagged uint64
}

// floodCalls is the neighbour's calls per phase: ten times isolation's, so
// that a phase lasts long enough for the flood to be felt (a fraction of a
// second at quick size).
func floodCalls(env *Env) int { return 10 * env.Sizes.IsolationCalls }

// floodPhase opens a host with the healthy server (and, with flooding, the
// flooding one and the subscribers), loads the healthy one and measures,
// then closes it.
func floodPhase(ctx context.Context, env *Env, flooding bool) (*floodFigures, error) {
	servers := []mcpvisor.ServerConfig{{Name: "calm", Command: env.Server, Enabled: true}}
	if flooding {
		servers = append(servers, mcpvisor.ServerConfig{Name: "flood", Command: env.Server, Enabled: true})
	}
	h, err := openHost(ctx, env, mcpvisor.Options{Config: &mcpvisor.Config{Servers: servers}})
	if err != nil {
		return nil, err
	}
	defer h.close()
	if err := h.WaitReady(ctx); err != nil {
		return nil, err
	}
	c := &hostClient{benchHost: h, tools: []string{"mcp__calm__echo"}}
	drive(ctx, c, env.Sizes.IsolationCallers, env.Sizes.WarmupCalls, 1, nil)

	out := &floodFigures{}
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var sent, journaled, lagged atomic.Uint64
	if flooding {
		wg.Go(func() {
			for pctx.Err() == nil {
				if h.callTool(pctx, "mcp__flood__flood", floodArgs(floodBurst)) == nil {
					sent.Add(floodBurst)
				}
			}
		})
		j := h.Journal()
		for i := range floodSubscribers {
			wg.Go(func() {
				f := mcpvisor.EventFilter{Server: "flood"}
				for pctx.Err() == nil {
					for ev := range j.SubscribeBounded(pctx, f) {
						if ev.Method == mcpvisor.MethodEventsLagged {
							lagged.Add(1)
							break
						}
						f.After = ev.Seq
						if i == 0 {
							journaled.Add(1)
						}
					}
				}
			})
		}
		time.Sleep(floodSettle) // the flood under way before the neighbour is measured
	}
	calls := floodCalls(env)
	lat := make(samples, calls)
	runtime.GC()
	cpu0 := cpuStart()
	elapsed, errs, first := drive(ctx, c, env.Sizes.IsolationCallers, calls, 1, lat)
	cpu := cpuSince(cpu0)
	stop()
	wg.Wait()
	if first != nil {
		return nil, fmt.Errorf("%s: the healthy server's calls: %d failed, first: %w", ScenarioFlood, errs, first)
	}
	out.figures = repeatFigures{calls: calls, errs: errs, elapsed: elapsed, lat: lat.summary(), cpu: cpu}
	out.sent, out.journaled, out.lagged = sent.Load(), journaled.Load(), lagged.Load()
	out.limited = h.EventsRateLimited()["flood"]
	return out, ctx.Err()
}
