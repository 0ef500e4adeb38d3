package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRun is a run whose figures meet some targets and miss others. The
// load records are repeated: their p50 range is ±10-20% of the median.
func fakeRun() *Run {
	r := &Run{Date: "2026-01-02", Sizes: FullSizes()}
	load := func(sc string, p50, cps, cpu map[string]float64) {
		for _, c := range []string{Raw, Mcpvisor, GoSDK, Mark3labs} {
			r.Records = append(r.Records, Record{Scenario: sc, Contender: c, Calls: 100, Repeats: 3,
				P50us: p50[c], P50MinUs: 0.9 * p50[c], P50MaxUs: 1.2 * p50[c], P90us: 2 * p50[c], P99us: 3 * p50[c],
				CallsPerSec: cps[c], RepeatCallsPerSec: []float64{cps[c], 0.8 * cps[c], 1.1 * cps[c]}, HostCPU: cpu[c], ServerCPU: cpu[c] / 2})
		}
	}
	ones := map[string]float64{Raw: 1, Mcpvisor: 1, GoSDK: 1, Mark3labs: 1}
	load(ScenarioLatency, map[string]float64{Raw: 10, Mcpvisor: 14, GoSDK: 50, Mark3labs: 40}, ones, ones)
	load(ScenarioThroughput, ones, map[string]float64{Raw: 100, Mcpvisor: 75, GoSDK: 10, Mark3labs: 30}, map[string]float64{Raw: 2, Mcpvisor: 3.2, GoSDK: 20, Mark3labs: 6})
	r.Records = append(r.Records,
		Record{Scenario: ScenarioIsolation, Contender: "mcpvisor-baseline", Calls: 10, P99us: 100, Metrics: map[string]float64{"status_max_us": 100}},
		Record{Scenario: ScenarioIsolation, Contender: "mcpvisor-trouble", Calls: 10, P99us: 110, Metrics: map[string]float64{"status_max_us": 6000}},
		Record{Scenario: ScenarioStartup, Contender: Raw, Metrics: map[string]float64{"ready_ms": 100}},
		Record{Scenario: ScenarioStartup, Contender: Mcpvisor, Metrics: map[string]float64{"ready_ms": 300, "after_processes_ms": 200}},
	)
	return r
}

// targetResult is a target's verdict as the table prints it.
func targetResult(t Target) string {
	switch {
	case t.Missing:
		return "not run"
	case t.Pass:
		return "PASS"
	}
	return "MISS"
}

// findTarget is the target whose name begins with prefix.
func findTarget(t *testing.T, ts []Target, prefix string) Target {
	t.Helper()
	for _, tg := range ts {
		if strings.HasPrefix(tg.Name, prefix) {
			return tg
		}
	}
	t.Fatalf("no target %q in %+v", prefix, ts)
	return Target{}
}

func TestTargets(t *testing.T) {
	want := []struct{ from, name, result string }{
		{"issue 21", "1 caller: mcpvisor p50 ≤ 1.3× the synchronous raw client", "MISS"},               // 1.4×
		{"issue 21", "1 caller: mcpvisor p90 ÷ p50 ≤ 2", "PASS"},                                       // 2.0
		{"issue 21", "64 callers: mcpvisor calls/s ≥ 0.7× the pipelined raw client", "PASS"},           // 0.75×
		{"issue 21", "64 callers: mcpvisor calls/s ≥ 3× the best of go-sdk and mark3labs", "MISS"},     // 2.5× mark3labs
		{"issue 21", "64 callers: host CPU per call ≤ 1.5× the pipelined raw client's", "MISS"},        // 1.6×
		{"issue 21", "Isolation: healthy-server p99 with hung, crash-looping and non-reading", "PASS"}, // 1.1×
		{"issue 21", "Scale over HTTP: 10000 HTTP servers", "not run"},
		{"issue 21", "Journal flood (1M events): host peak RSS", "not run"},
		{"modern era", "1 caller: mcpvisor-modern p50", "not run"},
		{"modern era", "64 callers: mcpvisor-modern time per call", "not run"},
		{"issue 3", "Isolation: Host.Status", "MISS"}, // 6 ms
		{"issue 3", "Start-up: 100 servers", "PASS"},  // 200 ms
		{"issue 3", "Scale: 1000 servers", "not run"},
		{"issue 3", "Scale: host RSS", "not run"},
		{"journal", "Journal: durable events/s", "not run"},
		{"issue 39", "Flood: a healthy server's p99", "not run"},
		{"issue 39", "Flood: its calls/s", "not run"},
		{"issue 41", "Gateway, 64 callers on one session", "not run"},
		{"issue 41", "Gateway, 64 callers on as many sessions", "not run"},
		{"issue 41", "Gateway, 1 caller", "not run"},
		{"issue 41", "Gateway, session age", "not run"},
		{"issue 41", "Cluster: one hop", "not run"},
		{"issue 41", "Cluster: three members", "not run"},
	}
	got := fakeRun().Targets()
	if len(got) != len(want) {
		t.Fatalf("%d targets, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i].Name, w.name) || got[i].From != w.from || targetResult(got[i]) != w.result {
			t.Errorf("target %d: %s %q %s (%s), want %s %q %s", i, got[i].From, got[i].Name, targetResult(got[i]), got[i].Measured, w.from, w.name, w.result)
		}
	}
	for i, want := range map[int]string{
		0: "1.40× (14.0 µs vs 10.0 µs; repeat p50s 12.6–16.8 vs 9.0–12.0 µs)",
		1: "2.00 (p90 28.0 µs, p50 14.0 µs)",
		3: "2.50× (75 vs mark3labs 30 calls/s)",
		4: "1.60× (3.20 vs 2.00 CPU-seconds per 100k calls)",
	} {
		if got[i].Measured != want {
			t.Errorf("target %d measured %q, want %q", i, got[i].Measured, want)
		}
	}
}

func TestMarkdownAndChart(t *testing.T) {
	r := fakeRun()
	dir := t.TempDir()
	if err := r.Chart(filepath.Join(dir, "c.png")); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "c.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("chart is not a PNG (%v)", err)
	}
	r.Records = append(r.Records,
		Record{Scenario: ScenarioLatency, Contender: SidecarAPI, Calls: 100, P50us: 60, P99us: 120, CallsPerSec: 1},
		Record{Scenario: ScenarioThroughput, Contender: SidecarMCP, Calls: 100, P50us: 1, P99us: 2, CallsPerSec: 25})
	md := r.Markdown("c.png")
	for _, want := range []string{"![", "(c.png)", "**MISS**", "**PASS**", "## 2. Throughput", "## 5. Start-up",
		"| issue 21 | 64 callers: host CPU per call ≤ 1.5× the pipelined raw client's | 1.60× (3.20 vs 2.00 CPU-seconds per 100k calls) | **MISS** |",
		"## 1. Latency: 1 caller, 1 server, 4000 calls per contender in each of 5 repeats",
		"the synchronous raw client: it writes a call's line and reads the reply's line",
		"the pipelined raw client: one writer lock per pipe, one reader goroutine per pipe",
		"getrusage `RUSAGE_SELF`", "is the median of the repeats' own",
		// latency: p50, its range, p90, p99, calls/s, host and server CPU, p50 × raw and × best peer, p90 ÷ p50, p99 × raw, host CPU × raw
		"| mcpvisor | 14.0 | 12.6–16.8 | 28.0 | 42.0 | 1 | 1.00 | 0.50 | 1.40× | 0.35× | 2.00 | 1.40× | 1.00× | 0 |",
		"| sidecar-api | 60.0 |  | 0.0 | 120.0 | 1 | 0.00 | 0.00 | 6.00× | 1.50× |",
		// throughput: calls/s and its range first, the CPU ratio last
		"| mcpvisor | 75 | 60–82 | 1.0 | 0.9–1.2 | 2.0 | 3.0 | 3.20 | 1.60 | 0.75× | 2.50× | 1.00× | 1.60× | 0 |",
		"| sidecar-mcp | 25 |  | 1.0 |  | 0.0 | 2.0 | 0.00 | 0.00 | 0.25× | 0.83× |",
		"`sidecar-api` and `sidecar-mcp` are mcpvisor as a sidecar"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// httpRun is fakeRun with the HTTP scenarios: the scale run at the issue's
// size restarted servers on the way, the run that fits did not.
func httpRun() *Run {
	r := fakeRun()
	for _, sc := range []string{ScenarioLatencyHTTP, ScenarioThroughputHTTP} {
		for i, c := range []string{Raw, Mcpvisor, GoSDK, Mark3labs} {
			r.Records = append(r.Records, Record{Scenario: sc, Contender: c, Calls: 100, P50us: float64(100 + i), P99us: 300, CallsPerSec: float64(1000 - i),
				Metrics: map[string]float64{"conns_opened": float64(7 * i), "posts_per_call": 1}})
		}
	}
	scale := func(name string, n int, m map[string]float64) Record {
		return Record{Scenario: ScenarioScaleHTTP, Contender: name, Servers: n, Calls: 10, P50us: 200, Metrics: m}
	}
	r.Records = append(r.Records,
		Record{Scenario: ScenarioScaleHTTP, Contender: Raw, Servers: 10000, Metrics: map[string]float64{"ready_ms": 2000, "fds_per_server": 1, "server_conns_per_server": 1}},
		scale(MscaleSmall, 1000, map[string]float64{"ready_ms": 900, "peak_fds_per_server": 3.1, "server_conns_per_server": 2.1, "fd_limit": 20000}),
		scale(Mcpvisor, 10000, map[string]float64{"ready_ms": 150000, "restarts": 26000, "servers_that_failed": 3400, "fd_limit": 20000, "peak_fds": 19990}),
		scale(MscaleFit, 6400, map[string]float64{"ready_ms": 9000, "fd_limit": 20000}),
	)
	r.Records[len(r.Records)-2].Note = `3400 server(s) failed while starting: 3400× "socket: too many open files"`
	return r
}

func TestHTTPReport(t *testing.T) {
	r := httpRun()
	scaleHTTP := func() Target {
		for _, t := range r.Targets() {
			if strings.HasPrefix(t.Name, "Scale over HTTP") {
				return t
			}
		}
		return Target{}
	}
	if last := scaleHTTP(); !strings.HasPrefix(last.Name, "Scale over HTTP: 10000 HTTP servers in one Host ready with zero restarts") || last.From != "issue 21" ||
		last.Pass || last.Missing || !strings.Contains(last.Measured, "26000 restart") {
		t.Errorf("scale-http target with restarts: %+v, want MISS", last)
	}
	md := r.Markdown("")
	for _, want := range []string{"## 7. Latency over Streamable HTTP", "## 8. Throughput over Streamable HTTP", "## 9. Scale over Streamable HTTP",
		"| new connections | POSTs per call |", "| 7 | 1.00 |", "| mcpvisor-fit | 6400 |", "**6400 servers**", "too many open files", "31000 descriptors in the host"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The stdio tables keep their columns.
	if strings.Contains(md[:strings.Index(md, "## 7.")], "POSTs per call") {
		t.Error("a stdio table has the HTTP columns")
	}

	r.Records[len(r.Records)-2].Metrics["restarts"] = 0 // the full size started cleanly
	if last := scaleHTTP(); !last.Pass {
		t.Errorf("clean scale-http run: %+v, want PASS", last)
	}
}

// journalRun is fakeRun with the journal scenario: the one-server flood
// fast enough, the four-server flood over the memory bound.
func journalRun() *Run {
	r := fakeRun()
	flood := func(name string, servers int, m map[string]float64) Record {
		return Record{Scenario: ScenarioJournal, Contender: name, Servers: servers, Calls: servers, Metrics: m}
	}
	r.Records = append(r.Records,
		flood(Raw, 1, map[string]float64{"events": 1e6, "lines": 1e6, "elapsed_ms": 200, "lines_per_sec": 5e6, "peak_rss_mb": 0.5}),
		flood(Mcpvisor, 1, map[string]float64{"events": 1e6, "journaled": 9e5, "dropped": 1e5, "elapsed_ms": 8000, "events_per_sec": 112500,
			"commits": 90, "events_per_commit": 10000, "peak_rss_mb": 180, "peak_anon_mb": 150, "rss_base_mb": 20, "disk_mb": 130.5, "lsm_mb": 2.5, "vlog_mb": 128, "disk_alloc_mb": 95}),
		flood(MjournalMulti, 4, map[string]float64{"events": 1e6, "journaled": 6e5, "dropped": 4e5, "elapsed_ms": 9000, "events_per_sec": 66667, "peak_rss_mb": 320, "peak_anon_mb": 300}),
	)
	return r
}

func TestJournalReport(t *testing.T) {
	r := journalRun()
	ts := r.Targets()
	rate, mem := findTarget(t, ts, "Journal: durable"), findTarget(t, ts, "Journal flood")
	if rate.Name != "Journal: durable events/s ≥ 100,000 (1 server)" || !rate.Pass || !strings.Contains(rate.Measured, "112500 events/s") {
		t.Errorf("rate target: %+v, want PASS", rate)
	}
	// Issue 21's bound is on the peak RSS (VmRSS), the anonymous part beside it.
	if mem.Name != "Journal flood (1M events): host peak RSS ≤ +256 MiB over its baseline" || mem.From != "issue 21" || mem.Pass || mem.Missing ||
		!strings.Contains(mem.Measured, "+180.0 MiB with 1 server (anonymous +150.0), +320.0 MiB with 4 servers (anonymous +300.0)") {
		t.Errorf("memory target: %+v, want MISS on the 4-server run", mem)
	}
	md := r.Markdown("")
	for _, want := range []string{"## 10. Journal: a flood of 1000000 notifications", "| raw | 1 | 1000000 | (1000000 lines read) |", "5000000 lines/s",
		"| mcpvisor | 1 | 1000000 | 900000 | 100000 | 8.00 | 112500 | 0.022× |", "| 130.5 (2.5 + 128.0) | 95.0 |", "| mcpvisor-multi | 4 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}

	r.Records[len(r.Records)-1].Metrics["peak_rss_mb"] = 200
	if mem := findTarget(t, r.Targets(), "Journal flood"); !mem.Pass {
		t.Errorf("memory target with every run under the bound: %+v, want PASS", mem)
	}
	if got := countName(100000); got != "100k" {
		t.Errorf("countName(100000) = %q", got)
	}
}

// eraRun is fakeRun with the modern-era contenders: with one caller the
// modern mcpvisor costs its legacy self plus less than the raw pipe's
// _meta cost; with 64 (legacy 50 calls/s) it loses more throughput than
// the raw pipe does.
func eraRun() *Run {
	r := fakeRun()
	m := func(sc, c string, p50, cps float64) Record {
		return Record{Scenario: sc, Contender: c, Calls: 100, P50us: p50, P99us: 2 * p50, CallsPerSec: cps}
	}
	r.Records = append(r.Records,
		m(ScenarioLatency, RawModern, 12, 1), m(ScenarioLatency, McpvisorModern, 15, 1),
		m(ScenarioLatency, GoSDKModern, 55, 1), m(ScenarioLatency, Mark3labsModern, 44, 1),
		m(ScenarioThroughput, RawModern, 1, 80), m(ScenarioThroughput, McpvisorModern, 1, 25),
		m(ScenarioThroughput, GoSDKModern, 1, 9), m(ScenarioThroughput, Mark3labsModern, 1, 18),
	)
	for i := range r.Records {
		if rec := &r.Records[i]; rec.Scenario == ScenarioThroughput && rec.Contender == Mcpvisor {
			rec.CallsPerSec = 50
		}
		if rec := &r.Records[i]; rec.Scenario == ScenarioLatency && (rec.Contender == Raw || rec.Contender == RawModern) {
			rec.Metrics = map[string]float64{"request_bytes": 89, "reply_bytes": 80}
			if rec.Contender == RawModern {
				rec.Metrics = map[string]float64{"request_bytes": 299, "reply_bytes": 104}
			}
		}
	}
	return r
}

func TestEraTargetsAndReport(t *testing.T) {
	r := eraRun()
	ts := r.Targets()
	lat, thr := findTarget(t, ts, "1 caller: mcpvisor-modern"), findTarget(t, ts, "64 callers: mcpvisor-modern")
	// 1 caller: legacy 14 µs, modern 15 µs: 1.07×; the raw pipe 10 → 12 µs
	// allows 14 + 2 = 16 µs, 1.14×.
	if lat.From != "modern era" || !lat.Pass || lat.Missing ||
		!strings.Contains(lat.Measured, "1.07× legacy (15.0 vs 14.0 µs)") || !strings.Contains(lat.Measured, "allowed ≤ 1.14× (+2.00 µs") {
		t.Errorf("1-caller era target: %+v, want PASS at 1.07× of 1.14×", lat)
	}
	// 64 callers: mcpvisor 50 → 25 calls/s (20 → 40 µs per call, 2×); the
	// raw pipe 100 → 80 (10 → 12.5 µs) allows 22.5 µs, 1.12×.
	if thr.From != "modern era" || thr.Pass || thr.Missing ||
		!strings.Contains(thr.Measured, "2.00× legacy (40000.0 vs 20000.0 µs per call: 25 vs 50 calls/s)") || !strings.Contains(thr.Measured, "allowed ≤ 1.12×") {
		t.Errorf("64-caller era target: %+v, want MISS at 2× of 1.12×", thr)
	}
	md := r.Markdown("")
	for _, want := range []string{
		"The `-modern` rows are the stdio contenders in the modern era",
		"**Legacy and modern era side by side**",
		"| mcpvisor | 14.0 | 15.0 | 1.07× | 1 | 1 | 1.00× |",                             // latency, p50 first
		"| mcpvisor | 50 | 25 | 2.00× | 1.0 | 1.0 | 1.00× |",                             // throughput, calls/s first
		"| mcpvisor-modern | 15.0 |  | 0.0 | 30.0 | 1 | 0.00 | 0.00 | 1.25× | 0.34× |",   // ratios to raw-modern and the best modern peer (mark3labs-modern, 44 µs)
		"| mcpvisor-modern | 25 |  | 1.0 |  | 0.0 | 2.0 | 0.00 | 0.00 | 0.31× | 1.39× |", // to raw-modern's 80 and mark3labs-modern's 18 calls/s
		"the `_meta` adds 210 bytes to each request, `resultType` 24 to each reply",
		"mcpvisor's modern p50 is **1.07×** its legacy one; the target allows 1.14×",
		"mcpvisor's modern time per call is **2.00×** its legacy one; the target allows 1.12×",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}

	// A modern mcpvisor that could not connect misses the targets, and says why.
	for i := range r.Records {
		if rec := &r.Records[i]; rec.Contender == McpvisorModern {
			*rec = Record{Scenario: rec.Scenario, Contender: McpvisorModern, Servers: 1, Note: "could not connect: server/discover: boom"}
		}
	}
	if lat := findTarget(t, r.Targets(), "1 caller: mcpvisor-modern"); lat.Pass || lat.Missing || !strings.Contains(lat.Measured, "boom") {
		t.Errorf("era target without a modern mcpvisor: %+v, want MISS with the reason", lat)
	}
	if md := r.Markdown(""); !strings.Contains(md, "| mcpvisor | | failed (see the notes above) |") || !strings.Contains(md, "- mcpvisor-modern: could not connect: server/discover: boom") {
		t.Errorf("report does not show the failed modern mcpvisor:\n%s", md)
	}
	if err := r.Chart(filepath.Join(t.TempDir(), "c.png")); err != nil {
		t.Fatal(err)
	}
}

// The gateway section: the added latency of each era combination in a
// matrix, and every contender's row; a route that failed says so.
func TestGatewayReport(t *testing.T) {
	r := fakeRun()
	rec := func(name string, p50 float64, m map[string]float64) Record {
		if m == nil {
			m = map[string]float64{}
		}
		m["posts_per_call"] = 1
		return Record{Scenario: ScenarioGateway, Contender: name, Servers: 1, Callers: 1, Calls: 100, P50us: p50, P99us: 2 * p50, CallsPerSec: 1e6 / p50, Metrics: m}
	}
	added := func(direct, p50, host float64) map[string]float64 {
		m := map[string]float64{"direct_p50_us": direct, "added_p50_us": p50 - direct, "p50_ratio": p50 / direct,
			"added_p50_us_round_median": p50 - direct + 1, "added_p50_us_round_min": p50 - direct - 5, "added_p50_us_round_max": p50 - direct + 7}
		if host > 0 { // a route through the gateway
			m["host_call_p50_us"], m["front_p50_us"] = host, p50-host
		}
		return m
	}
	r.Records = append(r.Records,
		rec(Direct, 200, nil), rec(DirectModern, 210, nil),
		rec(Mcpvisor, 250, added(200, 250, 0)), rec(McpvisorModern, 270, added(210, 270, 0)),
		rec("gateway-legacy-legacy", 600, added(200, 600, 250)),
		rec("gateway-modern-modern", 630, added(210, 630, 270)),
		rec("gateway-legacy-modern", 640, added(200, 640, 270)),
		Record{Scenario: ScenarioGateway, Contender: "gateway-modern-legacy", Servers: 1, Callers: 1, Note: "could not connect: boom"},
	)
	md := r.Markdown("")
	for _, want := range []string{
		"## 11. Gateway: added latency per call over a direct connection, 1 caller, 20000 calls per contender",
		"**in this process**",
		"| legacy client | +400.0 µs (3.00×) | +440.0 µs (3.20×) |",
		"| modern client | — | +420.0 µs (3.00×) |",
		"| direct | legacy client, direct | legacy | 200.0 | 400.0 |",
		"| mcpvisor-modern | Host.Call, in process | modern | 270.0 | 540.0 | 0 | 3704 | +60.0 | 1.29× | +61.0 (+55.0 … +67.0) |  | 0 | 0 | 1.00 |",
		"| gateway-legacy-legacy | legacy client → gateway | legacy | 600.0 | 1200.0 | 0 | 1667 | +400.0 | 3.00× | +401.0 (+395.0 … +407.0) | +350.0 | 0 | 0 | 1.00 |",
		"| gateway-modern-legacy | modern client → gateway | legacy | failed |",
		"- gateway-modern-legacy: could not connect: boom",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
