package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRun is a run whose figures meet some targets and miss others.
func fakeRun() *Run {
	r := &Run{Date: "2026-01-02", Sizes: FullSizes()}
	load := func(sc string, p50 map[string]float64, cps map[string]float64) {
		for _, c := range []string{Raw, Mcpvisor, GoSDK, Mark3labs} {
			r.Records = append(r.Records, Record{Scenario: sc, Contender: c, Calls: 100, P50us: p50[c], P99us: 2 * p50[c], CallsPerSec: cps[c]})
		}
	}
	load(ScenarioLatency, map[string]float64{Raw: 10, Mcpvisor: 14, GoSDK: 50, Mark3labs: 40}, map[string]float64{Raw: 1, Mcpvisor: 1, GoSDK: 1, Mark3labs: 1})
	load(ScenarioThroughput, map[string]float64{Raw: 1, Mcpvisor: 1, GoSDK: 1, Mark3labs: 1}, map[string]float64{Raw: 100, Mcpvisor: 50, GoSDK: 10, Mark3labs: 20})
	r.Records = append(r.Records,
		Record{Scenario: ScenarioIsolation, Contender: "mcpvisor-baseline", Calls: 10, P99us: 100, Metrics: map[string]float64{"status_max_us": 100}},
		Record{Scenario: ScenarioIsolation, Contender: "mcpvisor-trouble", Calls: 10, P99us: 110, Metrics: map[string]float64{"status_max_us": 6000}},
		Record{Scenario: ScenarioStartup, Contender: Raw, Metrics: map[string]float64{"ready_ms": 100}},
		Record{Scenario: ScenarioStartup, Contender: Mcpvisor, Metrics: map[string]float64{"ready_ms": 300, "after_processes_ms": 200}},
	)
	return r
}

func TestTargets(t *testing.T) {
	want := []struct{ name, result string }{
		{"Embedded, 1 caller: p50", "PASS"},                             // 1.4×
		{"Embedded, 64 callers: throughput ≥ 0.6× the raw", "MISS"},     // 0.5×
		{"Embedded, 64 callers: throughput ≥ 3× the best peer", "MISS"}, // 2.5× mark3labs
		{"Modern era (2026-07-28), 1 caller", "not run"},
		{"Modern era (2026-07-28), 64 callers", "not run"},
		{"Isolation: healthy-server p99", "PASS"}, // 1.1×
		{"Isolation: Host.Status", "MISS"},        // 6 ms
		{"Start-up: 100 servers", "PASS"},         // 200 ms
		{"Scale: 1000 servers", "not run"},
		{"Scale: host RSS", "not run"},
		{"Scale over HTTP", "not run"},
		{"journal: durable events/s", "not run"},
		{"journal: host peak anonymous RSS", "not run"},
	}
	got := fakeRun().Targets()
	if len(got) != len(want) {
		t.Fatalf("%d targets, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		res := "MISS"
		switch {
		case got[i].Missing:
			res = "not run"
		case got[i].Pass:
			res = "PASS"
		}
		if !strings.HasPrefix(got[i].Name, w.name) || res != w.result {
			t.Errorf("target %d: %q %s (%s), want %q %s", i, got[i].Name, res, got[i].Measured, w.name, w.result)
		}
	}
	if !strings.Contains(got[2].Measured, "mark3labs") {
		t.Errorf("best peer not named: %s", got[2].Measured)
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
	for _, want := range []string{"![", "(c.png)", "| raw | 10.0 |", "1.40×", "**MISS**", "**PASS**", "## 2. Throughput", "## 5. Start-up",
		"| sidecar-api | 60.0 | 120.0 | 0 | 1 | 6.00× | 1.50× |", "| sidecar-mcp | 25 | 1.0 | 2.0 | 0 | 0.25× | 1.25× |", "`sidecar-api` and `sidecar-mcp` are mcpvisor as a sidecar"} {
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
	if last := scaleHTTP(); !strings.HasPrefix(last.Name, "Scale over HTTP (issue 4): 10000") || last.Pass || last.Missing || !strings.Contains(last.Measured, "26000 restart") {
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
	rate, mem := ts[len(ts)-2], ts[len(ts)-1]
	if rate.Name != "journal: durable events/s ≥ 100,000 (1 server)" || !rate.Pass || !strings.Contains(rate.Measured, "112500 events/s") {
		t.Errorf("rate target: %+v, want PASS", rate)
	}
	if mem.Name != "journal: host peak anonymous RSS bounded (≤ 256 MiB over baseline during a 1M-event flood)" || mem.Pass || mem.Missing ||
		!strings.Contains(mem.Measured, "+300.0 MiB with 4 servers (VmRSS +320.0)") {
		t.Errorf("memory target: %+v, want MISS on the 4-server run", mem)
	}
	md := r.Markdown("")
	for _, want := range []string{"## 10. Journal: a flood of 1000000 notifications", "| raw | 1 | 1000000 | (1000000 lines read) |", "5000000 lines/s",
		"| mcpvisor | 1 | 1000000 | 900000 | 100000 | 8.00 | 112500 | 0.022× |", "| 130.5 (2.5 + 128.0) | 95.0 |", "| mcpvisor-multi | 4 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}

	r.Records[len(r.Records)-1].Metrics["peak_anon_mb"] = 200
	if mem := r.Targets()[len(ts)-1]; !mem.Pass {
		t.Errorf("memory target with every run under the bound: %+v, want PASS", mem)
	}
	if got := countName(100000); got != "100k" {
		t.Errorf("countName(100000) = %q", got)
	}
}

// eraRun is fakeRun with the modern-era contenders: with one caller the
// modern mcpvisor costs its legacy self plus less than the raw pipe's
// _meta cost; with 64 it loses more throughput than the raw pipe does.
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
	lat, thr := ts[3], ts[4]
	// 1 caller: legacy 14 µs, modern 15 µs: 1.07×; the raw pipe 10 → 12 µs
	// allows 14 + 2 = 16 µs, 1.14×.
	if !strings.HasPrefix(lat.Name, "Modern era (2026-07-28), 1 caller") || !lat.Pass || lat.Missing ||
		!strings.Contains(lat.Measured, "1.07× legacy (15.0 vs 14.0 µs)") || !strings.Contains(lat.Measured, "allowed ≤ 1.14× (+2.00 µs") {
		t.Errorf("1-caller era target: %+v, want PASS at 1.07× of 1.14×", lat)
	}
	// 64 callers: mcpvisor 50 → 25 calls/s (20 → 40 µs per call, 2×); the
	// raw pipe 100 → 80 (10 → 12.5 µs) allows 22.5 µs, 1.12×.
	if !strings.HasPrefix(thr.Name, "Modern era (2026-07-28), 64 callers") || thr.Pass || thr.Missing ||
		!strings.Contains(thr.Measured, "2.00× legacy (40000.0 vs 20000.0 µs per call: 25 vs 50 calls/s)") || !strings.Contains(thr.Measured, "allowed ≤ 1.12×") {
		t.Errorf("64-caller era target: %+v, want MISS at 2× of 1.12×", thr)
	}
	md := r.Markdown("")
	for _, want := range []string{
		"The `-modern` rows are the stdio contenders in the modern era",
		"**Legacy and modern era side by side**",
		"| mcpvisor | 14.0 | 15.0 | 1.07× | 1 | 1 | 1.00× |",        // latency, p50 first
		"| mcpvisor | 50 | 25 | 2.00× | 1.0 | 1.0 | 1.00× |",        // throughput, calls/s first
		"| mcpvisor-modern | 15.0 | 30.0 | 0 | 1 | 1.25× | 0.34× |", // ratios to raw-modern and the best modern peer (mark3labs-modern, 44 µs)
		"| mcpvisor-modern | 25 | 1.0 | 2.0 | 0 | 0.31× | 1.39× |",  // to raw-modern's 80 and mark3labs-modern's 18 calls/s
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
	ts = r.Targets()
	if lat := ts[3]; lat.Pass || lat.Missing || !strings.Contains(lat.Measured, "boom") {
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
