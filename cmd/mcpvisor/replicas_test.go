package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/etcdtest"
	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// TestModernClientAcrossSidecars runs two `mcpvisor serve` processes
// (data directories of their own, one config, one token) behind a
// round-robin reverse proxy with no affinity, in front of one stateless
// gosdkpeer over Streamable HTTP ("prefix": false, --activate all). The
// TypeScript v2 client, in the 2026-07-28 era, calls ask through the
// proxy: each of its three requests (the call, then a retry per answer)
// reaches the other sidecar than the one before, and the server's
// requestState, which the gateway passes through, verifies wherever it
// lands. A gateway that kept a modern call's state in the process that
// started it would fail the retries here.
func TestModernClientAcrossSidecars(t *testing.T) {
	peers.ClientV2(t) // skip before starting anything when it is not installed
	modernAcrossSidecars(t)
}

// The same across two members of a cluster: the peer server runs in one
// of them, and a round that reaches the other goes on to it in one hop,
// its requestState and input responses with it.
func TestModernClientAcrossClusterMembers(t *testing.T) {
	peers.ClientV2(t)
	etcd := etcdtest.Start(t)
	// Both sidecars take the same flags: they talk without TLS, on
	// loopback (the cluster's own tests run over mutual TLS).
	modernAcrossSidecars(t, "--cluster", "modern", "--etcd", etcd, "--cluster-insecure-loopback")
}

func modernAcrossSidecars(t *testing.T, extra ...string) {

	peer := peers.GoSDKHTTP(t, "modern")
	cfg := writeConfig(t, `{"mcpServers":{"peer":{"type":"http","url":"`+peer+`","allowPrivate":true,"prefix":false,"protocolVersion":"2026-07-28"}}}`)
	const token = "one-token-for-both-sidecars"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var sidecars []*serveProcess
	for i := range 2 {
		data := filepath.Join(t.TempDir(), "data"+strconv.Itoa(i))
		sidecars = append(sidecars, startServeProcess(t, append([]string{"--config", cfg, "--data", data, "--token-file", tokenFile, "--activate", "all"}, extra...)...))
	}
	// An unprefixed name resolves once the server has listed its tools.
	for _, s := range sidecars {
		s.waitTool(t, token, "ask")
		// Ready as its own member shows it: in a cluster, a member shows a
		// server another runs once that member's view has arrived.
		waitClusterReady(t, s, token, 1, 30*time.Second)
	}

	proxy := newRoundRobin(t, sidecars[0].url, sidecars[1].url)
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	step := runTSClient(t, clientModern, map[string]any{
		"transport": "http", "url": front.URL + "/mcp", "token": token,
		"calls":   []map[string]any{{"step": "ask", "name": "ask"}},
		"answers": map[string]string{"name": "Ada", "color": "teal"},
	})
	if conn := step("connect"); conn.Era != "modern" || conn.Server == nil || conn.Server.Name != "mcpvisor" {
		t.Fatalf("connect: era %q, server %+v", conn.Era, conn.Server)
	}
	ask := step("ask")
	if ask.Rejected != nil || ask.IsError || ask.Text != "name=Ada color=teal" {
		t.Errorf("ask: rejected %+v, isError %v, text %q; want name=Ada color=teal", ask.Rejected, ask.IsError, ask.Text)
	}
	checkCallWire(t, clientModern, true, "ask", ask, 2)
	if errs := step("errors").Errors; len(errs) > 0 {
		t.Errorf("the client reported errors: %q", errs)
	}

	// The proxy's record: the call and its two retries, each on the other
	// sidecar than the one before.
	var rounds []proxied
	perSidecar := make([]int, len(sidecars))
	for _, p := range proxy.requests() {
		if p.method == "tools/call" && p.name == "ask" {
			rounds = append(rounds, p)
			perSidecar[p.backend]++
		}
	}
	if len(rounds) != 3 {
		t.Fatalf("the proxy passed %d tools/call of ask (%+v), want 3", len(rounds), proxy.requests())
	}
	for i, r := range rounds {
		if r.requestState != (i > 0) {
			t.Errorf("round %d: requestState %v", i+1, r.requestState)
		}
		if i > 0 && r.backend == rounds[i-1].backend {
			t.Errorf("rounds %d and %d both went to sidecar %d: %+v", i, i+1, r.backend, rounds)
		}
	}
	// Each sidecar's own count of the calls it made agrees.
	for i, s := range sidecars {
		if got := s.callsOf(t, token, "peer", "ask"); got != perSidecar[i] {
			t.Errorf("sidecar %d counted %d calls of ask, the proxy sent it %d", i, got, perSidecar[i])
		}
	}
}

// proxied is one request the round-robin proxy passed on.
type proxied struct {
	backend      int    // index of the sidecar that served it
	method       string // the JSON-RPC method ("" for a response or a batch)
	name         string // params.name
	requestState bool   // params.requestState is set
}

// roundRobin is a reverse proxy that sends each request to the next of its
// backends, with no affinity, recording what went where.
type roundRobin struct {
	backends []*httputil.ReverseProxy

	mu   sync.Mutex
	next int
	log  []proxied
}

func newRoundRobin(t *testing.T, urls ...string) *roundRobin {
	t.Helper()
	p := &roundRobin{}
	for _, u := range urls {
		target, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		p.backends = append(p.backends, &httputil.ReverseProxy{
			// SetURL also sets the Host header to the sidecar's, which
			// it checks against DNS rebinding.
			Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
			FlushInterval: -1, // SSE: each event as it comes
		})
	}
	return p
}

func (p *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name         string          `json:"name"`
			RequestState json.RawMessage `json:"requestState"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &msg) // a GET, a batch: recorded without a method
	p.mu.Lock()
	i := p.next
	p.next = (p.next + 1) % len(p.backends)
	p.log = append(p.log, proxied{backend: i, method: msg.Method, name: msg.Params.Name, requestState: len(msg.Params.RequestState) > 0})
	p.mu.Unlock()
	p.backends[i].ServeHTTP(w, r)
}

func (p *roundRobin) requests() []proxied {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]proxied(nil), p.log...)
}

// serveProcess is `mcpvisor serve` in a process of its own.
type serveProcess struct {
	url    string
	stderr *syncBuffer
	cmd    *exec.Cmd
	killed bool // by kill: the cleanup expects no clean exit
}

// kill sends SIGKILL: the process dies with no chance to leave.
func (s *serveProcess) kill(t *testing.T) {
	t.Helper()
	s.killed = true
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
}

// startServeProcess runs the mcpvisor binary's serve on a free loopback
// port until the test ends, when it gets SIGTERM and must exit 0.
func startServeProcess(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	cmd := exec.Command(cliBin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &serveProcess{stderr: &syncBuffer{}, cmd: cmd}
	listens := make(chan string, 1)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			fmt.Fprintln(s.stderr, sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case listens <- m[1]:
				default:
				}
			}
		}
		// Wait only after the last read of the pipe.
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil && !s.killed {
				t.Errorf("mcpvisor serve exited with %v after SIGTERM", err)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("mcpvisor serve still running 20 s after SIGTERM")
		}
		if t.Failed() {
			t.Logf("mcpvisor serve %s stderr:\n%s", strings.Join(args, " "), s.stderr)
		}
	})
	select {
	case s.url = <-listens:
		return s
	case err := <-exited:
		exited <- err // for the cleanup
		t.Fatalf("mcpvisor serve exited (%v) before listening: %s", err, s.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("mcpvisor serve not listening after 30 s: %s", s.stderr)
	}
	return nil
}

// waitTool waits, bounded, until the sidecar's catalog (GET /v1/tools)
// lists name: the condition a call by an unprefixed name depends on.
func (s *serveProcess) waitTool(t *testing.T, token, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get(t, s.url+"/v1/tools", token)
		var l struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		if code == http.StatusOK && json.Unmarshal(body, &l) == nil {
			for _, tl := range l.Tools {
				if tl.Name == name {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never listed %s: %d %s", s.url, name, code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// callsOf sums the sidecar's mcpvisor_calls_total of server's tool over
// every outcome.
func (s *serveProcess) callsOf(t *testing.T, token, server, tool string) int {
	t.Helper()
	code, body := get(t, s.url+"/metrics", token)
	if code != http.StatusOK {
		t.Fatalf("metrics: %d %s", code, body)
	}
	n := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "mcpvisor_calls_total{") ||
			!strings.Contains(line, `server="`+server+`"`) || !strings.Contains(line, `tool="`+tool+`"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}
