package harness

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Run is one run of the harness: what ran where, and every record. It is the
// JSON results file.
type Run struct {
	Date     string    `json:"date"` // YYYY-MM-DD, names the report
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Quick    bool      `json:"quick"`
	Machine  Machine   `json:"machine"`
	Sizes    Sizes     `json:"sizes"`
	Records  []Record  `json:"records"`
	Failures []string  `json:"failures,omitempty"` // scenarios that could not complete
}

// Machine describes where a run happened.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go"`
	Commit    string `json:"commit"` // of the mcpvisor tree measured
	// LoadBefore and LoadAfter are /proc/loadavg when the run started and
	// ended: a busy machine (other builds, tests) makes every figure noisier.
	LoadBefore string `json:"load_before,omitempty"`
	LoadAfter  string `json:"load_after,omitempty"`
	// FileLimit is the open-file limit (RLIMIT_NOFILE) the run had, which
	// the echo server child inherits.
	FileLimit uint64 `json:"file_limit,omitempty"`
}

// Target is one of the issues' performance targets, evaluated on a run.
type Target struct {
	From     string // where the target comes from: "issue 21", "issue 3", ...
	Name     string // the target as the issue states it
	Measured string // what this run measured, with the figures it comes from
	Pass     bool
	Missing  bool // the run has no figure for it (scenario not run or failed)
}

// Where the targets come from.
const (
	fromIssue21 = "issue 21"
	fromIssue3  = "issue 3"
	fromJournal = "journal"
	fromModern  = "modern era"
	fromIssue39 = "issue 39"
)

// find returns the record of scenario and contender, or nil.
func (r *Run) find(scenario, contender string) *Record {
	for i := range r.Records {
		if r.Records[i].Scenario == scenario && r.Records[i].Contender == contender {
			return &r.Records[i]
		}
	}
	return nil
}

// ran reports whether the record exists and measured something.
func ran(rec *Record) bool { return rec != nil && (rec.Calls > 0 || len(rec.Metrics) > 0) }

// bestPeer returns the peer record with the highest throughput.
func (r *Run) bestPeer(scenario string) *Record { return r.bestOf(scenario, peers) }

// bestOf returns the record of names with the highest throughput.
func (r *Run) bestOf(scenario string, names []string) *Record {
	var best *Record
	for _, p := range names {
		if rec := r.find(scenario, p); ran(rec) && (best == nil || rec.CallsPerSec > best.CallsPerSec) {
			best = rec
		}
	}
	return best
}

// Targets evaluates the issues' targets on the run's figures: issue 21's
// first, then those of earlier issues that it does not supersede. In the
// repeated scenarios the figures are the medians of the repeats. Sizes are
// the run's own: a quick run checks the start-up and scale targets at its
// smaller server counts, and says so.
func (r *Run) Targets() []Target {
	var ts []Target
	add := func(from, name string, ok bool, pass bool, format string, args ...any) {
		t := Target{From: from, Name: name, Missing: !ok}
		if ok {
			t.Pass, t.Measured = pass, fmt.Sprintf(format, args...)
		} else {
			t.Measured = "not measured"
		}
		ts = append(ts, t)
	}

	// Issue 21: mcpvisor against the floor, the raw client in the form
	// that fits the load, and against the peers; CPU per call; isolation;
	// scale over HTTP; the journal's memory.
	raw, host := r.find(ScenarioLatency, Raw), r.find(ScenarioLatency, Mcpvisor)
	ok := ran(raw) && ran(host) && host.Errors == 0
	ratio := safeDiv(field(host, p50), field(raw, p50))
	add(fromIssue21, "1 caller: mcpvisor p50 ≤ 1.3× the synchronous raw client", ok, ratio <= 1.3,
		"%.2f× (%.1f µs vs %.1f µs%s)", ratio, field(host, p50), field(raw, p50), spreads(host, raw))
	tail := safeDiv(field(host, p90), field(host, p50))
	add(fromIssue21, "1 caller: mcpvisor p90 ÷ p50 ≤ 2", ok, tail <= 2,
		"%.2f (p90 %.1f µs, p50 %.1f µs)", tail, field(host, p90), field(host, p50))

	raw, host = r.find(ScenarioThroughput, Raw), r.find(ScenarioThroughput, Mcpvisor)
	best := r.bestPeer(ScenarioThroughput)
	ok = ran(raw) && ran(host) && host.Errors == 0
	ratio = safeDiv(field(host, cps), field(raw, cps))
	add(fromIssue21, fmt.Sprintf("%d callers: mcpvisor calls/s ≥ 0.7× the pipelined raw client", r.Sizes.Callers), ok, ratio >= 0.7,
		"%.2f× (%.0f vs %.0f calls/s)", ratio, field(host, cps), field(raw, cps))
	ratio = safeDiv(field(host, cps), field(best, cps))
	bestName := "no peer"
	if best != nil {
		bestName = best.Contender
	}
	add(fromIssue21, fmt.Sprintf("%d callers: mcpvisor calls/s ≥ 3× the best of go-sdk and mark3labs", r.Sizes.Callers), ok && best != nil, ratio >= 3,
		"%.2f× (%.0f vs %s %.0f calls/s)", ratio, field(host, cps), bestName, field(best, cps))
	ratio = safeDiv(field(host, hostCPU), field(raw, hostCPU))
	add(fromIssue21, fmt.Sprintf("%d callers: host CPU per call ≤ 1.5× the pipelined raw client's", r.Sizes.Callers), ok && field(raw, hostCPU) > 0, ratio <= 1.5,
		"%.2f× (%.2f vs %.2f CPU-seconds per 100k calls)", ratio, field(host, hostCPU), field(raw, hostCPU))

	base, trouble := r.find(ScenarioIsolation, "mcpvisor-baseline"), r.find(ScenarioIsolation, "mcpvisor-trouble")
	isolated := ran(base) && ran(trouble) && trouble.Errors == 0
	ratio = safeDiv(field(trouble, p99), field(base, p99))
	add(fromIssue21, "Isolation: healthy-server p99 with hung, crash-looping and non-reading neighbours ≤ 1.2× without them", isolated, ratio <= 1.2,
		"%.2f× (%.1f µs vs %.1f µs)", ratio, field(trouble, p99), field(base, p99))

	// Issue 4 asked for the scenario; issue 21 sets the figure: every server
	// ready without a restart (and, as issue 4 had it, every random call
	// answered).
	host = r.find(ScenarioScaleHTTP, Mcpvisor)
	name := fmt.Sprintf("Scale over HTTP: %d HTTP servers in one Host ready with zero restarts, random calls answered", r.Sizes.ScaleHTTPServers)
	switch {
	case host == nil || host.Metrics == nil:
		add(fromIssue21, name, false, false, "")
	case metric(host, "ready_ms") > 0:
		add(fromIssue21, name, true, clean(host), "all ready in %.1f s, %.0f restart(s) of %.0f server(s) on the way; %d of %d calls failed; host RSS %.0f MB, peak %.0f of %.0f descriptors",
			metric(host, "ready_ms")/1000, metric(host, "restarts"), metric(host, "servers_that_failed"), host.Errors, host.Calls, metric(host, "rss_mb"),
			metric(host, "peak_fds"), metric(host, "fd_limit"))
	default:
		add(fromIssue21, name, true, false, "%.0f of %d ready after %.0f s, %.0f restart(s); peak %.0f of %.0f descriptors",
			metric(host, "ready_servers"), host.Servers, metric(host, "waited_ms")/1000, metric(host, "restarts"), metric(host, "peak_fds"), metric(host, "fd_limit"))
	}

	// The journal's memory: the host's peak VmRSS over its baseline in
	// every host run of the flood, the anonymous part beside it.
	host = r.find(ScenarioJournal, Mcpvisor)
	ok = ran(host) && host.Errors == 0
	peak := metric(host, "peak_rss_mb")
	measured := fmt.Sprintf("%+.1f MiB with 1 server (anonymous %+.1f)", metric(host, "peak_rss_mb"), metric(host, "peak_anon_mb"))
	if multi := r.find(ScenarioJournal, MjournalMulti); ran(multi) && multi.Errors == 0 {
		peak = math.Max(peak, metric(multi, "peak_rss_mb"))
		measured += fmt.Sprintf(", %+.1f MiB with %d servers (anonymous %+.1f)", metric(multi, "peak_rss_mb"), multi.Servers, metric(multi, "peak_anon_mb"))
	}
	add(fromIssue21, fmt.Sprintf("Journal flood (%s events): host peak RSS ≤ +256 MiB over its baseline", countName(r.Sizes.JournalEvents)), ok, peak <= 256,
		"%s (baseline %.0f MiB)", measured, metric(host, "rss_base_mb"))

	// Kept from the earlier issues, which issue 21 does not supersede. The
	// modern era (2026-07-28): a modern call costs mcpvisor no more than a
	// legacy one plus what the _meta bytes cost the raw pipe.
	ts = append(ts, r.eraTarget(ScenarioLatency, "1 caller: mcpvisor-modern p50 ≤ legacy mcpvisor's + what the _meta costs the raw pipe"))
	ts = append(ts, r.eraTarget(ScenarioThroughput, fmt.Sprintf("%d callers: mcpvisor-modern time per call (1 ÷ calls/s) ≤ legacy mcpvisor's + what the _meta costs the raw pipe", r.Sizes.Callers)))

	worst := math.Max(metric(base, "status_max_us"), metric(trouble, "status_max_us"))
	add(fromIssue3, "Isolation: Host.Status answers in < 5 ms throughout", isolated, worst < 5000,
		"slowest of %.0f samples: %.2f ms (p99 %.3f ms with the bad servers)",
		metric(base, "status_samples")+metric(trouble, "status_samples"), worst/1000, metric(trouble, "status_p99_us")/1000)

	host = r.find(ScenarioStartup, Mcpvisor)
	ok = ran(host) && ran(r.find(ScenarioStartup, Raw))
	after := metric(host, "after_processes_ms")
	add(fromIssue3, fmt.Sprintf("Start-up: %d servers ready < 2 s after their processes are ready", r.Sizes.StartupServers), ok, after < 2000,
		"%.0f ms after (%.0f ms from Open, processes alone %.0f ms)", after, metric(host, "ready_ms"), metric(host, "ready_ms")-after)

	host = r.find(ScenarioScale, Mcpvisor)
	ok = ran(host) && host.Errors == 0
	add(fromIssue3, fmt.Sprintf("Scale: %d servers ready < 30 s", r.Sizes.ScaleServers), ok, metric(host, "ready_ms") < 30000,
		"%.2f s", metric(host, "ready_ms")/1000)
	add(fromIssue3, fmt.Sprintf("Scale: host RSS < 300 MB with %d servers (children excluded)", r.Sizes.ScaleServers), ok, metric(host, "rss_mb") < 300,
		"%.1f MB (%.1f KiB per server)", metric(host, "rss_mb"), metric(host, "rss_per_server_kb"))

	host = r.find(ScenarioJournal, Mcpvisor)
	ok = ran(host) && host.Errors == 0
	add(fromJournal, "Journal: durable events/s ≥ 100,000 (1 server)", ok, metric(host, "events_per_sec") >= 100000,
		"%.0f events/s (%.0f of %.0f journaled in %.2f s, %.0f dropped)", metric(host, "events_per_sec"),
		metric(host, "journaled"), metric(host, "events"), metric(host, "elapsed_ms")/1000, metric(host, "dropped"))

	alone, flooded := r.find(ScenarioFlood, "mcpvisor-alone"), r.find(ScenarioFlood, "mcpvisor-flooded")
	ok = ran(alone) && ran(flooded) && flooded.Errors == 0
	ratio = safeDiv(field(flooded, p99), field(alone, p99))
	add(fromIssue39, "Flood: a healthy server's p99 while a neighbour floods notifications (100 journal subscribers) ≤ 1.5× alone", ok, ratio <= 1.5,
		"%.2f× (%.1f µs vs %.1f µs)", ratio, field(flooded, p99), field(alone, p99))
	ratio = safeDiv(field(flooded, cps), field(alone, cps))
	add(fromIssue39, "Flood: its calls/s ≥ 0.8× alone", ok, ratio >= 0.8,
		"%.2f× (%.0f vs %.0f calls/s; %.0f flood events over the rate)", ratio, field(flooded, cps), field(alone, cps), metric(flooded, "flood_events_rate_limited"))
	ts = append(ts, r.gatewayPeerTargets()...)
	ts = append(ts, r.clusterTargets()...)
	return ts
}

// spreads is the repeat p50 ranges of a and b, for a target's figures
// ("" when neither was repeated).
func spreads(a, b *Record) string {
	if a == nil || b == nil || a.Repeats == 0 || b.Repeats == 0 {
		return ""
	}
	return fmt.Sprintf("; repeat p50s %.1f–%.1f vs %.1f–%.1f µs", a.P50MinUs, a.P50MaxUs, b.P50MinUs, b.P50MaxUs)
}

// countName writes 1000000 as 1M and 100000 as 100k.
func countName(n int) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dM", n/1e6)
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("%dk", n/1e3)
	}
	return fmt.Sprint(n)
}

// eraCost is what a call costs a contender in scenario, in µs: the p50
// latency with one caller, the wall time per call (1 ÷ calls/s) with many.
func eraCost(scenario string) func(*Record) float64 {
	if scenario == ScenarioLatency {
		return p50
	}
	return func(r *Record) float64 { return 1e6 / r.CallsPerSec }
}

// eraComparison is mcpvisor's modern call against its legacy one in a
// scenario, and the raw pipe's, which gives what the _meta bytes cost.
type eraComparison struct {
	legacy, modern, rawLegacy, rawModern *Record
	cost                                 func(*Record) float64
}

func (r *Run) eraComparison(scenario string) eraComparison {
	return eraComparison{legacy: r.find(scenario, Mcpvisor), modern: r.find(scenario, McpvisorModern),
		rawLegacy: r.find(scenario, Raw), rawModern: r.find(scenario, RawModern), cost: eraCost(scenario)}
}

// ok reports whether every figure the comparison needs was measured.
func (e eraComparison) ok() bool {
	return ran(e.legacy) && ran(e.modern) && ran(e.rawLegacy) && ran(e.rawModern) && e.legacy.Errors == 0 && e.modern.Errors == 0
}

// ratio is mcpvisor's modern cost over its legacy one.
func (e eraComparison) ratio() float64 { return safeDiv(e.cost(e.modern), e.cost(e.legacy)) }

// metaCost is what the _meta costs the raw pipe per call, in µs: its modern
// cost less its legacy one, 0 when the modern pipe measured faster.
func (e eraComparison) metaCost() float64 {
	return math.Max(0, e.cost(e.rawModern)-e.cost(e.rawLegacy))
}

// allowed is the ratio the target allows: legacy mcpvisor's cost plus the
// _meta's, over legacy mcpvisor's.
func (e eraComparison) allowed() float64 {
	return safeDiv(e.cost(e.legacy)+e.metaCost(), e.cost(e.legacy))
}

// eraTarget evaluates the modern-era target of scenario: mcpvisor's modern
// cost ≤ its legacy cost + the raw pipe's modern cost less its legacy one.
// A modern mcpvisor that could not connect or whose calls failed misses it.
func (r *Run) eraTarget(scenario, name string) Target {
	e := r.eraComparison(scenario)
	switch {
	case e.modern != nil && !ran(e.modern):
		return Target{From: fromModern, Name: name, Measured: "mcpvisor-modern measured nothing: " + e.modern.Note}
	case ran(e.modern) && e.modern.Errors > 0:
		return Target{From: fromModern, Name: name, Measured: fmt.Sprintf("%d of %d modern calls failed: %s", e.modern.Errors, e.modern.Calls, e.modern.Note)}
	case !e.ok():
		return Target{From: fromModern, Name: name, Measured: "not measured", Missing: true}
	}
	ratio, allowed := e.ratio(), e.allowed()
	t := Target{From: fromModern, Name: name, Pass: ratio <= allowed}
	unit := "µs"
	if scenario != ScenarioLatency {
		unit = "µs per call"
	}
	t.Measured = fmt.Sprintf("%.2f× legacy (%.1f vs %.1f %s", ratio, e.cost(e.modern), e.cost(e.legacy), unit)
	if scenario != ScenarioLatency {
		t.Measured += fmt.Sprintf(": %.0f vs %.0f calls/s", e.modern.CallsPerSec, e.legacy.CallsPerSec)
	}
	t.Measured += fmt.Sprintf("); allowed ≤ %.2f× (+%.2f µs: the raw pipe's %.2f → %.2f %s", allowed, e.metaCost(), e.cost(e.rawLegacy), e.cost(e.rawModern), unit)
	if e.cost(e.rawModern) < e.cost(e.rawLegacy) {
		t.Measured += ", faster, counted as no cost"
	}
	t.Measured += ")"
	return t
}

func p50(r *Record) float64     { return r.P50us }
func p90(r *Record) float64     { return r.P90us }
func p99(r *Record) float64     { return r.P99us }
func cps(r *Record) float64     { return r.CallsPerSec }
func hostCPU(r *Record) float64 { return r.HostCPU }

func field(r *Record, f func(*Record) float64) float64 {
	if r == nil {
		return 0
	}
	return f(r)
}

func metric(r *Record, name string) float64 {
	if r == nil {
		return 0
	}
	return r.Metrics[name]
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// TargetsTable writes the targets as a markdown table, PASS or MISS each.
func (r *Run) TargetsTable(b *strings.Builder) {
	b.WriteString("| from | target | measured | result |\n|---|---|---|---|\n")
	for _, t := range r.Targets() {
		res := "MISS"
		switch {
		case t.Missing:
			res = "not run"
		case t.Pass:
			res = "PASS"
		}
		fmt.Fprintf(b, "| %s | %s | %s | **%s** |\n", t.From, t.Name, t.Measured, res)
	}
}

// Markdown renders the run as the dated report; chart is the PNG's file name
// beside it ("" for none).
func (r *Run) Markdown(chart string) string {
	var b strings.Builder
	size := "full size (`make bench`)"
	if r.Quick {
		size = "quick size (`make bench-quick`: a tenth of the calls, fewer servers)"
	}
	fmt.Fprintf(&b, "# mcpvisor bench report, %s\n\n", r.Date)
	fmt.Fprintf(&b, "`bench/cmd/mcpbench` at %s, started %s, took %.0f s. Machine: %s, %d cores, Linux %s, %s. mcpvisor at %s.\n\n",
		size, r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Seconds, r.Machine.CPU, r.Machine.Cores, r.Machine.Kernel, r.Machine.GoVersion, r.Machine.Commit)
	if r.Machine.LoadBefore != "" {
		fmt.Fprintf(&b, "Load average (1, 5, 15 min) at the start: %s; at the end: %s.\n\n", r.Machine.LoadBefore, r.Machine.LoadAfter)
	}
	b.WriteString("Every contender calls the same echo server binary (`bench/cmd/echoserver`). The scenarios \"over Streamable HTTP\" (7 to 9) run the same server as `echoserver -http`, one child process serving every contender on loopback (net/http, one JSON body per request). " +
		"Ratios are the contender's figure divided by the floor's or by the best peer's (`go-sdk`, `mark3labs`); for latency and CPU lower is better, for calls/s higher is better. " +
		"Every contender speaks protocol revision 2025-11-25 (the legacy era, through `initialize`) but the `-modern` ones of scenarios 1 and 2, which speak 2026-07-28 (the modern era: `server/discover`, then the `_meta` on every request) to the echo server run with `-era modern`; their ratios are to `raw-modern` and to the best modern peer.\n\n")
	r.methodNotes(&b)
	if len(r.Failures) > 0 {
		b.WriteString("**Scenarios that failed:**\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
		b.WriteString("\n")
	}

	b.WriteString("## Targets\n\n")
	r.TargetsTable(&b)
	b.WriteString("\n")
	if chart != "" {
		fmt.Fprintf(&b, "![p50 latency with one caller, and calls/s with %d callers, per contender](%s)\n\n", r.Sizes.Callers, chart)
	}

	if rec := r.find(ScenarioLatency, Raw); rec != nil {
		fmt.Fprintf(&b, "## 1. Latency: 1 caller, 1 server, %s\n\n", r.perRepeat(r.Sizes.LatencyCalls))
		b.WriteString("The floor, `raw`, is the synchronous raw client: it writes a call's line and reads the reply's line.\n\n")
		r.sidecarIntro(&b, ScenarioLatency)
		r.modernIntro(&b, ScenarioLatency)
		r.loadTable(&b, ScenarioLatency, true)
		r.eraTable(&b, ScenarioLatency, true)
	}
	if rec := r.find(ScenarioThroughput, Raw); rec != nil {
		fmt.Fprintf(&b, "## 2. Throughput: %d concurrent callers, 1 server, %s\n\n", r.Sizes.Callers, r.perRepeat(r.Sizes.ThroughputCalls))
		b.WriteString("The floor, `raw`, is the pipelined raw client: one writer lock per pipe, one reader goroutine per pipe handing each reply to its caller by id.\n\n")
		r.sidecarIntro(&b, ScenarioThroughput)
		r.modernIntro(&b, ScenarioThroughput)
		r.loadTable(&b, ScenarioThroughput, false)
		r.eraTable(&b, ScenarioThroughput, false)
	}
	if rec := r.find(ScenarioFanout, Raw); rec != nil {
		fmt.Fprintf(&b, "## 3. Fan-out: %d concurrent callers over %d servers, %d calls per contender\n\n", r.Sizes.Callers, r.Sizes.FanoutServers, r.Sizes.FanoutCalls)
		fmt.Fprintf(&b, "mcpvisor: one Host supervising every server. go-sdk and mark3labs: one client session per server. raw: the pipelined raw client, one pipe per server. Call k goes to server k mod N. "+
			"Not repeated: each contender connects once and the calls are split into %d interleaved rounds; the figures pool every call.\n\n", r.Sizes.Rounds)
		r.loadTable(&b, ScenarioFanout, false)
	}
	r.isolationSection(&b)
	r.startupSection(&b)
	r.scaleSection(&b)
	if rec := r.find(ScenarioLatencyHTTP, Raw); rec != nil {
		fmt.Fprintf(&b, "## 7. Latency over Streamable HTTP: 1 caller, 1 server, %s\n\n", r.perRepeat(r.Sizes.LatencyCalls))
		b.WriteString(httpLoadIntro)
		r.loadTable(&b, ScenarioLatencyHTTP, true)
	}
	if rec := r.find(ScenarioThroughputHTTP, Raw); rec != nil {
		fmt.Fprintf(&b, "## 8. Throughput over Streamable HTTP: %d concurrent callers, 1 server, %s\n\n", r.Sizes.Callers, r.perRepeat(r.Sizes.ThroughputCalls))
		b.WriteString(httpLoadIntro)
		r.loadTable(&b, ScenarioThroughputHTTP, false)
	}
	r.scaleHTTPSection(&b)
	r.journalSection(&b)
	r.gatewaySection(&b)
	r.gatewayPeersSection(&b)
	r.clusterSection(&b)
	b.WriteString("## Reproduce\n\n```sh\nmake bench         # this report: bench/results/<date>.md, .png, results-<date>.json\nmake bench-quick   # the short version (CI), into bench/results/quick/\n```\n")
	return b.String()
}

// methodNotes states how the load scenarios are measured: the repeats and
// their medians, the floor, and the CPU figures.
func (r *Run) methodNotes(b *strings.Builder) {
	fmt.Fprintf(b, "**Repeats and medians.** Scenarios 1, 2, 4, 7 and 8 run each contender %d times, interleaved: in each repeat the contenders run one after another (raw, mcpvisor, go-sdk, mark3labs, ..., then again), the first of them rotating from repeat to repeat, "+
		"and each run is a fresh client: connect, %d warm-up calls, a garbage collection (so that what ran before is not collected on its time), the measured calls, close. Isolation alternates its two phases the same way, a fresh Host each. "+
		"A contender is thus alone in this process while it is measured, and the garbage collector runs as often as its own allocation makes it (in the earlier reports, those without a p50 range, every contender stayed connected throughout, and their combined heap made the collector rarer for all, allocation-heavy peers most). "+
		"Every figure of those scenarios (p50, p90, p99, calls/s, CPU) is the median of the repeats' own; ratios and targets are taken on the medians. "+
		"The p50 range beside it is the smallest and largest repeat p50: a wide one, or two clusters in the JSON's `repeat_p50_us`, is a figure a single run would have reported as either. "+
		"Fan-out (3) and the gateway (11) are not repeated: each contender connects once and the calls are split into rounds, interleaved, and pooled.\n\n", r.Sizes.Repeats, r.Sizes.WarmupCalls)
	b.WriteString("**The floor** is `raw`: no SDK and no host, just lines on the pipes. With one caller it is the synchronous raw client: write a call's line, read the reply's line. " +
		"With more callers it is the pipelined raw client: one writer lock per pipe, under which each caller writes its line, and one reader goroutine per pipe handing each reply to its caller by id. " +
		"Over Streamable HTTP (7 to 9) the floor is net/http POSTs of the JSON-RPC frame with no SDK.\n\n")
	b.WriteString("**CPU** is in CPU-seconds per 100,000 calls, taken across each contender's measured calls only. Host CPU is this process's user + system time (getrusage `RUSAGE_SELF`): the client's and, for mcpvisor, the host's (and the sidecar's HTTP server, in this process); " +
		"the harness's own driving of the calls is in every contender's figure alike. The echo servers are child processes, so it leaves them out: server CPU is theirs over the same window " +
		"(each child's CPU-time clock read before and after, plus what a child waited for in between had used), so that a client cannot look cheap by making the server work. Both are medians of the repeats.\n\n")
}

// perRepeat describes the calls of a repeated scenario.
func (r *Run) perRepeat(calls int) string {
	return fmt.Sprintf("%d calls per contender in each of %d repeats", calls, r.Sizes.Repeats)
}

// sidecarIntro explains the sidecar contenders of a scenario that has them,
// and mcpvisor without call history.
func (r *Run) sidecarIntro(b *strings.Builder, scenario string) {
	if r.find(scenario, McpvisorNoHistory) != nil {
		b.WriteString("`mcpvisor-nohistory` is the same embedded Host with `Journal.NoCallHistory`: no record of each call in the journal's history. " +
			"`mcpvisor` keeps that history, as a Host does by default; the difference between the two rows is what journaling every call costs.\n\n")
	}
	if r.find(scenario, McpvisorTraced) != nil {
		b.WriteString("`mcpvisor-traced` is the same embedded Host tracing every call: `Options.TracerProvider` is the OpenTelemetry SDK's, sampling every call, " +
			"with a batch span processor and an exporter that discards the spans (a call span and its queue wait, send and server time). " +
			"`mcpvisor` has no provider, so tracing is off; the difference between the two rows is what tracing costs when it is on.\n\n")
	}
	if r.find(scenario, SidecarAPI) == nil && r.find(scenario, SidecarMCP) == nil {
		return
	}
	b.WriteString("`sidecar-api` and `sidecar-mcp` are mcpvisor as a sidecar, as `mcpvisor serve` runs it: the same embedded Host of stdio echo servers behind `sidecar.New`'s API, " +
		"with the gateway mounted at `/mcp`, on an `http.Server` listening on a loopback TCP port in this process. " +
		"`sidecar-api`: each call is one `POST /v1/call` (`{\"tool\": \"mcp__s000__echo\", \"arguments\": ...}`, bearer token) through a keep-alive `net/http` client keeping up to 64 idle connections; the JSON answer is decoded and `isError` checked. " +
		"`sidecar-mcp`: the official Go SDK client over `mcp.StreamableClientTransport` (the same pool, the token added), one session on the gateway, `CallTool(\"mcp__s000__echo\")`; the host has the server always on, so its tools are listed without `activate_tools`. " +
		"Their ratios include the HTTP hop and its JSON on both sides, which the embedded host does not pay.\n\n")
}

// loadTable writes the table of a latency, throughput or fan-out scenario.
func (r *Run) loadTable(b *strings.Builder, scenario string, latencyFirst bool) {
	raw := r.find(scenario, Raw)
	best := r.bestPeer(scenario)
	var bestLat *Record
	for _, p := range peers {
		if rec := r.find(scenario, p); ran(rec) && (bestLat == nil || rec.P50us < bestLat.P50us) {
			bestLat = rec
		}
	}
	// Over HTTP: the connections the echo server accepted and the POSTs it
	// answered during the measured calls.
	conns := raw != nil && raw.Metrics["posts_per_call"] > 0
	extraHead, extraRule := "", ""
	if conns {
		extraHead, extraRule = " new connections | POSTs per call |", "---:|---:|"
	}
	const cpuHead = " host CPU s per 100k calls | server CPU s per 100k calls |"
	if latencyFirst {
		b.WriteString("| contender | p50 µs | p50 range µs | p90 µs | p99 µs | calls/s |" + cpuHead + " p50 × raw | p50 × best peer | p90 ÷ p50 | p99 × raw | host CPU × raw | errors |" + extraHead +
			"\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + extraRule + "\n")
	} else {
		b.WriteString("| contender | calls/s | calls/s range | p50 µs | p50 range µs | p90 µs | p99 µs |" + cpuHead + " calls/s × raw | calls/s × best peer | p99 × raw | host CPU × raw | errors |" + extraHead +
			"\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + extraRule + "\n")
	}
	// The modern rows are compared with the modern floor and peers.
	rawModern, bestModern := r.find(scenario, RawModern), r.bestOf(scenario, modernPeers)
	var bestLatModern *Record
	for _, p := range modernPeers {
		if rec := r.find(scenario, p); ran(rec) && (bestLatModern == nil || rec.P50us < bestLatModern.P50us) {
			bestLatModern = rec
		}
	}
	var notes []string
	for _, c := range loadContenders {
		rec := r.find(scenario, c.name())
		if rec == nil {
			continue
		}
		raw, best, bestLat := raw, best, bestLat
		if strings.HasSuffix(rec.Contender, modernSuffix) {
			raw, best, bestLat = rawModern, bestModern, bestLatModern
		}
		if rec.Note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", rec.Contender, rec.Note))
		}
		extra := ""
		if conns {
			extra = " — | — |"
			if rec.Metrics != nil {
				extra = fmt.Sprintf(" %.0f | %.2f |", rec.Metrics["conns_opened"], rec.Metrics["posts_per_call"])
			}
		}
		if !ran(rec) {
			fmt.Fprintf(b, "| %s | — | — | — | — | — | — | — | — | — | — | — | — | failed |%s\n", rec.Contender, extra)
			continue
		}
		cpu := fmt.Sprintf("%.2f | %.2f", rec.HostCPU, rec.ServerCPU)
		if latencyFirst {
			fmt.Fprintf(b, "| %s | %.1f | %s | %.1f | %.1f | %.0f | %s | %s | %s | %s | %s | %s | %d |%s\n", rec.Contender, rec.P50us, p50Range(rec), rec.P90us, rec.P99us, rec.CallsPerSec, cpu,
				ratioCell(rec.P50us, field(raw, p50)), ratioCell(rec.P50us, field(bestLat, p50)), formatRatio(rec.P90us, rec.P50us, "%.2f"), ratioCell(rec.P99us, field(raw, p99)),
				ratioCell(rec.HostCPU, field(raw, hostCPU)), rec.Errors, extra)
		} else {
			fmt.Fprintf(b, "| %s | %.0f | %s | %.1f | %s | %.1f | %.1f | %s | %s | %s | %s | %s | %d |%s\n", rec.Contender, rec.CallsPerSec, cpsRange(rec), rec.P50us, p50Range(rec), rec.P90us, rec.P99us, cpu,
				ratioCell(rec.CallsPerSec, field(raw, cps)), ratioCell(rec.CallsPerSec, field(best, cps)), ratioCell(rec.P99us, field(raw, p99)),
				ratioCell(rec.HostCPU, field(raw, hostCPU)), rec.Errors, extra)
		}
	}
	b.WriteString("\n")
	writeNotes(b, notes)
}

// p50Range is the smallest and largest repeat p50 of a repeated record,
// "" for one that was not repeated.
func p50Range(rec *Record) string {
	if rec.Repeats == 0 {
		return ""
	}
	return fmt.Sprintf("%.1f–%.1f", rec.P50MinUs, rec.P50MaxUs)
}

// cpsRange is the smallest and largest repeat calls/s of a repeated
// record, "" for one that was not repeated.
func cpsRange(rec *Record) string {
	if len(rec.RepeatCallsPerSec) == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f–%.0f", slices.Min(rec.RepeatCallsPerSec), slices.Max(rec.RepeatCallsPerSec))
}

// modernIntro explains the modern-era contenders of a scenario that has them.
func (r *Run) modernIntro(b *strings.Builder, scenario string) {
	if r.find(scenario, RawModern) == nil && r.find(scenario, McpvisorModern) == nil {
		return
	}
	b.WriteString("The `-modern` rows are the stdio contenders in the modern era (protocol revision 2026-07-28), in the same repeats as the others. " +
		"Their echo server runs with `-era modern`: it answers `server/discover`, refuses `initialize` (-32022, naming the versions it supports), adds `\"resultType\":\"complete\"` to every result, " +
		"and rejects a request whose `_meta` lacks the protocol version or the client's capabilities (-32602), so that no contender can fall back to the legacy handshake, or leave the `_meta` out, unnoticed. " +
		"`raw-modern`: `server/discover` and `tools/list`, then each call, with the `_meta` mcpvisor sends (the same members, as many bytes). " +
		"`mcpvisor-modern`: the same embedded Host, which detects the era itself (`server/discover` first, as it does for every server). " +
		"`go-sdk-modern`: `ClientSessionOptions.ProtocolVersion` 2026-07-28 (its default). `mark3labs-modern`: `WithProtocolVersion(\"2026-07-28\")` (v1.2.1 speaks both eras). " +
		"Each one's protocol version is checked once it is connected. Their ratios are to `raw-modern` and to the best modern peer.\n\n")
}

// eraTable writes, per stdio contender, its legacy and modern figures side
// by side and their ratio, then what the _meta adds to a call on the pipe.
func (r *Run) eraTable(b *strings.Builder, scenario string, latencyFirst bool) {
	if r.find(scenario, RawModern) == nil && r.find(scenario, McpvisorModern) == nil {
		return
	}
	b.WriteString("**Legacy and modern era side by side** (modern ÷ legacy: above 1, the modern call costs more")
	if latencyFirst {
		b.WriteString("):\n\n| contender | legacy p50 µs | modern p50 µs | p50 modern ÷ legacy | legacy calls/s | modern calls/s | time per call modern ÷ legacy |\n|---|---:|---:|---:|---:|---:|---:|\n")
	} else {
		b.WriteString("; time per call is 1 ÷ calls/s):\n\n| contender | legacy calls/s | modern calls/s | time per call modern ÷ legacy | legacy p50 µs | modern p50 µs | p50 modern ÷ legacy |\n|---|---:|---:|---:|---:|---:|---:|\n")
	}
	for _, c := range contenders {
		legacy, modern := r.find(scenario, c.name()), r.find(scenario, modernName(c.name()))
		switch {
		case !ran(legacy) && !ran(modern):
			continue
		case !ran(modern):
			note := "not run"
			if modern != nil {
				note = "failed (see the notes above)"
			}
			fmt.Fprintf(b, "| %s | | %s | | | | |\n", c.name(), note)
			continue
		case !ran(legacy):
			fmt.Fprintf(b, "| %s | failed (see the notes above) | | | | | |\n", c.name())
			continue
		}
		perCall := ratioCell(legacy.CallsPerSec, modern.CallsPerSec) // time per call: the inverse of calls/s
		if latencyFirst {
			fmt.Fprintf(b, "| %s | %.1f | %.1f | %s | %.0f | %.0f | %s |\n", c.name(), legacy.P50us, modern.P50us, ratioCell(modern.P50us, legacy.P50us),
				legacy.CallsPerSec, modern.CallsPerSec, perCall)
		} else {
			fmt.Fprintf(b, "| %s | %.0f | %.0f | %s | %.1f | %.1f | %s |\n", c.name(), legacy.CallsPerSec, modern.CallsPerSec, perCall,
				legacy.P50us, modern.P50us, ratioCell(modern.P50us, legacy.P50us))
		}
	}
	b.WriteString("\n")
	if raw, rawModern := r.find(scenario, Raw), r.find(scenario, RawModern); metric(raw, "request_bytes") > 0 && metric(rawModern, "request_bytes") > 0 {
		fmt.Fprintf(b, "On the pipe, a raw call is %.0f bytes and its reply %.0f in the legacy era, %.0f and %.0f in the modern one: the `_meta` adds %.0f bytes to each request, `resultType` %.0f to each reply. ",
			metric(raw, "request_bytes"), metric(raw, "reply_bytes"), metric(rawModern, "request_bytes"), metric(rawModern, "reply_bytes"),
			metric(rawModern, "request_bytes")-metric(raw, "request_bytes"), metric(rawModern, "reply_bytes")-metric(raw, "reply_bytes"))
	}
	if e := r.eraComparison(scenario); e.ok() {
		what := "p50"
		if !latencyFirst {
			what = "time per call"
		}
		verdict := "within"
		if e.ratio() > e.allowed() {
			verdict = "over"
		}
		fmt.Fprintf(b, "mcpvisor's modern %s is **%.2f×** its legacy one; the target allows %.2f× (its legacy %s, %.2f µs, plus the %.2f µs the `_meta` costs the raw pipe): %s it.",
			what, e.ratio(), e.allowed(), what, e.cost(e.legacy), e.metaCost(), verdict)
	}
	b.WriteString("\n\n")
}

// writeNotes writes a table's notes as a list.
func writeNotes(b *strings.Builder, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
}

func ratioCell(a, b float64) string { return formatRatio(a, b, "%.2f×") }

// smallRatioCell is ratioCell with two significant digits, for ratios far
// below 1.
func smallRatioCell(a, b float64) string { return formatRatio(a, b, "%.2g×") }

func formatRatio(a, b float64, format string) string {
	if b == 0 || math.IsNaN(a/b) {
		return "—"
	}
	return fmt.Sprintf(format, a/b)
}

func (r *Run) isolationSection(b *strings.Builder) {
	base, trouble := r.find(ScenarioIsolation, "mcpvisor-baseline"), r.find(ScenarioIsolation, "mcpvisor-trouble")
	if base == nil && trouble == nil {
		return
	}
	healthy := r.Sizes.IsolationServers - 3
	fmt.Fprintf(b, "## 4. Isolation: %d healthy servers, with and without 3 misbehaving ones (mcpvisor)\n\n", healthy)
	fmt.Fprintf(b, "%d callers make %d calls to the healthy servers in each phase; each phase runs %d times, alternating with the other (baseline, trouble, baseline, ...), each time on a fresh Host, and the figures are the medians of the repeats (the ranges: their smallest and largest). "+
		"In the trouble phase three more servers run: `hang` (answers the handshake, never a call), `crash` (exits at start; restarted every %s, a far harsher policy than the default), "+
		"and `deaf` (stops reading stdin after listing its tools; its calls carry 16 KiB so the pipe fills). %d callers per bad server call it all along, at most once per %s each, "+
		"with a %s call timeout on the bad servers. Host.Status and Host.Tools are timed every %s in both phases (pooled over the repeats). "+
		"Host CPU includes what the bad servers' callers, the crash loop and the Status sampling cost the host during the healthy calls; server CPU is every echo server's, the restarted ones included.\n\n",
		r.Sizes.IsolationCallers, r.Sizes.IsolationCalls, r.Sizes.Repeats, crashBackoff, r.Sizes.BadCallersPerKind, badPace, badTimeout, statusEvery)
	b.WriteString("| phase | servers | healthy calls | p50 µs | p50 range µs | p90 µs | p99 µs | p99 range µs | max µs | p99 × baseline | host CPU s per 100k calls | server CPU s per 100k calls | Status p99 / max µs | Tools p99 / max µs | Host.Close ms | errors |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, rec := range []*Record{base, trouble} {
		if !ran(rec) {
			continue
		}
		p99Range := ""
		if len(rec.RepeatP99us) > 0 {
			p99Range = fmt.Sprintf("%.1f–%.1f", slices.Min(rec.RepeatP99us), slices.Max(rec.RepeatP99us))
		}
		fmt.Fprintf(b, "| %s | %d | %d | %.1f | %s | %.1f | %.1f | %s | %.0f | %s | %.2f | %.2f | %.1f / %.0f | %.1f / %.0f | %.0f | %d |\n",
			strings.TrimPrefix(rec.Contender, "mcpvisor-"), rec.Servers, rec.Calls, rec.P50us, p50Range(rec), rec.P90us, rec.P99us, p99Range, rec.MaxUs, ratioCell(rec.P99us, field(base, p99)),
			rec.HostCPU, rec.ServerCPU, metric(rec, "status_p99_us"), metric(rec, "status_max_us"), metric(rec, "tools_p99_us"), metric(rec, "tools_max_us"), metric(rec, "close_ms"), rec.Errors)
	}
	b.WriteString("\n")
	if ran(trouble) {
		var kinds []string
		for k, v := range trouble.Metrics {
			if name, ok := strings.CutPrefix(k, "bad_"); ok && name != "calls" {
				kinds = append(kinds, fmt.Sprintf("%s %.0f", name, v))
			}
		}
		slices.Sort(kinds)
		fmt.Fprintf(b, "Calls to the bad servers during the trouble phase: %.0f (%s). The crash-looping server was restarted %.0f times.\n\n",
			metric(trouble, "bad_calls"), strings.Join(kinds, ", "), metric(trouble, "crash_restarts"))
	}
	for _, rec := range []*Record{base, trouble} {
		if rec != nil && rec.Note != "" {
			fmt.Fprintf(b, "- %s: %s\n\n", rec.Contender, rec.Note)
		}
	}
}

func (r *Run) startupSection(b *strings.Builder) {
	if r.find(ScenarioStartup, Raw) == nil {
		return
	}
	fmt.Fprintf(b, "## 5. Start-up: %d servers started at once (median of %d run(s))\n\n", r.Sizes.StartupServers, r.Sizes.StartupRuns)
	b.WriteString("Ready means every server has answered initialize and tools/list; for mcpvisor, from Open until WaitReady returns. `raw` spawns and handshakes the same servers concurrently with no host: the time the processes themselves need. " +
		"RSS is this process's VmRSS after a GC (children excluded), after minus before, per server.\n\n")
	b.WriteString("| contender | ready ms | after the processes, ms | worst run ms | host RSS per server KiB | close ms |\n|---|---:|---:|---:|---:|---:|\n")
	for _, c := range contenders {
		rec := r.find(ScenarioStartup, c.name())
		if rec == nil {
			continue
		}
		if !ran(rec) {
			fmt.Fprintf(b, "| %s | failed: %s | | | | |\n", rec.Contender, rec.Note)
			continue
		}
		fmt.Fprintf(b, "| %s | %.1f | %+.1f | %.1f | %.1f | %.1f |\n", rec.Contender, metric(rec, "ready_ms"), metric(rec, "after_processes_ms"),
			metric(rec, "ready_ms_worst_run"), metric(rec, "rss_per_server_kb"), metric(rec, "close_ms"))
	}
	b.WriteString("\n")
}

func (r *Run) scaleSection(b *strings.Builder) {
	host := r.find(ScenarioScale, Mcpvisor)
	if host == nil {
		return
	}
	raw := r.find(ScenarioScale, Raw)
	fmt.Fprintf(b, "## 6. Scale: %d stdio servers supervised at once (mcpvisor)\n\n", r.Sizes.ScaleServers)
	b.WriteString("`raw` spawns and handshakes as many servers with no host, for the floor. Host RSS is this whole process's VmRSS after a GC, harness included, children excluded. Calls go to a random server each, one at a time.\n\n")
	b.WriteString("| contender | ready s | host RSS MB | RSS per server KiB | first call µs | call p50 / p99 / max µs | close ms |\n|---|---:|---:|---:|---:|---:|---:|\n")
	if ran(raw) {
		fmt.Fprintf(b, "| raw | %.2f | %.1f | %.1f | | | %.0f |\n", metric(raw, "ready_ms")/1000, metric(raw, "rss_mb"), metric(raw, "rss_per_server_kb"), metric(raw, "close_ms"))
	}
	if ran(host) {
		fmt.Fprintf(b, "| mcpvisor | %.2f | %.1f | %.1f | %.0f | %.1f / %.1f / %.0f | %.0f |\n", metric(host, "ready_ms")/1000, metric(host, "rss_mb"),
			metric(host, "rss_per_server_kb"), metric(host, "first_call_us"), host.P50us, host.P99us, host.MaxUs, metric(host, "close_ms"))
	}
	b.WriteString("\n")
	for _, rec := range []*Record{raw, host} {
		if rec != nil && rec.Note != "" {
			fmt.Fprintf(b, "- %s: %s\n\n", rec.Contender, rec.Note)
		}
	}
}

// httpLoadIntro explains the HTTP latency and throughput tables.
const httpLoadIntro = "One `echoserver -http` child process serves every contender, one at a time (interleaved as above). " +
	"`raw`: net/http POSTs of the JSON-RPC frame with the session's headers, the JSON body read whole, no SDK. " +
	"`mcpvisor`: an `http` server (allowPrivate, for loopback) in an embedded Host. `go-sdk`: `mcp.StreamableClientTransport`. `mark3labs`: its streamable HTTP client. " +
	"Every contender but mcpvisor gets the same fresh `http.Transport`, keeping up to 64 idle connections (net/http's default keeps 2, which would make 64 callers redial for most calls); " +
	"mcpvisor uses its own per-server client (up to 16 idle connections, 32 POSTs in flight), which the bench cannot configure. " +
	"New connections and POSTs per call are counted by the echo server during the measured calls.\n\n"

// scaleHTTPSection writes scenario 9.
func (r *Run) scaleHTTPSection(b *strings.Builder) {
	var recs []*Record
	for _, name := range []string{Raw, MscaleSmall, Mcpvisor, MscaleFit} {
		for i := range r.Records {
			if rec := &r.Records[i]; rec.Scenario == ScenarioScaleHTTP && rec.Contender == name {
				recs = append(recs, rec)
			}
		}
	}
	if len(recs) == 0 {
		return
	}
	host := r.find(ScenarioScaleHTTP, Mcpvisor)
	fmt.Fprintf(b, "## 9. Scale over Streamable HTTP: %d HTTP servers in one Host, all on one echo server\n\n", r.Sizes.ScaleHTTPServers)
	b.WriteString("Every server has its own name and the same URL: one `echoserver -http` child process (its CPU, memory and descriptors are not the host's). " +
		"`raw` opens as many sessions at once with no host (one net/http client each: initialize, initialized, tools/list), for the floor. " +
		"Ready is from `Open` until `WaitReady` returns; half and 90% are when that many servers had become ready (state events); restarts are the servers' restarts on the way. " +
		"RSS is this process's VmRSS after a GC, harness included, after minus before, per server; descriptors are this process's (`/proc/self/fd`), the peak sampled every 100 ms while starting; " +
		"connections are those the echo server holds open once all are ready. Calls go to a random server each, one at a time. " +
		fmt.Sprintf("`mcpvisor-small` is the same at %d servers; `mcpvisor-fit`, run only when the full size does not start cleanly, is the largest size the open-file limit fits at `mcpvisor-small`'s descriptors per server, checked (abandoned at its first failing server, then 5%% smaller).\n\n", scaleHTTPSmall))
	b.WriteString("| run | servers | ready s | half / 90% ready s | Open s | restarts | host RSS MB | RSS per server KiB | descriptors (peak) | per server (peak) | goroutines per server | echo-server connections per server |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, rec := range recs {
		m := rec.Metrics
		switch {
		case m == nil:
			fmt.Fprintf(b, "| %s | %d | failed | | | | | | | | | |\n", rec.Contender, rec.Servers)
		case rec.Contender == Raw:
			fmt.Fprintf(b, "| raw | %d | %.2f | | | | | | | %.2f | | %.2f |\n", rec.Servers, m["ready_ms"]/1000, m["fds_per_server"], m["server_conns_per_server"])
		case m["ready_ms"] == 0:
			rss := "—" // unreadable with every descriptor in use
			if v, ok := m["rss_mb"]; ok {
				rss = fmt.Sprintf("%.0f", v)
			}
			fmt.Fprintf(b, "| %s | %d | not all: %.0f ready after %.1f s | | %.2f | %.0f | %s | | (%.0f) | | | |\n", rec.Contender, rec.Servers,
				m["ready_servers"], m["waited_ms"]/1000, m["open_ms"]/1000, m["restarts"], rss, m["peak_fds"])
		default:
			fmt.Fprintf(b, "| %s | %d | %.2f | %.2f / %.2f | %.2f | %.0f | %.0f | %.1f | %.0f (%.0f) | %.2f (%.2f) | %.2f | %.2f |\n", rec.Contender, rec.Servers,
				m["ready_ms"]/1000, m["ready_half_ms"]/1000, m["ready_90pct_ms"]/1000, m["open_ms"]/1000, m["restarts"], m["rss_mb"], m["rss_per_server_kb"],
				m["fds"], m["peak_fds"], m["fds_per_server"], m["peak_fds_per_server"], m["goroutines_per_server"], m["server_conns_per_server"])
		}
	}
	b.WriteString("\n| run | servers | random calls | first call µs | call p50 / p99 / max µs | errors | new connections during the calls | Host.Close ms | DELETEs | descriptors after Close | goroutines left after Close | echo server RSS MB |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, rec := range recs {
		if m := rec.Metrics; rec.Contender != Raw && m != nil && m["ready_ms"] > 0 {
			fmt.Fprintf(b, "| %s | %d | %d | %.0f | %.1f / %.1f / %.0f | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f |\n", rec.Contender, rec.Servers, rec.Calls,
				m["first_call_us"], rec.P50us, rec.P99us, rec.MaxUs, rec.Errors, m["server_conns_during_calls"], m["close_ms"], m["server_deletes"],
				m["fds_after_close"], m["goroutines_after_close"], m["server_rss_mb"])
		}
	}
	b.WriteString("\n")
	if host != nil && !clean(host) && host.Metrics != nil {
		small := r.find(ScenarioScaleHTTP, MscaleSmall)
		fmt.Fprintf(b, "The open-file limit (RLIMIT_NOFILE) was %.0f for the harness and, inherited, for the echo server. With %d servers the host peaked at %.0f descriptors and the echo server at %.0f connections.",
			metric(host, "fd_limit"), host.Servers, metric(host, "peak_fds"), metric(host, "server_peak_open_conns"))
		if small != nil && small.Metrics != nil {
			per := metric(small, "peak_fds_per_server")
			fmt.Fprintf(b, " At %d servers the host held %.2f descriptors per server at the peak, and the echo server %.2f connections per server: %d servers need about %.0f descriptors in the host and %.0f in the echo server.",
				small.Servers, per, metric(small, "server_conns_per_server"), host.Servers, per*float64(host.Servers), metric(small, "server_conns_per_server")*float64(host.Servers))
		}
		var fit *Record
		for i := range r.Records {
			if rec := &r.Records[i]; rec.Scenario == ScenarioScaleHTTP && rec.Contender == MscaleFit && clean(rec) && (fit == nil || rec.Servers > fit.Servers) {
				fit = rec
			}
		}
		if fit != nil {
			fmt.Fprintf(b, " The largest size checked to start cleanly under that limit: **%d servers**.", fit.Servers)
		}
		b.WriteString("\n\n")
	}
	for _, rec := range recs {
		if rec.Note != "" {
			fmt.Fprintf(b, "- %s (%d): %s\n", rec.Contender, rec.Servers, rec.Note)
		}
	}
	b.WriteString("\n")
}

// journalSection writes scenario 10.
func (r *Run) journalSection(b *strings.Builder) {
	raw := r.find(ScenarioJournal, Raw)
	if raw == nil {
		return
	}
	fmt.Fprintf(b, "## 10. Journal: a flood of %d notifications\n\n", r.Sizes.JournalEvents)
	b.WriteString("The echo server's `flood` tool writes its notifications (`event/flood`) as fast as it can, then answers. " +
		"`mcpvisor`: one Host with default options and a fresh data directory; the timer runs from the call until `Journal().Subscribe` for the server has delivered every event, journaled (committed, durable) or counted in the `mcpvisor/events_dropped` events the journal writes when its bounded queue overflows. " +
		fmt.Sprintf("`%s`: %d servers flooding at once, a share each, one subscription per server. ", MjournalMulti, r.Sizes.JournalServers) +
		"`raw`: the same flood read off the pipe and counted, no host and no disk (lines/s). " +
		"Durable events/s is the journaled events over that time; the host has read every line when its call is answered, and the writer is done when its counters account for the flood (sampled every 10 ms). " +
		"Commits and events per commit are the writer's during the flood. Peak RSS is this process's VmRSS, sampled every 10 ms from before Open to the end, over its value before Open (after a GC); the echo servers are children, not counted. In brackets, the anonymous part (RssAnon), which the memory target uses: the rest is file-backed, mostly the pages of Badger's memory-mapped memtable and value-log files, page cache the kernel reclaims under pressure. " +
		"On disk: LSM + vlog is the journal's own Stats (the sizes of its .sst and .vlog files); allocated is the blocks its whole directory takes (as du counts them), which includes the memtable's write-ahead log (.mem) and not the untouched part of preallocated files.\n\n")
	b.WriteString("| contender | servers | events | journaled | dropped | s | durable events/s | × raw | host read all, s | writer done, s | commits | events per commit | queue peak | peak RSS over baseline MiB (anonymous) | on disk MiB (LSM + vlog) | allocated MiB |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var notes []string
	for _, name := range []string{Raw, Mcpvisor, MjournalMulti} {
		rec := r.find(ScenarioJournal, name)
		if rec == nil {
			continue
		}
		if rec.Note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", rec.Contender, rec.Note))
		}
		m := rec.Metrics
		switch {
		case m == nil:
			fmt.Fprintf(b, "| %s | %d | failed | | | | | | | | | | | | | |\n", rec.Contender, rec.Servers)
		case rec.Contender == Raw:
			fmt.Fprintf(b, "| raw | 1 | %.0f | (%.0f lines read) | | %.3f | %.0f lines/s | | | | | | | %+.1f | | |\n",
				m["events"], m["lines"], m["elapsed_ms"]/1000, m["lines_per_sec"], m["peak_rss_mb"])
		default:
			fmt.Fprintf(b, "| %s | %d | %.0f | %.0f | %.0f | %.2f | %.0f | %s | %.2f | %.2f | %.0f | %.1f | %.0f | %+.1f (%+.1f) | %.1f (%.1f + %.1f) | %.1f |\n",
				rec.Contender, rec.Servers, m["events"], m["journaled"], m["dropped"], m["elapsed_ms"]/1000, m["events_per_sec"],
				smallRatioCell(m["events_per_sec"], metric(raw, "lines_per_sec")), m["answered_ms"]/1000, m["writer_done_ms"]/1000,
				m["commits"], m["events_per_commit"], m["peak_queued"], m["peak_rss_mb"], m["peak_anon_mb"], m["disk_mb"], m["lsm_mb"], m["vlog_mb"], m["disk_alloc_mb"])
		}
	}
	b.WriteString("\n")
	writeNotes(b, notes)
}

// gatewayIntro explains scenario 11.
const gatewayIntro = "Two `echoserver -http` child processes, one per era: the legacy one (sessions through `initialize`) and `-era modern` (2026-07-28: no session; the `_meta` and the headers `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` checked against the body of every POST). " +
	"Each sits behind a Host of its own that supervises it as an `http` server pinned to its era (`protocolVersion` 2025-11-25 or 2026-07-28), with `\"prefix\": false` (the tool keeps its name, `echo`) and always on (listed without `activate_tools`); " +
	"the Host is served by `gateway.New(h).Handler()` at `/mcp` on an `http.Server` listening on a loopback TCP port **in this process** (in process, as `mcpvisor serve` runs it: the gateway shares the harness's cores with the client, and the echo servers are children). " +
	"Every contender but the Host.Call rows is the same raw `net/http` client as the HTTP floor of scenario 7 (a fresh pool keeping up to 64 idle connections; one POST per call, the JSON body read whole and checked for the echoed arguments, `isError` and JSON-RPC errors counted as failures). " +
	"The **direct connection** is that client straight to the echo server (`direct`, `direct-modern`: no host, no gateway, no SDK), so that the routes differ from it only in the gateway being in the path. " +
	"`gateway-<client era>-<server era>` calls the same tool through the gateway: a legacy client sends `initialize` once (then `notifications/initialized`, `tools/list`) and each call with its `Mcp-Session-Id` and `MCP-Protocol-Version: 2025-11-25`; " +
	"a modern client sends `server/discover` and `tools/list` once, then each call standalone, with the `_meta` (protocol version 2026-07-28, client capabilities `{}`, client info: the bytes of the `raw-modern` floor) and the headers `MCP-Protocol-Version: 2026-07-28`, `Mcp-Method: tools/call`, `Mcp-Name: echo`. " +
	"`mcpvisor` and `mcpvisor-modern` are `Host.Call(\"echo\")` on the Host behind each gateway: the host's own part of a route. All run in the same rounds, interleaved as above. " +
	"**Added** is a route's p50 less the p50 of the direct contender of the client's era (what the same client pays talking straight to a server); × direct is their ratio. " +
	"Per round is the same difference taken in each round (the contenders run back to back there): its median, then the smallest and largest, a gauge of the noise. " +
	"− Host.Call is the route's p50 less Host.Call's for the same server era: the gateway's front (the client's HTTP hop into this process and the gateway's handling of the request). " +
	"New connections and POSTs per call are counted by the echo servers during the measured calls.\n\n"

// gatewaySection writes scenario 11: the added latency per era combination,
// then every contender's figures.
func (r *Run) gatewaySection(b *strings.Builder) {
	var recs []*Record
	for i := range r.Records {
		if r.Records[i].Scenario == ScenarioGateway {
			recs = append(recs, &r.Records[i])
		}
	}
	if len(recs) == 0 {
		return
	}
	fmt.Fprintf(b, "## 11. Gateway: added latency per call over a direct connection, 1 caller, %d calls per contender\n\n", r.Sizes.GatewayCalls)
	b.WriteString(gatewayIntro)
	b.WriteString("**Added p50 per call through the gateway** (× the direct p50 of the client's era):\n\n" +
		"| client → gateway \\ gateway → echo server | legacy (2025-11-25) | modern (2026-07-28) |\n|---|---:|---:|\n")
	for _, client := range []bool{false, true} {
		fmt.Fprintf(b, "| %s client | ", eraName(client))
		for _, server := range []bool{false, true} {
			rec := r.find(ScenarioGateway, gatewayRouteName(client, server))
			switch {
			case !ran(rec) || rec.Errors > 0 || rec.Metrics["direct_p50_us"] == 0:
				b.WriteString("— |")
			default:
				fmt.Fprintf(b, "%+.1f µs (%.2f×) |", rec.Metrics["added_p50_us"], rec.Metrics["p50_ratio"])
			}
			if !server {
				b.WriteString(" ")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| contender | client → | → echo server | p50 µs | p99 µs | max µs | calls/s | added p50 µs | p50 × direct | added p50 per round µs: median (min … max) | − Host.Call µs | errors | new connections | POSTs per call |\n" +
		"|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var notes []string
	for _, rec := range recs {
		if rec.Note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", rec.Contender, rec.Note))
		}
		from, to := gatewayPath(rec.Contender)
		if !ran(rec) {
			fmt.Fprintf(b, "| %s | %s | %s | failed | | | | | | | | | | |\n", rec.Contender, from, to)
			continue
		}
		m := rec.Metrics
		added, ratio, perRound, front := "", "", "", ""
		if _, ok := m["added_p50_us"]; ok {
			added, ratio = fmt.Sprintf("%+.1f", m["added_p50_us"]), fmt.Sprintf("%.2f×", m["p50_ratio"])
			perRound = fmt.Sprintf("%+.1f (%+.1f … %+.1f)", m["added_p50_us_round_median"], m["added_p50_us_round_min"], m["added_p50_us_round_max"])
		}
		if _, ok := m["front_p50_us"]; ok {
			front = fmt.Sprintf("%+.1f", m["front_p50_us"])
		}
		fmt.Fprintf(b, "| %s | %s | %s | %.1f | %.1f | %.0f | %.0f | %s | %s | %s | %s | %d | %.0f | %.2f |\n", rec.Contender, from, to,
			rec.P50us, rec.P99us, rec.MaxUs, rec.CallsPerSec, added, ratio, perRound, front, rec.Errors, m["conns_opened"], m["posts_per_call"])
	}
	b.WriteString("\n")
	writeNotes(b, notes)
}

// gatewayRouteName is the contender of the route from a client of one era
// to a server of another through the gateway.
func gatewayRouteName(clientModern, serverModern bool) string {
	for _, rt := range gatewayRoutes {
		if rt.clientModern == clientModern && rt.serverModern == serverModern {
			return rt.name
		}
	}
	return ""
}

// gatewayPath describes a contender of scenario 11 for its table: who
// calls, and in which era the echo server is reached.
func gatewayPath(name string) (from, to string) {
	switch name {
	case Direct, DirectModern:
		era := eraName(name == DirectModern)
		return era + " client, direct", era
	case Mcpvisor, McpvisorModern:
		return "Host.Call, in process", eraName(name == McpvisorModern)
	}
	for _, rt := range gatewayRoutes {
		if rt.name == name {
			return eraName(rt.clientModern) + " client → gateway", eraName(rt.serverModern)
		}
	}
	return "", ""
}
