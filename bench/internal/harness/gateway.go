package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
)

// Contender names of the gateway scenario. The direct ones are the floor: the
// same raw net/http client as the gateway's, straight to the echo server, in
// the legacy era (initialize, then Mcp-Session-Id) and in the modern one
// (2026-07-28: no session, the _meta and the SEP-2243 headers on every
// POST). The scenario's Host.Call rows keep the names Mcpvisor and
// McpvisorModern: the host behind the gateway, called in process.
const (
	Direct       = "direct"
	DirectModern = Direct + modernSuffix
)

// gatewayRoute is one way through the gateway: the era the client speaks to
// it and the era its Host speaks to the echo server (the server's
// ProtocolVersion pin).
type gatewayRoute struct {
	name                       string
	clientModern, serverModern bool
}

// gatewayRoutes are the four era combinations, named
// gateway-<client era>-<server era>.
var gatewayRoutes = []gatewayRoute{
	{"gateway-legacy-legacy", false, false},
	{"gateway-modern-modern", true, true},
	{"gateway-legacy-modern", false, true},
	{"gateway-modern-legacy", true, false},
}

// eraName is "modern" or "legacy".
func eraName(modern bool) string {
	if modern {
		return "modern"
	}
	return "legacy"
}

// directName is the direct contender of an era.
func directName(modern bool) string {
	if modern {
		return DirectModern
	}
	return Direct
}

// hostName is the Host.Call contender of a server era.
func hostName(modern bool) string {
	if modern {
		return McpvisorModern
	}
	return Mcpvisor
}

// Gateway is scenario 11: what the gateway adds to a call over a direct
// connection, with one caller. Two echo server children over Streamable
// HTTP, one per era (echoserver -http, and with -era modern), each behind
// a Host of its own that supervises it as an http server pinned to its era,
// with "prefix": false (the tool keeps its name, echo) and always on, served
// by gateway.New(h).Handler() on a loopback http.Server in this process.
// The same raw net/http client (rawHTTPSession: one POST per call, the body
// read whole) calls echo straight at each echo server (direct,
// direct-modern) and through each gateway in each era, four routes; and
// Host.Call on each host gives the host's own part. Every contender runs in
// the same rounds (interleave). Each route's record has its added latency:
// its p50 less the p50 of the direct contender of the client's era (what
// the same client pays talking straight to a server), the ratio, and the
// median, smallest and largest of the same difference taken round by round.
func Gateway(ctx context.Context, env *Env) ([]Record, error) {
	calls := env.Sizes.GatewayCalls
	env.logf("%s: 1 server per era, 1 caller, %d calls per contender", ScenarioGateway, calls)
	backends := map[bool]*gatewayBackend{}
	failed := map[bool]error{}
	for _, modern := range []bool{false, true} {
		b, err := startGatewayBackend(ctx, env, modern)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			failed[modern] = fmt.Errorf("the %s era's echo server, host or gateway: %w", eraName(modern), err)
			env.logf("  %v", failed[modern])
			continue
		}
		defer b.close()
		backends[modern] = b
	}
	// A contender whose backend did not start is recorded as unable to
	// connect, with the reason; the other era is still measured.
	pick := func(name string, modern bool, build func(*gatewayBackend) contender) contender {
		if err := failed[modern]; err != nil {
			return failedContender{name, err}
		}
		return build(backends[modern])
	}
	var cts []contender
	for _, modern := range []bool{false, true} {
		cts = append(cts, pick(directName(modern), modern, func(b *gatewayBackend) contender {
			return endpointContender{directName(modern), b.echo.url, modern}
		}))
	}
	for _, modern := range []bool{false, true} {
		cts = append(cts, pick(hostName(modern), modern, func(b *gatewayBackend) contender {
			return hostCallContender{hostName(modern), b.host}
		}))
	}
	for _, rt := range gatewayRoutes {
		cts = append(cts, pick(rt.name, rt.serverModern, func(b *gatewayBackend) contender {
			return endpointContender{rt.name, b.url, rt.clientModern}
		}))
	}
	// The POSTs and connections each echo server saw; a contender reaches
	// one of them only, so their sum is its own.
	counters := func() serverStats {
		var sum serverStats
		for _, b := range backends {
			st, err := b.echo.counters()
			if err != nil {
				env.logf("  reading the echo server's counters: %v", err)
			}
			sum.Conns += st.Conns
			sum.Posts += st.Posts
		}
		return sum
	}
	runs, err := interleave(ctx, env, cts, 1, 1, calls, false, counters)
	defer closeRuns(runs)
	if err != nil {
		return nil, err
	}

	byName := map[string]*contenderRun{}
	recs := make([]Record, len(cts))
	for i, r := range runs {
		byName[cts[i].name()] = r
		recs[i] = r.record(ScenarioGateway, cts[i].name(), 1, 1, calls)
		if r.c != nil {
			recs[i].Metrics = map[string]float64{"conns_opened": float64(r.conns), "posts_per_call": float64(r.posts) / float64(calls)}
		}
	}
	n := rounds(env, calls)
	for i := range recs {
		rec, run := &recs[i], runs[i]
		if run.c == nil {
			env.logf("  %-22s %s", rec.Contender, rec.Note)
			continue
		}
		var base, host *contenderRun
		switch name := rec.Contender; {
		case name == Mcpvisor || name == McpvisorModern:
			base = byName[directName(name == McpvisorModern)]
		case name != Direct && name != DirectModern:
			rt := gatewayRoutes[slices.IndexFunc(gatewayRoutes, func(rt gatewayRoute) bool { return rt.name == name })]
			base, host = byName[directName(rt.clientModern)], byName[hostName(rt.serverModern)]
		}
		if base != nil && base.c != nil {
			d := base.lat.summary()
			rec.Metrics["direct_p50_us"] = micros(d.p50)
			rec.Metrics["added_p50_us"] = rec.P50us - micros(d.p50)
			rec.Metrics["added_p99_us"] = rec.P99us - micros(d.p99)
			rec.Metrics["p50_ratio"] = safeDiv(rec.P50us, micros(d.p50))
			med, lo, hi := roundDiffs(run.lat, base.lat, calls, n)
			rec.Metrics["added_p50_us_round_median"], rec.Metrics["added_p50_us_round_min"], rec.Metrics["added_p50_us_round_max"] = med, lo, hi
		}
		if host != nil && host.c != nil {
			h := micros(host.lat.summary().p50)
			rec.Metrics["host_call_p50_us"] = h
			rec.Metrics["front_p50_us"] = rec.P50us - h
		}
		added := ""
		if v, ok := rec.Metrics["added_p50_us"]; ok {
			added = fmt.Sprintf("  added %+7.1fµs (%.2f×; per round %+.1f, %+.1f … %+.1f)", v, rec.Metrics["p50_ratio"],
				rec.Metrics["added_p50_us_round_median"], rec.Metrics["added_p50_us_round_min"], rec.Metrics["added_p50_us_round_max"])
		}
		env.logf("  %-22s p50 %7.1fµs  p99 %8.1fµs  errors %d%s", rec.Contender, rec.P50us, rec.P99us, rec.Errors, added)
	}
	return recs, nil
}

// roundDiffs is, round by round, the p50 of a's calls less the p50 of b's
// (in µs): the median over the rounds, the smallest and the largest. Both
// ran their share of each round back to back, so each difference is
// measured under the same moment's noise.
func roundDiffs(a, b samples, calls, n int) (med, lo, hi float64) {
	diffs := make([]float64, n)
	for k := range n {
		l, h := roundSpan(calls, n, k)
		diffs[k] = micros(a[l:h].summary().p50) - micros(b[l:h].summary().p50)
	}
	return median(diffs), slices.Min(diffs), slices.Max(diffs)
}

// gatewayBackend is one era's echo server behind a Host and its gateway:
// the echo server child over Streamable HTTP, a Host supervising it as an
// http server pinned to the era, and the gateway serving that Host on a
// loopback TCP port in this process.
type gatewayBackend struct {
	echo   *echoHTTP
	host   *benchHost
	gw     *gateway.Gateway
	srv    *http.Server
	served chan error // Serve's return
	url    string     // the gateway's MCP endpoint, http://127.0.0.1:PORT/mcp
}

// gatewayServer is the name of the echo server in each backend's Host.
const gatewayServer = "echo"

// startGatewayBackend starts one era's echo server, Host and gateway, and
// returns once the Host's server is ready speaking that era.
func startGatewayBackend(ctx context.Context, env *Env, modern bool) (*gatewayBackend, error) {
	ctx, cancel := context.WithTimeout(ctx, modernReadyWait)
	defer cancel()
	echo, err := startEchoHTTP(ctx, env, modern)
	if err != nil {
		return nil, err
	}
	unprefixed := false
	sc := mcpvisor.ServerConfig{Name: gatewayServer, Type: "http", URL: echo.url, AllowPrivate: true, Enabled: true,
		Prefix: &unprefixed, ProtocolVersion: eraVersion(modern)}
	h, err := openHost(ctx, env, mcpvisor.Options{Config: &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{sc}}, AlwaysOn: []string{gatewayServer}})
	if err != nil {
		echo.close()
		return nil, err
	}
	fail := func(err error) (*gatewayBackend, error) {
		h.close()
		echo.close()
		return nil, err
	}
	if err := h.WaitReady(ctx); err != nil {
		return fail(fmt.Errorf("%w%s", err, lastErrors(h)))
	}
	if err := (hostContender{modern: modern}).checkEra(h); err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	b := &gatewayBackend{echo: echo, host: h, served: make(chan error, 1), url: "http://" + ln.Addr().String() + "/mcp"}
	b.gw = gateway.New(h.Host, gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	mux := http.NewServeMux()
	mux.Handle("/mcp", b.gw.Handler())
	b.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { b.served <- b.srv.Serve(ln) }()
	return b, nil
}

// close ends the gateway's sessions, stops its server (waiting a bounded
// time for its requests), closes the host, then the echo server.
func (b *gatewayBackend) close() error {
	errs := []error{b.gw.Close()}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil {
		errs = append(errs, err, b.srv.Close())
	}
	if err := <-b.served; !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, err)
	}
	return errors.Join(append(errs, b.host.close(), b.echo.close())...)
}

// endpointContender is the raw net/http client (rawHTTPSession) on one MCP
// endpoint that serves the echo tool under its own name, in one era: the
// echo server itself, or a gateway in front of it.
type endpointContender struct {
	label  string
	url    string
	modern bool
}

func (ct endpointContender) name() string { return ct.label }

func (ct endpointContender) connect(ctx context.Context, _ *Env, n int, _ bool) (client, error) {
	c, err := dialRawHTTPClient(ctx, ct.url, n, ct.modern)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ct.label, err)
	}
	return c, nil
}

// hostCallContender is Host.Call of the echo tool (its own name: the server
// is unprefixed) on a host the scenario owns: closing the client leaves
// the host open.
type hostCallContender struct {
	label string
	host  *benchHost
}

func (ct hostCallContender) name() string { return ct.label }

func (ct hostCallContender) connect(context.Context, *Env, int, bool) (client, error) {
	return hostCallClient{ct.host}, nil
}

type hostCallClient struct{ host *benchHost }

func (c hostCallClient) call(ctx context.Context, _ int) error {
	res, err := c.host.Call(ctx, "echo", echoArgs)
	switch {
	case err != nil:
		return err
	case res.IsError:
		return fmt.Errorf("echo: tool error: %s", res.Text)
	case res.Text != string(echoArgs):
		return fmt.Errorf("echo: answered %q, not the arguments", res.Text)
	}
	return nil
}

func (hostCallClient) close() error { return nil }

// failedContender is a contender that cannot connect, and says why.
type failedContender struct {
	label string
	err   error
}

func (ct failedContender) name() string { return ct.label }

func (ct failedContender) connect(context.Context, *Env, int, bool) (client, error) {
	return nil, ct.err
}
