package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/cluster"
	"github.com/mcpvisor/mcpvisor/cluster/etcd"
	"github.com/mcpvisor/mcpvisor/cluster/kubernetes"
	"github.com/mcpvisor/mcpvisor/internal/certtest"
	"github.com/mcpvisor/mcpvisor/internal/etcdtest"
	"github.com/mcpvisor/mcpvisor/internal/k8stest"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// openCluster opens n hosts of one in-process cluster, each with the same
// servers, and waits until every host shows every server ready.
func openCluster(t *testing.T, n int, servers ...mcpvisor.ServerConfig) []*mcpvisor.Host {
	t.Helper()
	return openClusterOf(t, cluster.InProcess(), n, servers...)
}

func openClusterOf(t testing.TB, members cluster.Members, n int, servers ...mcpvisor.ServerConfig) []*mcpvisor.Host {
	t.Helper()
	return openClusterWith(t, members, n, func(int) mcpvisor.Options { return mcpvisor.Options{} }, servers...)
}

// openClusterWith is openClusterOf with each host's options (its Cluster
// set here, but for its TLS).
func openClusterWith(t testing.TB, members cluster.Members, n int, options func(i int) mcpvisor.Options, servers ...mcpvisor.ServerConfig) []*mcpvisor.Host {
	t.Helper()
	hosts := make([]*mcpvisor.Host, n)
	for i := range n {
		opts := options(i)
		co := cluster.Options{Name: "test", Members: members, Gossip: 50 * time.Millisecond, InsecureLoopback: true}
		if c, ok := opts.Cluster.(cluster.Options); ok {
			co.TLS = c.TLS
		}
		opts.Cluster = co
		hosts[i] = openHost(t, opts, servers...)
	}
	for _, h := range hosts {
		waitAllReady(t, h, len(servers))
	}
	waitAgreed(t, hosts)
	// Once they agree, each shows the servers others run as their member
	// last published them: ready there means published ready, with the
	// catalog it lists.
	for _, h := range hosts {
		waitAllReady(t, h, len(servers))
	}
	return hosts
}

// waitAgreed waits until the hosts (nil: gone) agree where each server
// runs: one shows it running, every other names one and the same member.
// Members learn of a new membership at different moments; until then a
// call may be sent to a member that no longer counts itself the server's.
func waitAgreed(t testing.TB, hosts []*mcpvisor.Host) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		nodes := map[string]map[string]bool{} // server → the nodes the hosts name
		for _, h := range hosts {
			if h == nil {
				continue
			}
			for _, st := range h.Status() {
				if nodes[st.Name] == nil {
					nodes[st.Name] = map[string]bool{}
				}
				nodes[st.Name][st.Node] = true
			}
		}
		agreed := true
		for _, seen := range nodes {
			agreed = agreed && len(seen) == 2 && seen[""]
		}
		if agreed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s on, the hosts still disagree where servers run: %v", nodes)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAllReady waits until h shows n servers, every one ready (here or on
// another member).
func waitAllReady(t testing.TB, h *mcpvisor.Host, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready := 0
		sts := h.Status()
		for _, st := range sts {
			if st.State == mcpvisor.StateReady {
				ready++
			}
		}
		if ready == n && len(sts) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s, %d of %d servers ready: %+v", ready, n, sts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// placed maps each server to the index of the host it runs on, checking
// that it runs on exactly one and that every host agrees.
func placed(t testing.TB, hosts []*mcpvisor.Host) map[string]int {
	t.Helper()
	on := map[string]int{}
	for i, h := range hosts {
		if h == nil {
			continue
		}
		for _, st := range h.Status() {
			if st.Node != "" {
				continue // shown as its member published it
			}
			if j, twice := on[st.Name]; twice {
				t.Fatalf("%s runs on host %d and on host %d", st.Name, j, i)
			}
			if st.PID == 0 {
				t.Errorf("%s runs on host %d with no process: %+v", st.Name, i, st)
			}
			on[st.Name] = i
		}
	}
	return on
}

// Three hosts as one: every server runs on one of them, each host shows
// every server and its tools, and a call from any host reaches the server
// wherever it runs (the pid tool answers with the process's id, which
// only the host that runs it knows).
func TestClusterPlacesAndRoutes(t *testing.T) {
	servers := mcptests(6)
	hosts := openCluster(t, 3, servers...)
	on := placed(t, hosts)
	if len(on) != 6 {
		t.Fatalf("%d of 6 servers run somewhere: %v", len(on), on)
	}
	used := map[int]bool{}
	for _, i := range on {
		used[i] = true
	}
	if len(used) < 2 {
		t.Errorf("6 servers on %d host(s) of 3: %v", len(used), on)
	}
	for name, i := range on {
		pid := status(t, hosts[i], name).PID
		for j, h := range hosts {
			if st := status(t, h, name); j != i && (st.Node == "" || st.PID != pid) {
				t.Errorf("host %d shows %s as %+v, want the status of the member it runs on", j, name, st)
			}
			if !hasTool(h, "mcp__"+name+"__pid") {
				t.Errorf("host %d does not list %s's tools", j, name)
			}
			res, err := h.Call(context.Background(), "mcp__"+name+"__pid", nil)
			if err != nil || res.Text != strconv.Itoa(pid) {
				t.Errorf("host %d calls %s: %v, %v; want pid %d", j, name, res, err, pid)
			}
		}
	}
	// A server's error crosses as the host's own: the host's sentinels,
	// and the server's JSON-RPC errors with their codes.
	_, err := hosts[0].Call(context.Background(), "mcp__s0__nope", nil)
	if !errors.Is(err, mcpvisor.ErrUnknownTool) {
		t.Errorf("an unknown tool, from any host: %v", err)
	}

}

// Each member's view of the cluster: every member once, itself marked,
// each server run by exactly one of them, all caught up; a host that is
// no member says so.
func TestClusterStatusView(t *testing.T) {
	servers := mcptests(5)
	hosts := openCluster(t, 3, servers...)
	on := placed(t, hosts)
	deadline := time.Now().Add(30 * time.Second)
	for _, h := range hosts {
		for {
			cs, ok := h.Cluster()
			if !ok || cs.Name != "test" || len(cs.Members) != 3 {
				t.Fatalf("view %+v, %v", cs, ok)
			}
			runs := map[string]int{}
			self, agreed := 0, 0
			for i, m := range cs.Members {
				if m.Self {
					self++
					if m.Address != cs.Self {
						t.Errorf("member %d is marked self but is %s, not %s", i, m.Address, cs.Self)
					}
				}
				if m.Agreed {
					agreed++
				}
				for _, s := range m.Servers {
					runs[s]++
				}
			}
			done := len(runs) == len(servers) && agreed == 3
			for name, n := range runs {
				done = done && n == 1 && cs.Members[slices.IndexFunc(cs.Members, func(m mcpvisor.ClusterMember) bool { return slices.Contains(m.Servers, name) })].Address == hostAddr(hosts[on[name]])
			}
			if self != 1 {
				t.Fatalf("%d members marked self: %+v", self, cs)
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 30 s the view is %+v (running on hosts %v)", cs, on)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	solo := openHost(t, mcpvisor.Options{})
	if _, ok := solo.Cluster(); ok {
		t.Error("a host outside any cluster has a view of one")
	}
}

// hostAddr is a member's own address.
func hostAddr(h *mcpvisor.Host) string {
	cs, _ := h.Cluster()
	return cs.Self
}

// A host that leaves: its servers are placed on the others and started
// there, the rest stay where they were, and every server answers again.
func TestClusterReplacesAMemberThatLeaves(t *testing.T) {
	servers := mcptests(6)
	hosts := openCluster(t, 3, servers...)
	before := placed(t, hosts)
	leaving := before["s0"]
	start := time.Now()
	if err := hosts[leaving].Close(); err != nil {
		t.Fatal(err)
	}
	rest := []*mcpvisor.Host{}
	for i, h := range hosts {
		if i != leaving {
			rest = append(rest, h)
		}
	}
	for _, h := range rest {
		waitAllReady(t, h, 6)
	}
	t.Logf("the servers of the member that left were ready on the others %v after it began to close", time.Since(start).Round(time.Millisecond))
	hosts[leaving] = nil
	after := placed(t, hosts)
	for name, i := range before {
		j, ok := after[name]
		switch {
		case !ok:
			t.Errorf("%s runs nowhere", name)
		case i != leaving && j != i:
			t.Errorf("%s moved from host %d to %d though its host stayed", name, i, j)
		}
	}
	for _, h := range rest {
		for name := range before {
			if _, err := h.Call(context.Background(), "mcp__"+name+"__echo", []byte(`{"text":"x"}`)); err != nil {
				t.Errorf("%s after the member left: %v", name, err)
			}
		}
	}
}

// The same with the membership in a real etcd: three hosts place and route
// as one, and a host that closes revokes its lease, so the others take
// its servers at once.
func TestClusterOnEtcd(t *testing.T) {
	url := etcdtest.Start(t)
	servers := mcptests(6)
	start := time.Now()
	hosts := openClusterOf(t, etcd.Members(etcd.Options{Endpoints: []string{url}}), 3, servers...)
	t.Logf("three hosts on etcd, every server ready on each, in %v", time.Since(start).Round(time.Millisecond))
	on := placed(t, hosts)
	if len(on) != 6 {
		t.Fatalf("%d of 6 servers run somewhere: %v", len(on), on)
	}
	for name := range on {
		for j, h := range hosts {
			if _, err := h.Call(context.Background(), "mcp__"+name+"__echo", []byte(`{"text":"x"}`)); err != nil {
				t.Errorf("host %d calls %s: %v", j, name, err)
			}
		}
	}
	leaving := on["s0"]
	start = time.Now()
	if err := hosts[leaving].Close(); err != nil {
		t.Fatal(err)
	}
	for i, h := range hosts {
		if i != leaving {
			waitAllReady(t, h, 6)
		}
	}
	t.Logf("its servers ready on the others %v after a host began to close", time.Since(start).Round(time.Millisecond))
	hosts[leaving] = nil
	if after := placed(t, hosts); len(after) != 6 {
		t.Errorf("after a host left, %d of 6 servers run: %v", len(after), after)
	}
}

func hasTool(h *mcpvisor.Host, name string) bool {
	for _, tl := range h.Tools() {
		if tl.Name == name {
			return tl.Available
		}
	}
	return false
}

// A server registered on one member at run time is registered on every
// member and runs on the one it is placed on; disabled on another member,
// it stops everywhere; unregistered on a third, it is gone from all.
func TestClusterRegistryIsShared(t *testing.T) {
	hosts := openCluster(t, 3, mcptest("base"))
	ctx := context.Background()
	start := time.Now()
	if err := hosts[0].Register(ctx, mcptest("added")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < len(hosts); {
		if _, ok := findStatus(hosts[i], "added"); ok {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("host %d does not list the registered server", i)
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("a registration on one member listed on all three in %v", time.Since(start).Round(100*time.Microsecond))
	for _, h := range hosts {
		waitAllReady(t, h, 2)
	}
	t.Logf("a registration on one member ready on all three in %v", time.Since(start).Round(time.Millisecond))
	if on := placed(t, hosts); len(on) != 2 {
		t.Fatalf("servers running: %v", on)
	}
	for i, h := range hosts {
		if _, err := h.Call(ctx, "mcp__added__echo", []byte(`{"text":"x"}`)); err != nil {
			t.Errorf("host %d calls the added server: %v", i, err)
		}
	}

	if err := hosts[1].SetEnabled(ctx, "added", false); err != nil {
		t.Fatal(err)
	}
	waitEveryState(t, hosts, "added", mcpvisor.StateDisabled)
	if err := hosts[2].SetEnabled(ctx, "added", true); err != nil {
		t.Fatal(err)
	}
	waitEveryState(t, hosts, "added", mcpvisor.StateReady)

	if err := hosts[2].Unregister(ctx, "added"); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for i := 0; i < len(hosts); {
		if _, ok := findStatus(hosts[i], "added"); !ok {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("host %d still has the unregistered server: %+v", i, hosts[i].Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mcptests are n mcptest servers, s0 to s<n-1>.
func mcptests(n int) []mcpvisor.ServerConfig {
	var servers []mcpvisor.ServerConfig
	for i := range n {
		servers = append(servers, mcptest(fmt.Sprintf("s%d", i)))
	}
	return servers
}

func findStatus(h *mcpvisor.Host, name string) (mcpvisor.ServerStatus, bool) {
	for _, st := range h.Status() {
		if st.Name == name {
			return st, true
		}
	}
	return mcpvisor.ServerStatus{}, false
}

// waitEveryState waits until every host shows server in state.
func waitEveryState(t *testing.T, hosts []*mcpvisor.Host, server string, state mcpvisor.State) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < len(hosts); {
		if st, ok := findStatus(hosts[i], server); ok && st.State == state {
			i++
			continue
		}
		if time.Now().After(deadline) {
			for j, h := range hosts {
				st, _ := findStatus(h, server)
				t.Logf("host %d: %s %s node %q pid %d enabled %v", j, server, st.State, st.Node, st.PID, st.Enabled)
			}
			t.Fatalf("host %d does not show %s %s", i, server, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A server with a node label runs only on a member labelled so, however
// the names hash; with none left, it runs nowhere and says why, while the
// others go on.
func TestClusterNodeLabel(t *testing.T) {
	members := cluster.InProcess()
	heavy := mcptest("heavy")
	heavy.Node = "gpu"
	servers := append(mcptests(4), heavy)
	var hosts []*mcpvisor.Host
	for i := range 3 {
		co := cluster.Options{Name: "test", Members: members, Gossip: 50 * time.Millisecond, InsecureLoopback: true}
		if i == 1 {
			co.Labels = []string{"gpu"}
		}
		hosts = append(hosts, openHost(t, mcpvisor.Options{Cluster: co}, servers...))
	}
	for _, h := range hosts {
		waitAllReady(t, h, len(servers))
	}
	if on := placed(t, hosts); on["heavy"] != 1 {
		t.Fatalf("heavy runs on host %d, not on the one labelled gpu: %v", on["heavy"], on)
	}
	if _, err := hosts[0].Call(context.Background(), "mcp__heavy__echo", []byte(`{"text":"x"}`)); err != nil {
		t.Errorf("a call to heavy from another host: %v", err)
	}
	if err := hosts[1].Close(); err != nil {
		t.Fatal(err)
	}
	hosts[1] = nil
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _ := findStatus(hosts[0], "heavy")
		if st.State == mcpvisor.StateElsewhere {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heavy after its only member left: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err := hosts[0].Call(context.Background(), "mcp__heavy__echo", []byte(`{"text":"x"}`))
	if !errors.Is(err, mcpvisor.ErrUnavailable) || !strings.Contains(err.Error(), "no member for it") {
		t.Errorf("a call to heavy with no gpu member: %v", err)
	}
	live := []*mcpvisor.Host{hosts[0], hosts[2]}
	for _, name := range []string{"s0", "s1", "s2", "s3"} {
		waitEveryState(t, live, name, mcpvisor.StateReady) // placed again on the two left
		if _, err := hosts[2].Call(context.Background(), "mcp__"+name+"__echo", []byte(`{"text":"x"}`)); err != nil {
			t.Errorf("%s after the gpu member left: %v", name, err)
		}
	}
}

// The history of the whole cluster: each member journals the calls that
// arrive at it, and ClusterHistory asks every member.
func TestClusterHistory(t *testing.T) {
	hosts := openCluster(t, 3, mcptests(3)...)
	ctx := context.Background()
	for i, h := range hosts {
		for range i + 1 { // 1, 2 and 3 calls
			if _, err := h.Call(ctx, "mcp__s0__echo", []byte(`{"text":"x"}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall, Tool: "mcp__s0__echo"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		members, err := hosts[1].ClusterHistory(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		total := 0
		for _, m := range members {
			if m.Error != "" {
				t.Fatalf("member %s: %s", m.Member, m.Error)
			}
			got[m.Member] = len(m.Records)
			total += len(m.Records)
		}
		if len(members) == 3 && total == 6 && members[0].Records != nil && len(members[0].Records) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's history of 6 calls (1, 2, 3 per member): %v", got)
		}
		time.Sleep(20 * time.Millisecond) // each journal commits in its own time
	}

	// A page of the whole cluster's history is bounded: each member is
	// asked for the limit, the merge keeps the limit, oldest first, and
	// next goes on until every record has been listed once.
	byMember := map[string][]uint64{}
	pages := 0
	var newest time.Time // of the pages before
	for after := mcpvisor.ClusterCursor(nil); ; pages++ {
		g := f
		g.Limit = 2
		members, next, err := hosts[1].ClusterHistoryPage(ctx, g, after)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		var pageNewest time.Time
		for _, m := range members {
			if m.Error != "" {
				t.Fatalf("member %s: %s", m.Member, m.Error)
			}
			for _, r := range m.Records {
				byMember[m.Member] = append(byMember[m.Member], r.Seq)
				if r.Time.Before(newest) {
					t.Errorf("page %d: %s's record %d at %v, older than a record of an earlier page (%v)", pages, m.Member, r.Seq, r.Time, newest)
				}
				if r.Time.After(pageNewest) {
					pageNewest = r.Time
				}
			}
			n += len(m.Records)
		}
		newest = pageNewest
		if n > 2 || pages > 6 {
			t.Fatalf("page %d: %d records, limit 2: %+v", pages, n, members)
		}
		if next == nil {
			break
		}
		after = next
	}
	total := 0
	for m, seqs := range byMember {
		if !slices.IsSorted(seqs) || len(slices.Compact(slices.Clone(seqs))) != len(seqs) {
			t.Errorf("member %s listed %v: each once, in order, wanted", m, seqs)
		}
		total += len(seqs)
	}
	if total != 6 || pages < 3 {
		t.Errorf("paging the cluster's history by 2: %d records in %d pages, want 6 in 3 or more: %v", total, pages+1, byMember)
	}

	// Who had s0's tools: a session on member 2, asked from member 0.
	// Grants are shared, and journaled by every member: each says so.
	if err := hosts[2].Session("agent-7", "").Activate(ctx, "s0"); err != nil {
		t.Fatal(err)
	}
	// Each member journals the grant when it applies it: ask about a
	// moment after every member has (gossip may take more than a second
	// on a loaded machine).
	deadline = time.Now().Add(30 * time.Second)
	for _, h := range hosts {
		for !slices.Contains(h.Session("agent-7", "").Groups(), "s0") {
			if time.Now().After(deadline) {
				t.Fatalf("the grant never reached every member: %v", h.Session("agent-7", "").Groups())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	at := time.Now()
	deadline = time.Now().Add(30 * time.Second)
	for {
		access, err := hosts[0].ClusterWhoHadAccess(ctx, "mcp__s0__echo", at)
		if err != nil {
			t.Fatal(err)
		}
		each := len(access) == 3
		for _, m := range access {
			var sessions []string
			for _, sc := range m.Scopes {
				sessions = append(sessions, sc.Session)
			}
			each = each && m.Error == "" && slices.Equal(sessions, []string{"agent-7"})
		}
		if each {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("who had s0, across the cluster: %+v", access)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// etcdProxy is a TCP proxy to etcd that a test can cut and heal: a
// member behind it is cut off from etcd while its peers are not.
type etcdProxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
}

func newEtcdProxy(t *testing.T, etcdURL string) *etcdProxy {
	p := &etcdProxy{t: t, target: strings.TrimPrefix(etcdURL, "http://")}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *etcdProxy) url() string { return "http://" + p.addr }

func (p *etcdProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

// cut closes the listener and every connection: the member behind it
// reaches etcd no more.
func (p *etcdProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// heal listens again on the same address.
func (p *etcdProxy) heal() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serve(ln)
}

// A member cut off from etcd (its peers still reach it over gRPC): once
// its lease lapses the others place its servers on themselves, and it
// stops every server it ran, so none runs twice; healed, it joins again as
// a new member and takes its share back.
func TestClusterPartitionFromMembership(t *testing.T) {
	t.Run("etcd", func(t *testing.T) {
		url := etcdtest.Start(t)
		proxy := newEtcdProxy(t, url)
		clusterPartition(t, func(i int) cluster.Members {
			endpoint := url
			if i == 2 {
				endpoint = proxy.url()
			}
			return etcd.Members(etcd.Options{Endpoints: []string{endpoint}, TTL: 2 * time.Second})
		}, proxy.cut, proxy.heal)
	})
	t.Run("kubernetes", func(t *testing.T) {
		api := k8stest.New(t)
		clusterPartition(t, func(i int) cluster.Members {
			return kubernetes.Members(kubernetes.Options{APIServer: api.URL, Namespace: "agents", CAFile: api.CAFile,
				TokenFile: api.Token(t, fmt.Sprintf("m%d", i)), TTL: 2 * time.Second})
		}, func() { api.Cut("m2", true) }, func() { api.Cut("m2", false) })
	})
}

// clusterPartition runs three members (members(i): the membership of
// member i, each with a 2 s lease) and cuts member 2 off from the
// membership's store, then heals it.
func clusterPartition(t *testing.T, members func(i int) cluster.Members, cutOff, heal func()) {
	servers := mcptests(6)
	var hosts []*mcpvisor.Host
	for i := range 3 {
		co := cluster.Options{Name: "test", Members: members(i), Gossip: 50 * time.Millisecond, InsecureLoopback: true}
		hosts = append(hosts, openHost(t, mcpvisor.Options{Cluster: co}, servers...))
	}
	for _, h := range hosts {
		waitAllReady(t, h, len(servers))
	}
	before := placed(t, hosts)
	mine := 0
	for _, i := range before {
		if i == 2 {
			mine++
		}
	}
	t.Logf("the member behind the proxy runs %d of 6 servers", mine)

	cut := time.Now()
	cutOff()
	// The cut member fences itself: it runs nothing once it lost its place.
	deadline := time.Now().Add(30 * time.Second)
	for {
		running := 0
		for _, st := range hosts[2].Status() {
			if st.Node == "" && st.PID != 0 {
				running++
			}
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the member cut off still runs %d servers 30 s later", running)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the cut member stopped its servers %v after the cut", time.Since(cut).Round(time.Millisecond))
	// The others start them once its lease has expired: later than it
	// stopped them, so that none ran twice.
	for _, h := range hosts[:2] {
		waitAllReady(t, h, len(servers))
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		running := 0
		for _, h := range hosts[:2] {
			for _, st := range h.Status() {
				if st.Node == "" && st.PID != 0 {
					running++
				}
			}
		}
		if running == len(servers) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the cut, %d of %d servers run on the others", running, len(servers))
		}
		time.Sleep(20 * time.Millisecond)
	}
	placed(t, hosts) // each runs once
	t.Logf("the others run every server %v after the cut", time.Since(cut).Round(time.Millisecond))

	// Healed, it joins again under a new id and address, so its share
	// is whatever the hashing gives the new address.
	healed := time.Now()
	heal()
	deadline = time.Now().Add(30 * time.Second)
	for {
		members, err := hosts[0].ClusterHistory(context.Background(), mcpvisor.HistoryFilter{Limit: 1})
		if err == nil && len(members) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after healing, the members: %+v (%v)", members, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, h := range hosts {
		waitAllReady(t, h, len(servers))
	}
	placed(t, hosts) // each runs once
	t.Logf("healed, the member joined again %v later", time.Since(healed).Round(time.Millisecond))
	for i, h := range hosts {
		for name := range before {
			if _, err := h.Call(context.Background(), "mcp__"+name+"__echo", []byte(`{"text":"x"}`)); err != nil {
				t.Errorf("host %d calls %s after the partition: %v", i, name, err)
			}
		}
	}
}

// A session's grants are the same on every member: activated on one, its
// tools are callable through another; ended on a third, gone from all.
func TestClusterGrantsAreShared(t *testing.T) {
	hosts := openCluster(t, 3, mcptests(2)...)
	ctx := context.Background()
	if err := hosts[0].Session("agent-9", "").Activate(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < len(hosts); {
		if slices.Equal(hosts[i].Session("agent-9", "").Groups(), []string{"s1"}) {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("host %d: the session's groups %v, want [s1]", i, hosts[i].Session("agent-9", "").Groups())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := hosts[1].Session("agent-9", "").Call(ctx, "mcp__s1__echo", []byte(`{"text":"x"}`)); err != nil {
		t.Errorf("the granted tool through another member: %v", err)
	}
	if _, err := hosts[1].Session("agent-9", "").Call(ctx, "mcp__s0__echo", []byte(`{"text":"x"}`)); !errors.Is(err, mcpvisor.ErrNotGranted) {
		t.Errorf("a tool not granted, through another member: %v", err)
	}
	if err := hosts[2].Session("agent-9", "").End(ctx); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for i := 0; i < len(hosts); {
		if len(hosts[i].Session("agent-9", "").Groups()) == 0 {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("host %d still grants %v after the session ended on another", i, hosts[i].Session("agent-9", "").Groups())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The same with the automanaged membership: each member's endpoint on a
// loopback port, every member asking the others'.
func TestClusterAutomanaged(t *testing.T) {
	var listens []string
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listens = append(listens, l.Addr().String())
		l.Close()
	}
	servers := mcptests(6)
	var hosts []*mcpvisor.Host
	for i := range 3 {
		co := cluster.Options{Name: "test", Members: cluster.Automanaged(cluster.AutomanagedOptions{Listen: listens[i], Peers: listens}), Gossip: 50 * time.Millisecond, InsecureLoopback: true}
		hosts = append(hosts, openHost(t, mcpvisor.Options{Cluster: co}, servers...))
	}
	for _, h := range hosts {
		waitAllReady(t, h, len(servers))
	}
	waitAgreed(t, hosts)
	if on := placed(t, hosts); len(on) != len(servers) {
		t.Fatalf("running: %v", on)
	}
	for i, h := range hosts {
		for _, sc := range servers {
			if _, err := h.Call(context.Background(), "mcp__"+sc.Name+"__echo", []byte(`{"text":"x"}`)); err != nil {
				t.Errorf("host %d calls %s: %v", i, sc.Name, err)
			}
		}
	}
	start := time.Now()
	if err := hosts[1].Close(); err != nil {
		t.Fatal(err)
	}
	hosts[1] = nil
	waitRunning(t, hosts, len(servers))
	t.Logf("a member's servers ran on the others %v after it began to close", time.Since(start).Round(time.Millisecond))
}

// waitRunning waits until n servers run among hosts (nil: gone), each on
// one: placed fails the test if one runs twice.
func waitRunning(t *testing.T, hosts []*mcpvisor.Host, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		running := 0
		for _, h := range hosts {
			if h == nil {
				continue
			}
			for _, st := range h.Status() {
				if st.Node == "" && st.PID != 0 && st.State == mcpvisor.StateReady {
					running++
				}
			}
		}
		if running == n {
			placed(t, hosts)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s on, %d of %d servers run", running, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Against the reference server (server-everything, from npm) running on
// one of two members: resources read through the other member, and the
// server's own JSON-RPC error for a missing one reaches the caller as if
// it had asked the server itself.
func TestClusterResourcesThroughAMember(t *testing.T) {
	hosts := openCluster(t, 2, everythingServer(t, "everything"))
	on := placed(t, hosts)
	owner, other := hosts[on["everything"]], hosts[1-on["everything"]]
	ctx := featureCtx(t)
	const doc = "demo://resource/static/document/features.md"
	want, err := owner.ReadResource(ctx, "everything", doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := other.ReadResource(ctx, "everything", doc)
	if err != nil || len(got) != 1 || len(want) != 1 || got[0].Text != want[0].Text || got[0].Text == "" {
		t.Errorf("through the other member: %d contents, %v", len(got), err)
	}
	const missing = "demo://resource/static/document/no-such-document.md"
	_, here := owner.ReadResource(ctx, "everything", missing)
	_, there := other.ReadResource(ctx, "everything", missing)
	if here == nil || there == nil || !errors.Is(there, mcpvisor.ErrResourceNotFound) != !errors.Is(here, mcpvisor.ErrResourceNotFound) || here.Error() != there.Error() {
		t.Errorf("a missing resource: %v on its member, %v through the other", here, there)
	}
	var perr *protocol.Error
	if !errors.As(there, &perr) {
		t.Errorf("the server's JSON-RPC error did not cross: %v", there)
	}
}

// A server's events are journaled by the member that runs it; the
// cluster's pending events are every member's, and each is acknowledged
// once, on the member that holds it, whichever member is asked.
func TestClusterEvents(t *testing.T) {
	hosts := openCluster(t, 2, mcptests(2)...)
	on := placed(t, hosts)
	ctx := context.Background()
	for _, name := range []string{"s0", "s1"} {
		if _, err := hosts[0].Call(ctx, "mcp__"+name+"__notify", nil); err != nil {
			t.Fatal(err)
		}
	}
	pending := mcpvisor.EventFilter{Status: mcpvisor.EventPending, Method: "event/test"}
	var members []mcpvisor.MemberEvents
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		members, err = hosts[1].ClusterEvents(ctx, pending)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range members {
			n += len(m.Events)
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's pending events: %+v", members)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// One event a page: following next lists each once, wherever asked.
	seen := map[string]bool{}
	for after, pages := mcpvisor.ClusterCursor(nil), 0; ; pages++ {
		g := pending
		g.Limit = 1
		page, next, err := hosts[0].ClusterEventsPage(ctx, g, after)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range page {
			for _, ev := range m.Events {
				key := fmt.Sprintf("%s/%d", m.Member, ev.Seq)
				if seen[key] {
					t.Fatalf("page %d lists %s again", pages, key)
				}
				seen[key] = true
			}
			n += len(m.Events)
		}
		if n > 1 || pages > 4 {
			t.Fatalf("page %d: %d events, limit 1: %+v", pages, n, page)
		}
		if next == nil {
			break
		}
		after = next
	}
	if len(seen) != 2 {
		t.Errorf("paging the cluster's events by 1 listed %v, want both", seen)
	}
	for _, m := range members {
		for _, ev := range m.Events {
			// On the member that ran its server, which the other host
			// names as the server's node.
			if want := status(t, hosts[1-on[ev.Server]], ev.Server).Node; m.Member != want {
				t.Errorf("event of %s journaled by %s, but it runs on %s", ev.Server, m.Member, want)
			}
			if err := hosts[1].ClusterAck(ctx, m.Member, ev.Seq); err != nil {
				t.Errorf("ack %s's event %d through host 1: %v", m.Member, ev.Seq, err)
			}
			if err := hosts[0].ClusterAck(ctx, m.Member, ev.Seq+1000); !errors.Is(err, mcpvisor.ErrUnknownEvent) {
				t.Errorf("ack of an id %s never had: %v", m.Member, err)
			}
		}
	}
	members, err := hosts[0].ClusterEvents(ctx, pending)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if len(m.Events) != 0 || m.Error != "" {
			t.Errorf("after the acks, %s still has %d pending (%s)", m.Member, len(m.Events), m.Error)
		}
	}
}

// Restart through any member restarts the server where it runs.
func TestClusterRestartThroughAMember(t *testing.T) {
	hosts := openCluster(t, 2, mcptests(1)...)
	on := placed(t, hosts)
	owner, other := hosts[on["s0"]], hosts[1-on["s0"]]
	pid := status(t, owner, "s0").PID
	if err := other.Restart(context.Background(), "s0"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := status(t, owner, "s0")
		if st.State == mcpvisor.StateReady && st.PID != 0 && st.PID != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a restart through the other member: %+v (pid before %d)", st, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A server held for review runs on one member; every member lists its
// reviews, and a decision made on the other member is made where it runs.
func TestClusterToolReviews(t *testing.T) {
	held := mcptest("s0")
	held.ToolPolicy = mcpvisor.ToolPolicyHold
	members := cluster.InProcess()
	var hosts []*mcpvisor.Host
	for range 2 {
		hosts = append(hosts, openHost(t, mcpvisor.Options{Cluster: cluster.Options{Name: "test", Members: members, Gossip: 50 * time.Millisecond, InsecureLoopback: true}}, held))
	}
	for _, h := range hosts {
		waitAllReady(t, h, 1)
	}
	on := placed(t, hosts)
	other := hosts[1-on["s0"]]
	var echo mcpvisor.ToolReview
	deadline := time.Now().Add(30 * time.Second)
	for echo.Hash == "" {
		for _, rv := range other.ToolReviews() {
			if rv.Server == "s0" && rv.Tool == "echo" {
				echo = rv
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the member s0 does not run lists no review of its echo: %+v", other.ToolReviews())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if hasTool(other, "mcp__s0__echo") {
		t.Fatal("a held tool is listed before its approval")
	}
	if err := other.ApproveTool(context.Background(), "s0", "echo", echo.Hash, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := other.ApproveTool(context.Background(), "s0", "echo", "sha256:stale", "ops"); !errors.Is(err, mcpvisor.ErrStaleReview) {
		t.Errorf("a stale hash, decided through the other member: %v", err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for !hasTool(hosts[0], "mcp__s0__echo") || !hasTool(hosts[1], "mcp__s0__echo") {
		if time.Now().After(deadline) {
			t.Fatal("the approved tool is not listed on both members")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := other.Call(context.Background(), "mcp__s0__echo", []byte(`{"text":"x"}`)); err != nil {
		t.Errorf("the approved tool through the other member: %v", err)
	}

	// The pins are every member's: a rejection too, and when the member
	// that ran the server leaves, the server keeps both on the other.
	var slow mcpvisor.ToolReview
	for _, rv := range other.ToolReviews() {
		if rv.Server == "s0" && rv.Tool == "slow" {
			slow = rv
		}
	}
	if err := other.RejectTool(context.Background(), "s0", "slow", slow.Hash, "ops"); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for !reviewRejected(other, "s0", "slow") {
		if time.Now().After(deadline) {
			t.Fatal("the rejection is not listed on the other member")
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if err := hosts[on["s0"]].Close(); err != nil {
		t.Fatal(err)
	}
	waitAllReady(t, other, 1)
	if st, _ := findStatus(other, "s0"); st.Node != "" {
		t.Fatalf("s0 not moved to the member left: on %q", st.Node)
	}
	deadline = time.Now().Add(30 * time.Second)
	for !hasTool(other, "mcp__s0__echo") || !reviewRejected(other, "s0", "slow") {
		if time.Now().After(deadline) {
			t.Fatalf("after the move, echo listed %v, slow rejected %v", hasTool(other, "mcp__s0__echo"), reviewRejected(other, "s0", "slow"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("moved with its pins, echo listed %v after its member began to close", time.Since(start).Round(time.Millisecond))
	if hasTool(other, "mcp__s0__slow") || hasTool(other, "mcp__s0__crash") {
		t.Error("a rejected or never-approved tool is listed after the move")
	}
	if _, err := other.Call(context.Background(), "mcp__s0__echo", []byte(`{"text":"x"}`)); err != nil {
		t.Errorf("the approved tool after the move: %v", err)
	}
}

func reviewRejected(h *mcpvisor.Host, server, tool string) bool {
	for _, rv := range h.ToolReviews() {
		if rv.Server == server && rv.Tool == tool {
			return rv.Rejected
		}
	}
	return false
}

// Against the reference server on one of two members, called through the
// other: its elicitation and sampling requests are answered on the member
// the call came from (the call's own handler, else that member's hooks),
// not where the server runs, and its progress reaches the caller's
// OnProgress in order before the result.
func TestClusterFlowsReachTheCaller(t *testing.T) {
	var mu sync.Mutex
	asked := map[string][]int{} // what each member's hooks were asked
	hosts := openClusterWith(t, cluster.InProcess(), 2, func(i int) mcpvisor.Options {
		return mcpvisor.Options{
			Elicitation: func(ctx context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
				mu.Lock()
				asked["elicitation"] = append(asked["elicitation"], i)
				mu.Unlock()
				return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: map[string]any{"name": "member " + strconv.Itoa(i)}}, nil
			},
			Sampling: func(ctx context.Context, server string, p *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
				mu.Lock()
				asked["sampling"] = append(asked["sampling"], i)
				mu.Unlock()
				return &protocol.CreateMessageResult{Role: "assistant", Content: json.RawMessage(`{"type":"text","text":"from member ` + strconv.Itoa(i) + `"}`), Model: "m"}, nil
			},
		}
	}, everythingServer(t, "everything"))
	on := placed(t, hosts)
	owner := on["everything"]
	other := 1 - owner
	h := hosts[other]
	for _, tool := range []string{"trigger-elicitation-request", "trigger-sampling-request"} {
		deadline := time.Now().Add(30 * time.Second)
		for !hasTool(h, "mcp__everything__"+tool) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never listed on the other member", tool)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ctx := featureCtx(t)
	text := func(r *mcpvisor.Result) string {
		if r == nil {
			return ""
		}
		return r.Text
	}

	res, err := h.Call(ctx, "mcp__everything__trigger-elicitation-request", json.RawMessage(`{}`))
	if err != nil || !strings.Contains(res.Text, "- Name: member "+strconv.Itoa(other)) {
		t.Errorf("elicitation through the other member: %q, %v", text(res), err)
	}
	res, err = h.Call(ctx, "mcp__everything__trigger-sampling-request", json.RawMessage(`{"prompt":"hi","maxTokens":5}`))
	if err != nil || !strings.Contains(res.Text, "from member "+strconv.Itoa(other)) {
		t.Errorf("sampling through the other member: %q, %v", text(res), err)
	}
	mu.Lock()
	if want := []int{other}; !slices.Equal(asked["elicitation"], want) || !slices.Equal(asked["sampling"], want) {
		t.Errorf("members asked: %v, want only the calling member (%d)", asked, other)
	}
	mu.Unlock()

	// The call's own handler comes first, on the calling member.
	var own int
	res, err = h.CallWith(ctx, "mcp__everything__trigger-elicitation-request", json.RawMessage(`{}`), mcpvisor.CallOptions{
		Elicitation: func(ctx context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
			own++
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: map[string]any{"name": "the call's own"}}, nil
		},
	})
	if err != nil || own != 1 || !strings.Contains(res.Text, "- Name: the call's own") {
		t.Errorf("the call's own handler: asked %d times, %q, %v", own, text(res), err)
	}

	var got []mcpvisor.Progress // OnProgress runs on this goroutine
	res, err = h.CallWith(ctx, "mcp__everything__trigger-long-running-operation", json.RawMessage(`{"duration":1,"steps":4}`),
		mcpvisor.CallOptions{OnProgress: func(p mcpvisor.Progress) { got = append(got, p) }})
	if err != nil || !strings.Contains(res.Text, "Long running operation completed") {
		t.Fatalf("long-running operation through the other member: %q, %v", text(res), err)
	}
	if len(got) != 4 {
		t.Fatalf("%d progress notifications through the other member, want 4: %+v", len(got), got)
	}
	for i, p := range got {
		if p.Progress != float64(i+1) || p.Total == nil || *p.Total != 4 {
			t.Errorf("progress %d = %v of %v, want %d of 4", i, p.Progress, p.Total, i+1)
		}
	}
}

// A task whose server's member leaves while it runs: the calling member
// keeps polling it (its record is in that member's journal) on the member
// the server moves to. A server that keeps its tasks across a restart
// (mcptest -task-state) finishes it there, and the call answers as if
// nothing had happened; one that does not answers that the task is lost.
func TestClusterTaskFailover(t *testing.T) {
	for _, keeps := range []bool{true, false} {
		t.Run(fmt.Sprintf("state kept %v", keeps), func(t *testing.T) {
			srv := taskServer("t")
			if keeps {
				srv = taskServer("t", "-task-state", t.TempDir())
			}
			hosts := openCluster(t, 2, srv)
			on := placed(t, hosts)
			owner, caller := hosts[on["t"]], hosts[1-on["t"]]
			created := make(chan string, 1)
			type outcome struct {
				res *mcpvisor.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := caller.CallWith(context.Background(), "mcp__t__sleep_task", json.RawMessage(`{"ms":2000}`),
					mcpvisor.CallOptions{OnTask: func(ti mcpvisor.TaskInfo) { created <- ti.ID }})
				done <- outcome{res, err}
			}()
			id := <-created
			start := time.Now()
			if err := owner.Close(); err != nil {
				t.Fatal(err)
			}
			o := <-done
			t.Logf("the call ended %v after the server's member began to close: %v", time.Since(start).Round(time.Millisecond), o.err)
			ti, err := caller.Task(id)
			if err != nil {
				t.Fatal(err)
			}
			if keeps {
				if o.err != nil || o.res.Wire() != "slept 2000 ms" {
					t.Fatalf("the task across the move: %v, %v", o.res, o.err)
				}
				if !ti.Done || ti.Status != mcpvisor.TaskCompleted {
					t.Errorf("the caller's record of the task: %+v", ti)
				}
				return
			}
			if !errors.Is(o.err, mcpvisor.ErrTaskLost) {
				t.Fatalf("a task its server forgot in the move: %v, %v; want ErrTaskLost", o.res, o.err)
			}
			if !ti.Done || ti.Status != mcpvisor.TaskLost {
				t.Errorf("the caller's record of the lost task: %+v", ti)
			}
		})
	}
}

// Members that join one by one, learning of each other at different
// moments (the Kubernetes membership polls the Leases every half second):
// at no moment does a server run on two members, and every server runs
// once they agree.
func TestClusterJoinsRunEachServerOnce(t *testing.T) {
	api := k8stest.New(t)
	servers := mcptests(8)
	var hosts []*mcpvisor.Host
	twice := 0
	for i := range 3 {
		members := kubernetes.Members(kubernetes.Options{APIServer: api.URL, Namespace: "agents", CAFile: api.CAFile,
			TokenFile: api.Token(t, fmt.Sprintf("m%d", i))})
		hosts = append(hosts, openHost(t, mcpvisor.Options{Cluster: cluster.Options{Name: "test", Members: members, Gossip: 50 * time.Millisecond, InsecureLoopback: true}}, servers...))
		// Sample, until the new member is in every member's view and
		// every server runs: a server with a process on two members at
		// one sample ran twice.
		deadline := time.Now().Add(30 * time.Second)
		for {
			running := map[string]int{}
			for _, h := range hosts {
				for _, st := range h.Status() {
					if st.Node == "" && st.PID != 0 {
						running[st.Name]++
					}
				}
			}
			for name, n := range running {
				if n > 1 {
					twice++
					t.Errorf("%s runs on %d members at once while member %d joins", name, n, i)
				}
			}
			agreed := len(running) == len(servers)
			for _, h := range hosts {
				ms, _ := h.ClusterHistory(context.Background(), mcpvisor.HistoryFilter{Limit: 1})
				agreed = agreed && len(ms) == len(hosts)
			}
			if agreed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d joined 30 s ago: %d of %d servers run", i, len(running), len(servers))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitAgreed(t, hosts)
	waitRunning(t, hosts, len(servers)) // a server that moved last may still be starting
	if on := placed(t, hosts); len(on) != len(servers) {
		t.Errorf("servers running: %v", on)
	}
}

// Members over mutual TLS: every member calls every server; a member whose
// certificate cannot be read does not open.
func TestClusterOverMutualTLS(t *testing.T) {
	ca := certtest.NewCA(t, "cluster CA")
	members := cluster.InProcess()
	servers := mcptests(4)
	hosts := openClusterWith(t, members, 3, func(i int) mcpvisor.Options {
		cert, key := ca.Issue(t, fmt.Sprintf("member-%d", i))
		return mcpvisor.Options{Cluster: cluster.Options{TLS: &cluster.TLS{CertFile: cert, KeyFile: key, CAFile: ca.File}}}
	}, servers...)
	on := placed(t, hosts)
	for i, h := range hosts {
		for _, s := range servers {
			if _, err := h.Call(context.Background(), "mcp__"+s.Name+"__echo", []byte(`{"text":"x"}`)); err != nil {
				t.Errorf("host %d calls %s (on host %d): %v", i, s.Name, on[s.Name], err)
			}
		}
	}
	cert, _ := ca.Issue(t, "no-key")
	_, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: t.TempDir(), Cluster: cluster.Options{Name: "test", Members: members,
		TLS: &cluster.TLS{CertFile: cert, KeyFile: "/nonexistent/key.pem", CAFile: ca.File}}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/key.pem") {
		t.Errorf("a member without its key: %v", err)
	}
}

// A member does not start without mutual TLS, unless told to be
// insecure on loopback; nor off loopback when insecure; nor under a name
// its certificate does not give.
func TestClusterRequiresTLS(t *testing.T) {
	ca := certtest.NewCA(t, "cluster CA")
	cert, key := ca.Issue(t, "member-0")
	for _, tc := range []struct {
		name string
		co   cluster.Options
		want error
	}{
		{"no TLS", cluster.Options{}, cluster.ErrNoTLS},
		{"insecure off loopback", cluster.Options{InsecureLoopback: true, Listen: "0.0.0.0:0"}, cluster.ErrNotLoopback},
		{"insecure, advertised off loopback", cluster.Options{InsecureLoopback: true, Advertise: "10.1.2.3:7000"}, cluster.ErrNotLoopback},
		{"another name", cluster.Options{Member: "member-1", TLS: &cluster.TLS{CertFile: cert, KeyFile: key, CAFile: ca.File}}, cluster.ErrMemberName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			co := tc.co
			co.Name, co.Members = "test", cluster.InProcess()
			_, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: t.TempDir(), Cluster: co})
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// Gossip sends what changed: a server that restarts again and again on a
// member has that member republish its status, not every server's tools.
func TestClusterGossipSendsWhatChanged(t *testing.T) {
	servers := mcptests(12)
	hosts := openCluster(t, 2, servers...)
	on := placed(t, hosts)
	h := hosts[on["s0"]]
	var catalog int
	for _, tl := range h.Tools() {
		if strings.HasPrefix(tl.Name, "mcp__s0__") {
			b, _ := json.Marshal(tl)
			catalog += len(b)
		}
	}
	local := 0
	for _, i := range on {
		if i == on["s0"] {
			local++
		}
	}
	before := published(h)
	const restarts = 5
	for range restarts {
		if err := h.Restart(context.Background(), "s0"); err != nil {
			t.Fatal(err)
		}
		waitAllReady(t, h, len(servers))
	}
	after := published(h)
	t.Logf("%d servers on the member, one catalog %d bytes: %d bytes of statuses published per restart",
		local, catalog, (after["servers"]-before["servers"])/restarts)
	// Its tools do not change: no catalog is sent again, only statuses.
	// (Before catalogs were published apart, each publication resent
	// every local server's tools: 17.5 kB per restart with 8 servers.)
	if sent := after["catalog"] - before["catalog"]; sent != 0 {
		t.Errorf("%d bytes of catalogs published over %d restarts of a server whose tools did not change", sent, restarts)
	}
	if after["servers"] == before["servers"] {
		t.Errorf("no status published over %d restarts", restarts)
	}
}

// A task started through another member reports its progress to the
// caller while the caller's member polls it: the member that runs the
// server relays it after the call has returned the task.
func TestClusterTaskProgress(t *testing.T) {
	hosts := openCluster(t, 2, taskServer("t"))
	on := placed(t, hosts)
	caller := hosts[1-on["t"]]
	var got []mcpvisor.Progress // OnProgress runs on this goroutine
	var tasks int
	res, err := caller.CallWith(context.Background(), "mcp__t__sleep_task", json.RawMessage(`{"ms":800,"steps":3}`),
		mcpvisor.CallOptions{OnProgress: func(p mcpvisor.Progress) { got = append(got, p) }, OnTask: func(mcpvisor.TaskInfo) { tasks++ }})
	if err != nil || res.Wire() != "slept 800 ms" || tasks != 1 {
		t.Fatalf("sleep_task through the other member: %v, %v (%d tasks)", res, err, tasks)
	}
	if len(got) != 3 {
		t.Fatalf("%d progress notifications through the other member, want 3: %+v", len(got), got)
	}
	for i, p := range got {
		if p.Progress != float64(i+1) || p.Total == nil || *p.Total != 3 {
			t.Errorf("progress %d = %v of %v", i, p.Progress, p.Total)
		}
	}
}

// A server's log messages (and resource and list notifications) reach the
// subscribers of every member, as if it ran there.
func TestClusterNotificationsReachEveryMember(t *testing.T) {
	hosts := openCluster(t, 2, mcptests(1)...)
	on := placed(t, hosts)
	logs := make([]chan mcpvisor.Event, 2)
	for i, h := range hosts {
		c := make(chan mcpvisor.Event, 16)
		logs[i] = c
		unsubscribe := h.Subscribe(func(ev mcpvisor.Event) {
			if ev.Kind == mcpvisor.EventNotification && ev.Method == protocol.MethodLoggingMessage && ev.Server == "s0" {
				c <- ev
			}
		})
		t.Cleanup(unsubscribe)
	}
	other := hosts[1-on["s0"]]
	if _, err := other.Call(context.Background(), "mcp__s0__notify", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	for i, c := range logs {
		select {
		case ev := <-c:
			if !strings.Contains(string(ev.Params), "warning") {
				t.Errorf("host %d got %s", i, ev.Params)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("host %d (s0 on host %d) never saw the server's log message", i, on["s0"])
		}
	}
}

// publishedBytes is how much h has published by gossip as a member of its
// cluster.
func published(h *mcpvisor.Host) map[string]int64 {
	cs, _ := h.Cluster()
	return cs.Published
}
