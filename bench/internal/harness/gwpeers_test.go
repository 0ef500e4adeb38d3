package harness

import (
	"strings"
	"testing"
)

func TestLastSSEData(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"one event", "event: message\ndata: {\"id\":1}\n\n", `{"id":1}`},
		{"priming event first", "id: a_1\ndata: \n\nevent: message\nid: a_2\ndata: {\"id\":2}\n\n", `{"id":2}`},
		{"CRLF and no space", "data:{\"id\":3}\r\n\r\n", `{"id":3}`},
		{"a notification, then the response", "data: {\"method\":\"n\"}\n\ndata: {\"id\":4}\n\n", `{"id":4}`},
		{"no data", "id: x\n\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(lastSSEData([]byte(tc.body))); got != tc.want {
				t.Errorf("lastSSEData(%q) = %q, want %q", tc.body, got, tc.want)
			}
		})
	}
}

// The targets take the best peer gateway that ran without errors (the
// highest calls/s, the lowest p50), ignore the skipped ones, and say PASS
// or MISS on the ratios issue 41 sets.
func TestGatewayPeerTargets(t *testing.T) {
	rec := func(part, name string, p50, cps float64, errs int) Record {
		return Record{Scenario: part, Contender: name, Calls: 100, Errors: errs, P50us: p50, CallsPerSec: cps, Metrics: map[string]float64{}}
	}
	age := rec(GatewayPeersAge, Mcpvisor, 300, 3000, 0)
	age.Metrics = map[string]float64{"age_window": 2000, "first_p50_us": 300, "last_p50_us": 345, "age_ratio": 1.15, "aged_p50_us": 330, "fresh_p50_us": 320, "aged_ratio": 330.0 / 320}
	r := &Run{Sizes: FullSizes(), Records: []Record{
		rec(GatewayPeersOne, Mcpvisor, 300, 3000, 0),
		rec(GatewayPeersOne, GoSDKProxy, 400, 2500, 0),
		rec(GatewayPeersOne, Supergateway, 200, 5000, 3), // errors: not a best peer
		{Scenario: GatewayPeersOne, Contender: MCPProxy, Note: skippedNote + "mcp-proxy@6.7.19 not installed"},
		rec(GatewayPeersCallers, Mcpvisor, 300, 6000, 0),
		rec(GatewayPeersCallers, GoSDKProxy, 300, 2000, 0),
		rec(GatewayPeersCallers, Supergateway, 300, 2500, 0),
		rec(GatewayPeersSessions, Mcpvisor, 300, 4000, 0),
		rec(GatewayPeersSessions, MCPProxy, 300, 2500, 0),
		age,
	}}
	want := []struct {
		measured  string
		pass, ran bool
	}{
		{"2.40× (6000 vs supergateway 2500 calls/s)", true, true},
		{"1.60× (4000 vs mcp-proxy 2500 calls/s)", false, true},
		{"0.75× (300.0 vs go-sdk-proxy 400.0 µs)", true, true},
		{"1.03× (330.0 vs 320.0 µs); its own last 2000 against its first 2000, minutes apart: 1.15× (345.0 vs 300.0 µs)", true, true},
	}
	ts := r.gatewayPeerTargets()
	if len(ts) != len(want) {
		t.Fatalf("%d targets, want %d: %+v", len(ts), len(want), ts)
	}
	for i, w := range want {
		if ts[i].From != fromIssue41 || ts[i].Measured != w.measured || ts[i].Pass != w.pass || ts[i].Missing == w.ran {
			t.Errorf("target %q: %q pass %v missing %v; want %q pass %v", ts[i].Name, ts[i].Measured, ts[i].Pass, ts[i].Missing, w.measured, w.pass)
		}
	}
	if !strings.Contains(ts[3].Name, "after 20000 calls in one session, the p50 of 2000 more") {
		t.Errorf("session age target %q does not name its window", ts[3].Name)
	}
	md := r.Markdown("")
	for _, s := range []string{"## 13. Gateway against peer gateways", "| mcp-proxy | not installed |", "TBXark/mcp-proxy is not a contender", "| issue 41 |"} {
		if !strings.Contains(md, s) {
			t.Errorf("the report lacks %q", s)
		}
	}

	// A session that grew older than 1.1× a fresh one misses.
	r.Records[len(r.Records)-1].Metrics["aged_ratio"] = 1.2
	if ts := r.gatewayPeerTargets(); ts[3].Pass || ts[3].Missing {
		t.Errorf("aged 1.2× a fresh session: pass %v, missing %v", ts[3].Pass, ts[3].Missing)
	}

	// No peer measured: the targets are not run, not passed.
	r.Records = []Record{rec(GatewayPeersOne, Mcpvisor, 300, 3000, 0)}
	for _, tgt := range r.gatewayPeerTargets() {
		if !tgt.Missing || tgt.Pass {
			t.Errorf("%q with no peer: missing %v, pass %v", tgt.Name, tgt.Missing, tgt.Pass)
		}
	}
}
