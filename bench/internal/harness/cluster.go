package harness

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/cluster"
)

// ScenarioCluster is scenario 14: a call forwarded one hop to another
// cluster member against the same call on one host alone, and three
// members in one process against one host.
const ScenarioCluster = "cluster"

// The cluster scenario's contenders.
const (
	ClusterHost      = "one-host"       // one host alone, 1 caller
	ClusterLocal     = "member-local"   // a member of two calling a server it runs, 1 caller
	ClusterHop       = "hop"            // a member of two calling a server the other runs, 1 caller
	ClusterHostMany  = "one-host-many"  // one host alone, Callers callers
	ClusterHopMany   = "hop-many"       // the hop with Callers callers
	ClusterThreeMany = "three-members"  // three members, Callers callers spread over them, every server
	clusterServers   = 6                // servers in each host and cluster
	clusterReadyWait = 60 * time.Second // for every member to show every server ready, and agree
	clusterGossip    = 100 * time.Millisecond
)

// Cluster is scenario 14 (mcpvisor only): one host alone, a cluster of
// two members and one of three, all in this process on loopback (the
// in-process membership, members talking in clear), each with the same
// clusterServers echo servers, each server running on one member. It
// measures, interleaved over Repeats rounds (the order rotating), the
// call from member 0 of the two to a server that member 1 runs (the
// hop), to one it runs itself, and to one host's server, with 1 caller
// (LatencyCalls) and Callers callers (ThroughputCalls); and Callers
// callers spread over the three members (caller i calls through member
// i mod 3, call k goes to server k mod clusterServers, so two calls in
// three cross to another member). Issue 41's targets: the hop's p50 at
// most 100 µs over one host's; three members at least 0.6× one host's
// calls/s.
func Cluster(ctx context.Context, env *Env) ([]Record, error) {
	env.logf("%s: %d servers; one host, two members and three members in this process; 1 caller × %d calls, %d callers × %d calls; %d repeats",
		ScenarioCluster, clusterServers, env.Sizes.LatencyCalls, env.Sizes.Callers, env.Sizes.ThroughputCalls, max(1, env.Sizes.Repeats))
	one, err := openClusterHosts(ctx, env, 1)
	if err != nil {
		return nil, fmt.Errorf("one host: %w", err)
	}
	defer closeHosts(one)
	two, err := openClusterHosts(ctx, env, 2)
	if err != nil {
		return nil, fmt.Errorf("two members: %w", err)
	}
	defer closeHosts(two)
	three, err := openClusterHosts(ctx, env, 3)
	if err != nil {
		return nil, fmt.Errorf("three members: %w", err)
	}
	defer closeHosts(three)

	// Member 0's servers, and those member 1 runs, as member 0 shows them.
	var here, there []string
	for _, st := range two[0].Status() {
		tool := "mcp__" + st.Name + "__echo"
		if st.Node == "" {
			here = append(here, tool)
		} else {
			there = append(there, tool)
		}
	}
	slices.Sort(here)
	slices.Sort(there)
	all := make([]string, clusterServers)
	for i := range all {
		all[i] = "mcp__" + serverName(i) + "__echo"
	}
	type phase struct {
		name           string
		members        int
		hosts          []*benchHost // the callers' hosts
		tools          []string
		callers, calls int
	}
	lat, many := env.Sizes.LatencyCalls, env.Sizes.ThroughputCalls
	phases := []phase{
		{ClusterHost, 1, one, all, 1, lat},
		{ClusterLocal, 2, two[:1], here, 1, lat},
		{ClusterHop, 2, two[:1], there, 1, lat},
		{ClusterHostMany, 1, one, all, env.Sizes.Callers, many},
		{ClusterHopMany, 2, two[:1], there, env.Sizes.Callers, many},
		{ClusterThreeMany, 3, three, all, env.Sizes.Callers, many},
	}
	figures := make([][]repeatFigures, len(phases))
	notes := make([]string, len(phases))
	for _, order := range repeatOrder(len(phases), max(1, env.Sizes.Repeats)) {
		for _, k := range order {
			p := phases[k]
			if len(p.tools) == 0 {
				notes[k] = "no server placed there (the placement put every server on one member)"
				continue
			}
			c := &clusterClient{hosts: p.hosts, tools: p.tools}
			drive(ctx, c, p.callers, env.Sizes.WarmupCalls, len(p.tools), nil)
			samples := make(samples, p.calls)
			runtime.GC()
			cpu0 := cpuStart()
			elapsed, errs, first := drive(ctx, c, p.callers, p.calls, len(p.tools), samples)
			cpu := cpuSince(cpu0)
			if first != nil && notes[k] == "" {
				notes[k] = fmt.Sprintf("%d calls failed, first: %v", errs, first)
			}
			figures[k] = append(figures[k], repeatFigures{calls: p.calls, errs: errs, elapsed: elapsed, lat: samples.summary(), cpu: cpu})
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
	var recs []Record
	for k, p := range phases {
		rec := Record{Scenario: ScenarioCluster, Contender: p.name, Servers: len(p.tools), Callers: p.callers, Note: notes[k]}
		fillRepeats(&rec, figures[k])
		if rec.Metrics == nil {
			rec.Metrics = map[string]float64{}
		}
		rec.Metrics["members"] = float64(p.members)
		recs = append(recs, rec)
		env.logf("  %-14s %d member(s), %2d caller(s): p50 %.1fµs p99 %.1fµs, %.0f calls/s, %d errors %s",
			rec.Contender, p.members, rec.Callers, rec.P50us, rec.P99us, rec.CallsPerSec, rec.Errors, rec.Note)
	}
	return recs, nil
}

// openClusterHosts opens n hosts of the same clusterServers servers: one
// host alone for n = 1, else the members of one in-process cluster. It
// returns once every host shows every server ready and, in a cluster,
// every member agrees where each runs.
func openClusterHosts(ctx context.Context, env *Env, n int) ([]*benchHost, error) {
	servers := make([]mcpvisor.ServerConfig, clusterServers)
	for i := range servers {
		servers[i] = mcpvisor.ServerConfig{Name: serverName(i), Command: env.Server, Args: echoServerArgs(false), Enabled: true}
	}
	members := cluster.InProcess()
	var hosts []*benchHost
	for range n {
		opts := mcpvisor.Options{Config: &mcpvisor.Config{Servers: servers}}
		if n > 1 {
			opts.Cluster = cluster.Options{Name: "mcpbench", Members: members, Gossip: clusterGossip, InsecureLoopback: true}
		}
		h, err := openHost(ctx, env, opts)
		if err != nil {
			closeHosts(hosts)
			return nil, err
		}
		hosts = append(hosts, h)
	}
	wctx, cancel := context.WithTimeout(ctx, clusterReadyWait)
	defer cancel()
	for {
		agreed, why := clusterAgreed(hosts)
		if agreed {
			return hosts, nil
		}
		select {
		case <-wctx.Done():
			closeHosts(hosts)
			return nil, fmt.Errorf("not ready after %v: %s", clusterReadyWait, why)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// clusterAgreed is whether every host shows every server ready, each
// server running on one host and named by every other as the same member.
func clusterAgreed(hosts []*benchHost) (bool, string) {
	runs := map[string]int{}
	names := map[string]map[string]bool{}
	for i, h := range hosts {
		sts := h.Status()
		if len(sts) != clusterServers {
			return false, fmt.Sprintf("host %d shows %d servers", i, len(sts))
		}
		for _, st := range sts {
			if st.State != mcpvisor.StateReady {
				return false, fmt.Sprintf("host %d: %s is %s", i, st.Name, st.State)
			}
			if st.Node == "" {
				runs[st.Name]++
				continue
			}
			if names[st.Name] == nil {
				names[st.Name] = map[string]bool{}
			}
			names[st.Name][st.Node] = true
		}
	}
	for i := range clusterServers {
		name := serverName(i)
		if runs[name] != 1 || len(names[name]) > 1 {
			return false, fmt.Sprintf("%s runs on %d hosts, named as %d members elsewhere", name, runs[name], len(names[name]))
		}
	}
	return true, ""
}

func closeHosts(hosts []*benchHost) {
	for _, h := range hosts {
		h.close()
	}
}

// clusterClient calls tools through hosts, one after another whatever the
// tool (drive picks the tool), so that each host takes as many calls of
// each server.
type clusterClient struct {
	hosts []*benchHost
	tools []string
	next  atomic.Uint64
}

func (c *clusterClient) call(ctx context.Context, server int) error {
	h := c.hosts[0]
	if len(c.hosts) > 1 {
		h = c.hosts[c.next.Add(1)%uint64(len(c.hosts))]
	}
	return h.callTool(ctx, c.tools[server], echoArgs)
}

func (c *clusterClient) close() error { return nil }

// clusterTargets are issue 41's cluster targets.
func (r *Run) clusterTargets() []Target {
	const from = "issue 41"
	var ts []Target
	host, hop := r.find(ScenarioCluster, ClusterHost), r.find(ScenarioCluster, ClusterHop)
	t := Target{From: from, Name: "Cluster: one hop (two members in one process, loopback, 1 caller) p50 ≤ one host's + 100 µs"}
	if ran(host) && ran(hop) && hop.Errors == 0 {
		added := hop.P50us - host.P50us
		t.Pass = added <= 100
		t.Measured = fmt.Sprintf("%+.1f µs (hop %.1f µs vs one host %.1f µs%s)", added, hop.P50us, host.P50us, spreads(hop, host))
		if local := r.find(ScenarioCluster, ClusterLocal); ran(local) {
			t.Measured += fmt.Sprintf("; the member's own server %.1f µs", local.P50us)
		}
	} else {
		t.Missing, t.Measured = true, "not measured"
	}
	ts = append(ts, t)
	one, three := r.find(ScenarioCluster, ClusterHostMany), r.find(ScenarioCluster, ClusterThreeMany)
	t = Target{From: from, Name: fmt.Sprintf("Cluster: three members in one process, %d callers spread over them, calls/s ≥ 0.6× one host's", r.Sizes.Callers)}
	if ran(one) && ran(three) && three.Errors == 0 {
		ratio := safeDiv(three.CallsPerSec, one.CallsPerSec)
		t.Pass = ratio >= 0.6
		t.Measured = fmt.Sprintf("%.2f× (%.0f vs %.0f calls/s)", ratio, three.CallsPerSec, one.CallsPerSec)
	} else {
		t.Missing, t.Measured = true, "not measured"
	}
	return append(ts, t)
}

// clusterSection writes scenario 14.
func (r *Run) clusterSection(b *strings.Builder) {
	if r.find(ScenarioCluster, ClusterHost) == nil {
		return
	}
	fmt.Fprintf(b, "## 14. Cluster: a call forwarded one hop, and three members, in one process\n\n")
	fmt.Fprintf(b, "One host alone, a cluster of two members and one of three, in this process on loopback (in-process membership, members in clear), each with the same %d echo servers, each server run by one member. "+
		"`hop` calls from member 0 of the two the servers member 1 runs, `member-local` those member 0 runs; `three-members` spreads %d callers over the three members (two calls in three cross to another member). "+
		"%d repeats, interleaved; medians.\n\n", clusterServers, r.Sizes.Callers, max(1, r.Sizes.Repeats))
	b.WriteString("| contender | members | servers called | callers | p50 µs | p99 µs | calls/s | host CPU s per 100k calls | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var notes []string
	for _, name := range []string{ClusterHost, ClusterLocal, ClusterHop, ClusterHostMany, ClusterHopMany, ClusterThreeMany} {
		rec := r.find(ScenarioCluster, name)
		if rec == nil {
			continue
		}
		if rec.Note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", rec.Contender, rec.Note))
		}
		if !ran(rec) {
			fmt.Fprintf(b, "| %s | %.0f | %d | %d | failed | | | | |\n", rec.Contender, metric(rec, "members"), rec.Servers, rec.Callers)
			continue
		}
		fmt.Fprintf(b, "| %s | %.0f | %d | %d | %.1f | %.1f | %.0f | %.2f | %d |\n", rec.Contender, metric(rec, "members"), rec.Servers, rec.Callers,
			rec.P50us, rec.P99us, rec.CallsPerSec, rec.HostCPU, rec.Errors)
	}
	b.WriteString("\n")
	writeNotes(b, notes)
}
