// Command mcpbench runs the mcpvisor load-test scenarios against a raw pipe,
// the official Go SDK client and the mark3labs client, over stdio (in the
// legacy era and, for call latency and throughput, in the modern one: the
// echo server run with -era modern) and over Streamable HTTP (the echo
// server run with -http), measures the latency the MCP gateway adds over a
// direct connection in both eras and what a cluster hop costs (scenario
// cluster: one hop and three members in one process against one host),
// and writes the results:
// results-<date>.json (one record per scenario and contender), <date>.md
// (tables with ratios, the targets with PASS/MISS), <date>.png (the chart
// the report embeds) and latest.md (a pointer to the newest report).
//
//	mcpbench [-quick] [-repeats N] [-out DIR] [-scenarios latency,throughput,...] [-server BIN]
//	         [-cpuprofile FILE] [-memprofile FILE] [-http-servers N]
//
// See bench/README.md for what each scenario measures.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/bench/internal/harness"
)

func main() {
	quick := flag.Bool("quick", false, "a short run: a tenth of the calls, smaller server counts (CI)")
	out := flag.String("out", "", "where the results go (default: bench/results, or results when run inside bench/)")
	list := flag.String("scenarios", "", "comma-separated scenarios to run (default: all): "+strings.Join(names(), ","))
	server := flag.String("server", "", "the echo server binary (default: build bench/cmd/echoserver)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memprofile := flag.String("memprofile", "", "write a heap profile to this file once every server of the scale-http scenario is ready")
	httpServers := flag.Int("http-servers", 0, "servers in the scale-http scenario (default: 10000, quick: 1000)")
	repeats := flag.Int("repeats", 0, "runs of each contender in the latency, throughput and isolation scenarios, over stdio and HTTP, whose medians are reported (default: 5, quick: 3)")
	flag.Parse()
	if err := run(*quick, *out, *list, *server, *cpuprofile, *memprofile, *httpServers, *repeats); err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(1)
	}
}

func names() []string {
	var ns []string
	for _, s := range harness.Scenarios {
		ns = append(ns, s.Name)
	}
	return ns
}

func run(quick bool, out, list, server, cpuprofile, memprofile string, httpServers, repeats int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	selected, err := selectScenarios(list)
	if err != nil {
		return err
	}
	if out == "" {
		out = defaultOut()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	fileLimit, err := raiseFileLimit()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench: warning: could not raise the open-file limit:", err)
	}
	tmp, err := os.MkdirTemp("", "mcpbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if server == "" {
		fmt.Fprintln(os.Stderr, "mcpbench: building the echo server")
		if server, err = harness.BuildEchoServer(ctx, tmp); err != nil {
			return err
		}
	}
	if server, err = filepath.Abs(server); err != nil {
		return err
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	env := &harness.Env{Server: server, Sizes: harness.FullSizes(), Log: os.Stderr, TempDir: tmp, HeapProfile: memprofile}
	if quick {
		env.Sizes = harness.QuickSizes()
	}
	if httpServers > 0 {
		env.Sizes.ScaleHTTPServers = httpServers
	}
	if repeats > 0 {
		env.Sizes.Repeats = repeats
	}
	started := time.Now()
	result := &harness.Run{Date: started.Format("2006-01-02"), Started: started, Quick: quick, Machine: machine(), Sizes: env.Sizes}
	result.Machine.FileLimit = fileLimit
	for _, sc := range selected {
		recs, err := sc.Run(ctx, env)
		result.Records = append(result.Records, recs...)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", sc.Name, ctx.Err())
			}
			fmt.Fprintf(os.Stderr, "mcpbench: %s: %v\n", sc.Name, err)
			result.Failures = append(result.Failures, fmt.Sprintf("%s: %v", sc.Name, err))
		}
	}
	result.Seconds = time.Since(started).Seconds()
	result.Machine.LoadAfter = loadavg()
	if err := write(result, out); err != nil {
		return err
	}
	if len(result.Failures) > 0 {
		return fmt.Errorf("%d scenario(s) failed", len(result.Failures))
	}
	return nil
}

// selectScenarios returns the scenarios named in list, in run order.
func selectScenarios(list string) ([]harness.Scenario, error) {
	if list == "" {
		return harness.Scenarios, nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		want[strings.TrimSpace(name)] = true
	}
	var sel []harness.Scenario
	for _, s := range harness.Scenarios {
		if want[s.Name] {
			sel = append(sel, s)
			delete(want, s.Name)
		}
	}
	for name := range want {
		return nil, fmt.Errorf("unknown scenario %q (have %s)", name, strings.Join(names(), ", "))
	}
	return sel, nil
}

// write stores the run in out: the JSON records, the chart, the dated
// report, and latest.md pointing at it. The report also goes to stdout.
func write(r *harness.Run, out string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "results-"+r.Date+".json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	chart := r.Date + ".png"
	if err := r.Chart(filepath.Join(out, chart)); err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench: chart:", err)
		chart = ""
	}
	md := r.Markdown(chart)
	if err := os.WriteFile(filepath.Join(out, r.Date+".md"), []byte(md), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "latest.md"), []byte(latest(r)), 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	fmt.Fprintf(os.Stderr, "mcpbench: wrote %s\n", filepath.Join(out, r.Date+".md"))
	return nil
}

func latest(r *harness.Run) string {
	var b strings.Builder
	kind := "full run"
	if r.Quick {
		kind = "quick run"
	}
	fmt.Fprintf(&b, "# Latest bench report\n\nThe newest report is [%s](%s.md), a %s of %s (raw JSON: [results-%s.json](results-%s.json)).\n\n",
		r.Date, r.Date, kind, r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Date, r.Date)
	r.TargetsTable(&b)
	return b.String()
}

// defaultOut is bench/results from the repository root, results from inside
// the bench module.
func defaultOut() string {
	if data, err := os.ReadFile("go.mod"); err == nil && strings.Contains(string(data), "module github.com/mcpvisor/mcpvisor/bench") {
		return "results"
	}
	return filepath.Join("bench", "results")
}

// raiseFileLimit lifts the open-file limit as far as the process may: the
// hard limit to /proc/sys/fs/nr_open when it is allowed to (root), else the
// soft limit to the hard one. Every supervised stdio server costs the host
// about three descriptors, every HTTP server at least one connection, and
// the echo server child (which inherits the limit) one per connection; the
// HTTP scale scenario starts ten thousand. It returns the limit in force.
func raiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if data, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		if max, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err == nil && max > lim.Max {
			want := syscall.Rlimit{Cur: max, Max: max}
			if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
				return max, nil
			}
		}
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}

func machine() harness.Machine {
	m := harness.Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), CPU: "unknown", Kernel: "unknown", Commit: "unknown"}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	m.LoadBefore = loadavg()
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	// The measured code is mcpvisor outside bench/: name its last commit,
	// and say when the working tree (which the replace builds) differs.
	if rev, err := exec.Command("git", "log", "-1", "--format=%h", "--", ":/", ":(exclude,top)bench").Output(); err == nil && len(rev) > 0 {
		m.Commit = strings.TrimSpace(string(rev))
		if st, err := exec.Command("git", "status", "--porcelain", "--", ":/", ":(exclude,top)bench").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
			m.Commit += " with uncommitted changes"
		}
	}
	return m
}

// loadavg is the 1, 5 and 15 minute load averages, "" where unknown.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], ", ")
}
