package harness

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The cluster scenario measures each of its contenders, the hop through a
// member of two to a server the other member runs, without a failed call,
// and the report turns its figures into the two targets and the section.
func TestClusterScenario(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs, err := Cluster(ctx, tinyEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ClusterHost, ClusterLocal, ClusterHop, ClusterHostMany, ClusterHopMany, ClusterThreeMany}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	sizes := TinySizes()
	for i, r := range recs {
		if r.Contender != want[i] {
			t.Errorf("record %d is %s, want %s", i, r.Contender, want[i])
		}
		if r.Note != "" && strings.HasPrefix(r.Note, "no server placed there") {
			continue // every server on one member: a 1 in 2^6 placement
		}
		calls := sizes.LatencyCalls
		if r.Callers > 1 {
			calls = sizes.ThroughputCalls
		}
		if r.Errors != 0 || r.Note != "" || r.Calls != calls*sizes.Repeats || r.P50us <= 0 || r.CallsPerSec <= 0 {
			t.Errorf("%s: %d of %d calls failed (%s), p50 %.1f µs, %.0f calls/s", r.Contender, r.Errors, r.Calls, r.Note, r.P50us, r.CallsPerSec)
		}
	}
	run := &Run{Sizes: sizes, Records: recs}
	ts := run.clusterTargets()
	if len(ts) != 2 || ts[0].Missing && recs[2].Note == "" || ts[1].Missing {
		t.Errorf("cluster targets: %+v", ts)
	}
	md := run.Markdown("")
	for _, s := range []string{"## 14. Cluster", "| hop | 2 |", "| three-members | 3 |", "| issue 41 | Cluster: one hop"} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q", s)
		}
	}
}

// The cluster targets: the hop passes at 100 µs over one host's p50 and
// misses past it; three members pass at 0.6× one host's calls/s.
func TestClusterTargets(t *testing.T) {
	rec := func(name string, p50, cps float64) Record {
		return Record{Scenario: ScenarioCluster, Contender: name, Calls: 10, P50us: p50, CallsPerSec: cps}
	}
	for _, tc := range []struct {
		hop, three float64
		pass       [2]bool
	}{
		{hop: 300, three: 600, pass: [2]bool{true, true}},
		{hop: 300.5, three: 599, pass: [2]bool{false, false}},
	} {
		r := &Run{Sizes: TinySizes(), Records: []Record{
			rec(ClusterHost, 200, 0), rec(ClusterHop, tc.hop, 0), rec(ClusterLocal, 210, 0),
			rec(ClusterHostMany, 0, 1000), rec(ClusterThreeMany, 0, tc.three),
		}}
		ts := r.clusterTargets()
		for i := range ts {
			if ts[i].Missing || ts[i].Pass != tc.pass[i] {
				t.Errorf("hop %v, three %v: target %q %+v, want pass %v", tc.hop, tc.three, ts[i].Name, ts[i], tc.pass[i])
			}
		}
	}
}
