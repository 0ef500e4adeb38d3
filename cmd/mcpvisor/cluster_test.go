package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/certtest"
	"github.com/mcpvisor/mcpvisor/internal/consultest"
	"github.com/mcpvisor/mcpvisor/internal/etcdtest"
	"github.com/mcpvisor/mcpvisor/internal/k8stest"
	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// clusterServer is a server as a sidecar's GET /v1/servers shows it.
type clusterServer struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Node  string `json:"node"`
	PID   int    `json:"pid"`
}

func clusterServers(t *testing.T, s *serveProcess, token string) []clusterServer {
	t.Helper()
	code, body := get(t, s.url+"/v1/servers", token)
	var l struct {
		Servers []clusterServer `json:"servers"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &l) != nil {
		t.Fatalf("GET /v1/servers: %d %s", code, body)
	}
	return l.Servers
}

// waitClusterReady waits until s shows n servers, all ready, and none on
// the members gone.
func waitClusterReady(t *testing.T, s *serveProcess, token string, n int, within time.Duration, gone ...string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		sts := clusterServers(t, s, token)
		ready := 0
		for _, st := range sts {
			if st.State == "ready" && !slices.Contains(gone, st.Node) {
				ready++
			}
		}
		if ready == n && len(sts) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after %v: %d of %d ready: %+v", s.url, within, ready, n, sts)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// opsPending is a server's calls in flight, as GET /v1/ops gives them.
type opsPending struct {
	Name    string `json:"name"`
	Pending int    `json:"pending"`
}

func callThrough(s *serveProcess, token, tool, args string) (int, []byte, error) {
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/call", strings.NewReader(`{"tool":"`+tool+`","arguments":`+args+`}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes(), err
}

// Three mcpvisor serve processes on one etcd are one host: each server
// runs in one of them, a call through any of them reaches it, and when
// one is killed (SIGKILL: it never leaves) its servers run on the others
// once its lease lapses, while a call in flight on it fails rather than
// hang.
func TestServeCluster(t *testing.T) {
	t.Run("etcd", func(t *testing.T) {
		etcd := etcdtest.Start(t)
		serveCluster(t, func(int) []string { return []string{"--etcd", etcd} })
	})
	t.Run("kubernetes", func(t *testing.T) {
		api := k8stest.New(t)
		serveCluster(t, func(i int) []string {
			return []string{"--provider", "kubernetes", "--k8s-api", api.URL, "--k8s-namespace", "agents",
				"--k8s-ca-file", api.CAFile, "--k8s-token-file", api.Token(t, fmt.Sprintf("m%d", i))}
		})
	})
	t.Run("consul", func(t *testing.T) {
		agent := consultest.New(t)
		t.Setenv("CONSUL_HTTP_TOKEN", agent.Token("members"))
		serveCluster(t, func(int) []string {
			return []string{"--provider", "consul", "--consul", agent.URL, "--cluster-ttl", "2s"}
		})
	})
	t.Run("automanaged", func(t *testing.T) {
		// Every port chosen here, all at once: a member that took a free
		// port of its own for its cluster endpoint could take one chosen
		// for another's --member-listen.
		var ls []net.Listener
		var addrs []string
		for range 6 {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, l)
			addrs = append(addrs, l.Addr().String())
		}
		for _, l := range ls {
			l.Close()
		}
		listens := addrs[:3]
		serveCluster(t, func(i int) []string {
			return []string{"--provider", "automanaged", "--peers", strings.Join(listens, ","), "--member-listen", listens[i], "--cluster-listen", addrs[3+i]}
		})
	})
}

// memberTLS are the flags of member i of a cluster over mutual TLS with
// ca: a certificate of its own, named member-i.
func memberTLS(t *testing.T, ca *certtest.CA, i int) []string {
	cert, key := ca.Issue(t, fmt.Sprintf("member-%d", i))
	return []string{"--cluster-tls-cert", cert, "--cluster-tls-key", key, "--cluster-ca", ca.File}
}

// serveCluster runs three serve processes over mutual TLS, as a cluster
// must, with the membership's flags of each.
func serveCluster(t *testing.T, membership func(i int) []string) {
	ca := certtest.NewCA(t, "cluster CA")
	var entries []string
	for i := range 6 {
		entries = append(entries, fmt.Sprintf(`"s%d": {"command": "MCPTEST"}`, i))
	}
	cfg := writeConfig(t, `{"mcpServers": {`+strings.Join(entries, ",")+`}}`)
	const token = "one-token-for-the-cluster"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var nodes []*serveProcess
	for i := range 3 {
		data := filepath.Join(t.TempDir(), "data"+strconv.Itoa(i))
		nodes = append(nodes, startServeProcess(t, append([]string{"--config", cfg, "--data", data, "--token-file", tokenFile,
			"--cluster", "test"}, append(membership(i), memberTLS(t, ca, i)...)...)...))
	}
	for _, n := range nodes {
		waitClusterReady(t, n, token, 6, 30*time.Second)
	}
	t.Logf("three sidecars, every server ready on each, %v after the first started", time.Since(start).Round(time.Millisecond))
	// And agreed where each runs: one shows it running, the others name
	// one and the same member (they learn of each other at different
	// moments).
	deadline := time.Now().Add(30 * time.Second)
	for {
		seen := map[string]map[string]bool{}
		for _, n := range nodes {
			for _, st := range clusterServers(t, n, token) {
				if seen[st.Name] == nil {
					seen[st.Name] = map[string]bool{}
				}
				seen[st.Name][st.Node] = true
			}
		}
		agreed := len(seen) == 6
		for _, nodes := range seen {
			agreed = agreed && len(nodes) == 2 && nodes[""]
		}
		if agreed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s on, the sidecars disagree where servers run: %v", seen)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Each server runs in one process, which every sidecar reaches.
	runsOn := map[string]int{}
	pids := map[string]int{}
	for i, n := range nodes {
		for _, st := range clusterServers(t, n, token) {
			if st.Node == "" {
				if j, twice := runsOn[st.Name]; twice {
					t.Fatalf("%s runs in sidecars %d and %d", st.Name, j, i)
				}
				runsOn[st.Name], pids[st.Name] = i, st.PID
			}
		}
	}
	if len(runsOn) != 6 {
		t.Fatalf("%d of 6 servers run: %v", len(runsOn), runsOn)
	}
	// Each member's view of the cluster: three members, six servers.
	code, body := get(t, nodes[0].url+"/v1/cluster", token)
	var view struct {
		Members []struct {
			Address string   `json:"address"`
			Servers []string `json:"servers"`
		} `json:"members"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &view) != nil || len(view.Members) != 3 {
		t.Errorf("GET /v1/cluster: %d %s", code, body)
	}
	for name, pid := range pids {
		for i, n := range nodes {
			code, body, err := callThrough(n, token, "mcp__"+name+"__pid", `{}`)
			if err != nil || code != http.StatusOK || !strings.Contains(string(body), `"text":"`+strconv.Itoa(pid)+`"`) {
				t.Errorf("sidecar %d calls %s (pid %d): %d %s %v", i, name, pid, code, body, err)
			}
		}
	}

	// Kill the sidecar that runs s0, with a call to s0 in flight through
	// another one.
	victim := runsOn["s0"]
	via := nodes[(victim+1)%3]
	type answer struct {
		code int
		body []byte
		err  error
	}
	inflight := make(chan answer, 1)
	go func() {
		code, body, err := callThrough(via, token, "mcp__s0__slow", `{"ms":60000}`)
		inflight <- answer{code, body, err}
	}()
	// In flight on the victim: its operations view counts it pending.
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, body := get(t, nodes[victim].url+"/v1/ops?points=false", token)
		var v struct {
			Servers []opsPending `json:"servers"`
		}
		if code == http.StatusOK && json.Unmarshal(body, &v) == nil &&
			slices.ContainsFunc(v.Servers, func(s opsPending) bool { return s.Name == "s0" && s.Pending > 0 }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the call to s0 never reached the sidecar that runs it: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var victimAddr string
	for _, st := range clusterServers(t, via, token) {
		if st.Name == "s0" {
			victimAddr = st.Node
		}
	}
	killed := time.Now()
	nodes[victim].kill(t)
	select {
	case a := <-inflight:
		// The connection to it breaks at once; or, if that goes
		// unnoticed, its lease lapses.
		if a.err != nil || a.code != http.StatusServiceUnavailable ||
			!strings.Contains(string(a.body), "left the cluster with the request in flight") && !strings.Contains(string(a.body), "failed with the request in flight") {
			t.Errorf("the call in flight on the killed sidecar: %d %s %v; want 503 saying the request was in flight", a.code, a.body, a.err)
		}
		t.Logf("the call in flight on the killed sidecar failed after %v: %d %s", time.Since(killed).Round(time.Millisecond), a.code, a.body)
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight on the killed sidecar still waits 30 s later")
	}
	var rest []*serveProcess
	for i, n := range nodes {
		if i != victim {
			rest = append(rest, n)
		}
	}
	for _, n := range rest {
		waitClusterReady(t, n, token, 6, 30*time.Second, victimAddr)
	}
	t.Logf("its servers ready on the others %v after the kill", time.Since(killed).Round(time.Millisecond))
	for i, n := range rest {
		for name := range runsOn {
			if code, body, err := callThrough(n, token, "mcp__"+name+"__echo", `{"text":"x"}`); err != nil || code != http.StatusOK {
				t.Errorf("after the kill, sidecar %d calls %s: %d %s %v", i, name, code, body, err)
			}
		}
	}
}

// A legacy-era client of one member calls a tool of a legacy-era server
// (the Go SDK's) that runs on the other: the server's elicitation/create
// requests, sent to the member that runs it, reach the client on the
// member it is connected to (over its call's SSE stream), and its answers
// go back.
func TestLegacyClientElicitedThroughAnotherMember(t *testing.T) {
	peers.ClientV2(t)
	etcd := etcdtest.Start(t)
	peer := peers.GoSDKPeer(t)
	cfg := writeConfig(t, `{"mcpServers":{"old":{"command":"`+peer+`","args":["-transport","stdio","-era","dual"],"protocolVersion":"2025-11-25"}}}`)
	const token = "one-token-for-the-cluster"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := certtest.NewCA(t, "cluster CA")
	var sidecars []*serveProcess
	for i := range 2 {
		sidecars = append(sidecars, startServeProcess(t, append([]string{"--config", cfg, "--data", filepath.Join(t.TempDir(), "data"+strconv.Itoa(i)),
			"--token-file", tokenFile, "--activate", "all", "--cluster", "elicit", "--etcd", etcd}, memberTLS(t, ca, i)...)...))
	}
	for _, s := range sidecars {
		s.waitTool(t, token, "mcp__old__ask")
		waitClusterReady(t, s, token, 1, 30*time.Second)
	}
	// The client connects to the member that does not run the server.
	var other *serveProcess
	for _, s := range sidecars {
		for _, st := range clusterServers(t, s, token) {
			if st.Name == "old" && st.Node != "" {
				other = s
			}
		}
	}
	if other == nil {
		t.Fatal("no member shows the server running on another")
	}
	step := runTSClient(t, clientLegacy, map[string]any{
		"transport": "http", "url": other.url + "/mcp", "token": token,
		"tools":   []string{"mcp__old__ask"},
		"calls":   []map[string]any{{"step": "ask-old", "name": "mcp__old__ask"}},
		"answers": map[string]string{"name": "Ada", "color": "teal"},
	})
	ask := step("ask-old")
	if ask.Rejected != nil || ask.IsError || ask.Text != "name=Ada color=teal" {
		t.Errorf("ask-old: rejected %+v, isError %v, text %q; want name=Ada color=teal", ask.Rejected, ask.IsError, ask.Text)
	}
	var fields [][]string
	for _, a := range ask.Asked {
		fields = append(fields, a.Fields)
	}
	if len(fields) != 2 || !slices.Equal(fields[0], []string{"name"}) || !slices.Equal(fields[1], []string{"color"}) {
		t.Errorf("the client's elicitation handler was asked for %v; want [name] then [color]", fields)
	}
	checkCallWire(t, clientLegacy, true, "ask-old", ask, 2)
}

// serve --cluster without the members' TLS does not start: it names the
// flags it needs, and the insecure one.
func TestServeClusterNeedsTLS(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	out, err := exec.Command(cliBin, "serve", "--listen", "127.0.0.1:0", "--config", cfg, "--data", t.TempDir(), "--cluster", "test", "--etcd", "http://127.0.0.1:1").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("serve --cluster without TLS: %v\n%s", err, out)
	}
	for _, flag := range []string{"--cluster-tls-cert", "--cluster-tls-key", "--cluster-ca", "--cluster-insecure-loopback"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("the error does not name %s: %s", flag, out)
		}
	}
}
