package harness

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// echoServer is the echo server binary, built once for every test.
var echoServer string

func TestMain(m *testing.M) {
	if d, err := time.ParseDuration(os.Getenv(spinEnv)); err == nil {
		spinChild(d)
	}
	dir, err := os.MkdirTemp("", "mcpbench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	echoServer, err = BuildEchoServer(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func tinyEnv(t *testing.T) *Env {
	return &Env{Server: echoServer, Sizes: TinySizes(), Log: testLog{t}, TempDir: t.TempDir()}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// repeated are the scenarios that run each contender Sizes.Repeats times.
var repeated = map[string]bool{ScenarioLatency: true, ScenarioThroughput: true, ScenarioIsolation: true, ScenarioLatencyHTTP: true, ScenarioThroughputHTTP: true}

// Every scenario runs at a tiny size and reports sane figures for every
// contender: no failed call, a positive latency or ready time; in the
// repeated ones, the medians of every repeat and the CPU they cost.
func TestScenarios(t *testing.T) {
	for _, sc := range Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			recs, err := sc.Run(ctx, tinyEnv(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == 0 {
				t.Fatal("no records")
			}
			for _, r := range recs {
				if r.Scenario != sc.Name && !strings.HasPrefix(r.Scenario, sc.Name+"/") {
					t.Errorf("%s: record of scenario %q", r.Contender, r.Scenario)
				}
				if skipped(&r) {
					continue // a peer that is not installed
				}
				if r.Errors != 0 || r.Note != "" {
					t.Errorf("%s: %d error(s): %s", r.Contender, r.Errors, r.Note)
				}
				if r.P50us <= 0 && r.Metrics["ready_ms"] <= 0 && r.Metrics["events_per_sec"] <= 0 && r.Metrics["lines_per_sec"] <= 0 {
					t.Errorf("%s: neither a latency, a ready time nor a rate: %+v", r.Contender, r)
				}
				if repeated[sc.Name] {
					// Each figure is the median of the repeats', the p50
					// among them; the client and the echo servers cost CPU.
					if r.Repeats != TinySizes().Repeats || len(r.RepeatP50us) != r.Repeats || r.P50MinUs > r.P50us || r.P50us > r.P50MaxUs || r.P90us < r.P50us {
						t.Errorf("%s: %d repeat(s), p50 %v in %v–%v (%v), p90 %v", r.Contender, r.Repeats, r.P50us, r.P50MinUs, r.P50MaxUs, r.RepeatP50us, r.P90us)
					}
					if r.HostCPU <= 0 || r.ServerCPU <= 0 {
						t.Errorf("%s: CPU per 100k calls: host %v, servers %v; want both > 0", r.Contender, r.HostCPU, r.ServerCPU)
					}
				}
			}
		})
	}
}

// The isolation scenario's trouble is real: the hung server's calls time out,
// the crash-looping one is restarted, the deaf one is reported as not reading.
func TestIsolationTroubleHappens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs, err := Isolation(ctx, tinyEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Contender != "mcpvisor-trouble" {
		t.Fatalf("records: %+v", recs)
	}
	m := recs[1].Metrics
	for _, name := range []string{"bad_timeout", "bad_not_reading", "crash_restarts", "p99_ratio", "status_max_us"} {
		if m[name] <= 0 {
			t.Errorf("%s = %v, want > 0 (metrics %v)", name, m[name], m)
		}
	}
}

// Every event of the flood is accounted for, journaled or counted as
// dropped, and the figures the report and its targets use are there.
func TestJournalAccountsForTheFlood(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := tinyEnv(t)
	recs, err := Journal(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Contender != Raw || recs[1].Contender != Mcpvisor || recs[2].Contender != MjournalMulti {
		t.Fatalf("records: %+v", recs)
	}
	n := float64(env.Sizes.JournalEvents)
	if m := recs[0].Metrics; m["lines"] != n || m["lines_per_sec"] <= 0 {
		t.Errorf("raw: %v, want %v lines", m, n)
	}
	for _, r := range recs[1:] {
		m := r.Metrics
		if r.Errors != 0 || m["events"] != n || m["journaled"]+m["dropped"] < n || m["journaled"] <= 0 {
			t.Errorf("%s: %d error(s) (%s), %v journaled + %v dropped of %v", r.Contender, r.Errors, r.Note, m["journaled"], m["dropped"], m["events"])
		}
		for _, name := range []string{"events_per_sec", "commits", "events_per_commit", "elapsed_ms", "answered_ms", "disk_alloc_mb", "rss_base_mb"} {
			if m[name] <= 0 {
				t.Errorf("%s: %s = %v, want > 0", r.Contender, name, m[name])
			}
		}
	}
	if recs[2].Servers != env.Sizes.JournalServers {
		t.Errorf("%s: %d servers, want %d", MjournalMulti, recs[2].Servers, env.Sizes.JournalServers)
	}
}

// The gateway scenario measures every route it names: each era
// combination goes through a gateway (slower than the direct connection
// of the client's era, which its added latency is taken from), reaches the
// echo server with exactly one POST per call, on kept-alive connections.
func TestGatewayRoutes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs, err := Gateway(ctx, tinyEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{Direct, DirectModern, Mcpvisor, McpvisorModern}
	for _, rt := range gatewayRoutes {
		want = append(want, rt.name)
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	byName := map[string]Record{}
	for i, r := range recs {
		if r.Contender != want[i] {
			t.Errorf("record %d is %s, want %s", i, r.Contender, want[i])
		}
		byName[r.Contender] = r
		if r.Errors != 0 || r.Note != "" || r.Calls != TinySizes().GatewayCalls {
			t.Errorf("%s: %d of %d calls failed: %s", r.Contender, r.Errors, r.Calls, r.Note)
		}
		if m := r.Metrics; m["posts_per_call"] != 1 || m["conns_opened"] != 0 {
			t.Errorf("%s: %v POSTs per call and %v new connections at the echo server, want 1 and 0", r.Contender, m["posts_per_call"], m["conns_opened"])
		}
	}
	for _, rt := range gatewayRoutes {
		r, direct := byName[rt.name], byName[directName(rt.clientModern)]
		m := r.Metrics
		if m["direct_p50_us"] != direct.P50us || m["added_p50_us"] != r.P50us-direct.P50us || m["added_p50_us"] <= 0 {
			t.Errorf("%s: p50 %.1f µs, direct %.1f (%v), added %v: want the direct p50 of the client's era, and more", rt.name, r.P50us, direct.P50us, m["direct_p50_us"], m["added_p50_us"])
		}
		if lo, med, hi := m["added_p50_us_round_min"], m["added_p50_us_round_median"], m["added_p50_us_round_max"]; lo > med || med > hi || hi == 0 {
			t.Errorf("%s: per-round added latency %v ≤ %v ≤ %v", rt.name, lo, med, hi)
		}
		if m["host_call_p50_us"] != byName[hostName(rt.serverModern)].P50us {
			t.Errorf("%s: Host.Call p50 %v, want the %s host's", rt.name, m["host_call_p50_us"], eraName(rt.serverModern))
		}
	}
}

func TestRoundDiffs(t *testing.T) {
	// Three rounds of two calls: b is 10 µs a call, a 12, 15 and 11.
	us := func(v ...int64) samples {
		for i := range v {
			v[i] *= 1000
		}
		return v
	}
	a, b := us(12, 12, 15, 15, 11, 11), us(10, 10, 10, 10, 10, 10)
	if med, lo, hi := roundDiffs(a, b, 6, 3); med != 2 || lo != 1 || hi != 5 {
		t.Errorf("roundDiffs = %v, %v, %v; want 2, 1, 5", med, lo, hi)
	}
	if med, _, _ := roundDiffs(a[:4], b[:4], 4, 2); med != 3.5 {
		t.Errorf("median of two rounds = %v, want 3.5", med)
	}
}

// The gateway-peers scenario measures mcpvisor's gateway and the go-sdk
// proxy in every part, always, and each npm peer gateway that is installed
// (the others are skipped, saying how to install them): every call
// answered with the echo, the right number of sessions and callers, and
// the session-age figures of the first and last calls of the session.
func TestGatewayPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := tinyEnv(t)
	recs, err := GatewayPeers(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	sz := env.Sizes
	parts := []struct {
		scenario                 string
		sessions, callers, calls int
	}{
		{GatewayPeersOne, 1, 1, sz.GatewayPeerCalls},
		{GatewayPeersCallers, 1, sz.Callers, sz.GatewayPeerLoadCalls},
		{GatewayPeersSessions, sz.Callers, sz.Callers, sz.GatewayPeerLoadCalls},
		{GatewayPeersAge, 1, 1, sz.GatewayPeerAgeCalls},
	}
	names := append([]string{Mcpvisor}, gatewayPeerNames...)
	if len(recs) != len(parts)*len(names) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(parts)*len(names), recs)
	}
	ranPeers := map[string]bool{}
	for i, r := range recs {
		p, name := parts[i/len(names)], names[i%len(names)]
		if r.Scenario != p.scenario || r.Contender != name || r.Servers != p.sessions || r.Callers != p.callers {
			t.Errorf("record %d: %s %s with %d session(s), %d caller(s); want %s %s, %d, %d", i, r.Scenario, r.Contender, r.Servers, r.Callers, p.scenario, name, p.sessions, p.callers)
		}
		if skipped(&r) {
			if name == Mcpvisor || name == GoSDKProxy || !strings.Contains(r.Note, "bench/scripts/peers.sh") {
				t.Errorf("%s %s: %s", r.Scenario, name, r.Note)
			}
			continue
		}
		ranPeers[name] = true
		if r.Errors != 0 || r.Note != "" || r.Calls != p.calls || r.P50us <= 0 || r.CallsPerSec <= 0 {
			t.Errorf("%s %s: %d of %d calls failed (want %d calls), p50 %v µs, %v calls/s: %s", r.Scenario, name, r.Errors, r.Calls, p.calls, r.P50us, r.CallsPerSec, r.Note)
		}
		if p.scenario == GatewayPeersAge {
			m := r.Metrics
			if m["age_window"] != float64(sz.GatewayPeerAgeWindow) || m["first_p50_us"] <= 0 || m["last_p50_us"] <= 0 || m["age_ratio"] != m["last_p50_us"]/m["first_p50_us"] ||
				m["aged_p50_us"] <= 0 || m["fresh_p50_us"] <= 0 || m["aged_ratio"] != m["aged_p50_us"]/m["fresh_p50_us"] {
				t.Errorf("%s: session age figures %v", name, m)
			}
		}
	}
	t.Logf("gateways measured: %v", ranPeers)

	// Every gateway ended with its echo servers: no process runs the echo
	// server binary or has it among its arguments (a peer, a shell).
	deadline := time.Now().Add(5 * time.Second)
	for left := processesNaming(echoServer); len(left) > 0; left = processesNaming(echoServer) {
		if time.Now().After(deadline) {
			t.Fatalf("processes left running: %q", left)
		}
		time.Sleep(10 * time.Millisecond) // polling /proc: nothing signals a process's end to a non-parent
	}
}

// processesNaming is the command lines of the live processes that have s
// in theirs.
func processesNaming(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(cmdline), s) {
			found = append(found, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}
