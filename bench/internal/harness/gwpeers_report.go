package harness

import (
	"fmt"
	"strings"
)

// fromIssue41 is where the gateway-peers targets come from.
const fromIssue41 = "issue 41"

// bestPeerGateway is the peer gateway's record of part with the best
// figure: the highest calls/s (fastest) or the lowest p50 (!fastest), or
// nil when no peer measured it without errors.
func (r *Run) bestPeerGateway(part string, fastest bool) *Record {
	var best *Record
	for _, name := range gatewayPeerNames {
		rec := r.find(part, name)
		if !ran(rec) || rec.Errors > 0 {
			continue
		}
		if best == nil || fastest && rec.CallsPerSec > best.CallsPerSec || !fastest && rec.P50us < best.P50us {
			best = rec
		}
	}
	return best
}

// gatewayPeerTargets evaluates issue 41's gateway targets on the
// gateway-peers records: mcpvisor's gateway against the best peer gateway.
func (r *Run) gatewayPeerTargets() []Target {
	var ts []Target
	add := func(name string, ok, pass bool, measured string) {
		t := Target{From: fromIssue41, Name: name, Missing: !ok, Pass: ok && pass, Measured: "not measured"}
		if ok {
			t.Measured = measured
		}
		ts = append(ts, t)
	}
	for _, part := range []struct{ scenario, what string }{
		{GatewayPeersCallers, "one session"},
		{GatewayPeersSessions, "as many sessions"},
	} {
		host, best := r.find(part.scenario, Mcpvisor), r.bestPeerGateway(part.scenario, true)
		ratio := safeDiv(field(host, cps), field(best, cps))
		add(fmt.Sprintf("Gateway, %d callers on %s: mcpvisor calls/s ≥ 2× the best peer gateway's", r.Sizes.Callers, part.what),
			ran(host) && host.Errors == 0 && best != nil, ratio >= 2,
			fmt.Sprintf("%.2f× (%.0f vs %s %.0f calls/s)", ratio, field(host, cps), bestName(best), field(best, cps)))
	}
	host, best := r.find(GatewayPeersOne, Mcpvisor), r.bestPeerGateway(GatewayPeersOne, false)
	ratio := safeDiv(field(host, p50), field(best, p50))
	add("Gateway, 1 caller: mcpvisor p50 ≤ 0.8× the best peer gateway's", ran(host) && host.Errors == 0 && best != nil, ratio <= 0.8,
		fmt.Sprintf("%.2f× (%.1f vs %s %.1f µs)", ratio, field(host, p50), bestName(best), field(best, p50)))
	// Session age: the session's next calls against a fresh session's first,
	// alternated call by call, so that the machine's noise falls on both
	// alike; its own last calls against its first, which ran minutes apart,
	// are shown beside.
	host = r.find(GatewayPeersAge, Mcpvisor)
	window := r.Sizes.GatewayPeerAgeWindow
	compared := metric(host, "fresh_p50_us") > 0
	add(fmt.Sprintf("Gateway, session age: after %d calls in one session, the p50 of %d more ≤ 1.1× a fresh session's first %d, alternated call by call", r.Sizes.GatewayPeerAgeCalls, window, window),
		ran(host) && host.Errors == 0 && compared, metric(host, "aged_ratio") <= 1.1,
		fmt.Sprintf("%.2f× (%.1f vs %.1f µs); its own last %d against its first %d, minutes apart: %.2f× (%.1f vs %.1f µs)", metric(host, "aged_ratio"),
			metric(host, "aged_p50_us"), metric(host, "fresh_p50_us"), window, window, metric(host, "age_ratio"), metric(host, "last_p50_us"), metric(host, "first_p50_us")))
	return ts
}

func bestName(rec *Record) string {
	if rec == nil {
		return "no peer"
	}
	return rec.Contender
}

// gatewayPeersIntro explains scenario 13.
const gatewayPeersIntro = "Each gateway puts the same stdio echo server (`bench/cmd/echoserver`, legacy era) behind Streamable HTTP on loopback: " +
	"**mcpvisor**: a Host supervising it (always on, its tool unprefixed) served by `gateway.New(h).Handler()` at `/mcp` on an `http.Server` **in this process**, as `mcpvisor serve` runs it (so it shares the harness's cores with the client; the peers are processes of their own); " +
	"**go-sdk-proxy**: `bench/cmd/gosdkproxy`, the naive proxy an embedder of the official Go SDK v1.8.0 would write (one client session over `CommandTransport`, one `mcp.Server` forwarding each tool call to it, `StreamableHTTPHandler` with its defaults); " +
	"**supergateway** " + supergatewayVersion + " (`--outputTransport streamableHttp --stateful`: a child per session) and **mcp-proxy** " + mcpProxyVersion + " (punkpeye's, `--server stream`, its defaults: one child shared by every session, the resumability event store on), both from npm on Node.js 22 (`bash bench/scripts/peers.sh`). " +
	gatewayPeerGone + " " +
	"The client is the raw `net/http` one of scenario 7 in the legacy era (2025-11-25: `initialize`, `notifications/initialized`, `tools/list`, then one POST per call with `Accept: application/json, text/event-stream`; an SSE answer is read to the end and its last message taken), one connection pool per session. " +
	"Every gateway starts once and serves the four parts in turn; in each part every gateway connects (fresh sessions), warms up, then runs its share of the calls in each of the interleaved rounds. " +
	"With many sessions each call takes an idle session, so that there is one caller per session.\n\n"

// gatewayPeersSection writes scenario 13: per part, every gateway's figures
// with its ratio to mcpvisor's.
func (r *Run) gatewayPeersSection(b *strings.Builder) {
	if r.find(GatewayPeersOne, Mcpvisor) == nil {
		return
	}
	fmt.Fprintf(b, "## 13. Gateway against peer gateways, in front of the stdio echo server\n\n")
	b.WriteString(gatewayPeersIntro)
	var notes []string
	for _, part := range []struct{ scenario, title string }{
		{GatewayPeersOne, fmt.Sprintf("1 caller, 1 session, %d calls per gateway", r.Sizes.GatewayPeerCalls)},
		{GatewayPeersCallers, fmt.Sprintf("%d callers on 1 session, %d calls per gateway", r.Sizes.Callers, r.Sizes.GatewayPeerLoadCalls)},
		{GatewayPeersSessions, fmt.Sprintf("%d sessions, one caller each, %d calls per gateway", r.Sizes.Callers, r.Sizes.GatewayPeerLoadCalls)},
		{GatewayPeersAge, fmt.Sprintf("session age: 1 caller, %d calls in one session, the first %d against the last", r.Sizes.GatewayPeerAgeCalls, r.Sizes.GatewayPeerAgeWindow)},
	} {
		host := r.find(part.scenario, Mcpvisor)
		if host == nil {
			continue
		}
		fmt.Fprintf(b, "**%s**\n\n", part.title)
		age := part.scenario == GatewayPeersAge
		if age {
			b.WriteString("Then, per gateway, a fresh session warmed up as the aged one was, and as many calls again on each, alternated call by call: **aged ÷ fresh** compares the two at the same moment; **last ÷ first** compares the session's own last and first calls, minutes apart, whatever the machine did meanwhile.\n\n")
			b.WriteString("| gateway | p50 µs | p99 µs | calls/s | first p50 µs | last p50 µs | last ÷ first | aged p50 µs | fresh p50 µs | aged ÷ fresh | mcpvisor p50 ÷ its | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		} else {
			b.WriteString("| gateway | p50 µs | p99 µs | max µs | calls/s | mcpvisor calls/s ÷ its | mcpvisor p50 ÷ its | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		}
		for _, name := range append([]string{Mcpvisor}, gatewayPeerNames...) {
			rec := r.find(part.scenario, name)
			if rec == nil {
				continue
			}
			if rec.Note != "" {
				notes = append(notes, fmt.Sprintf("%s, %s: %s", strings.TrimPrefix(part.scenario, ScenarioGatewayPeers+"/"), name, rec.Note))
			}
			if !ran(rec) {
				what := "failed"
				if skipped(rec) {
					what = "not installed"
				}
				fmt.Fprintf(b, "| %s | %s |%s\n", name, what, strings.Repeat(" |", map[bool]int{true: 10, false: 6}[age]))
				continue
			}
			if age {
				fmt.Fprintf(b, "| %s | %.1f | %.1f | %.0f | %.1f | %.1f | %.2f× | %.1f | %.1f | %.2f× | %s | %d |\n", name, rec.P50us, rec.P99us, rec.CallsPerSec,
					metric(rec, "first_p50_us"), metric(rec, "last_p50_us"), metric(rec, "age_ratio"),
					metric(rec, "aged_p50_us"), metric(rec, "fresh_p50_us"), metric(rec, "aged_ratio"), ratioCell(field(host, p50), rec.P50us), rec.Errors)
				continue
			}
			fmt.Fprintf(b, "| %s | %.1f | %.1f | %.0f | %.0f | %s | %s | %d |\n", name, rec.P50us, rec.P99us, rec.MaxUs, rec.CallsPerSec,
				ratioCell(field(host, cps), rec.CallsPerSec), ratioCell(field(host, p50), rec.P50us), rec.Errors)
		}
		b.WriteString("\n")
	}
	writeNotes(b, notes)
}
