package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"

	"github.com/mcpvisor/mcpvisor/internal/k8stest"
)

// kubeNodes starts n members whose membership is Leases on api, member i
// with the token "m<i>"; lost[i] is set when member i says it lost its
// place.
func kubeNodes(t *testing.T, api *k8stest.Server, n int, ttl time.Duration) ([]*Node, []*atomic.Bool) {
	return providerNodes(t, n, func(i int) pcluster.ClusterProvider {
		p, err := NewKubernetesProvider(KubernetesConfig{APIServer: api.URL, Namespace: "agents", CAFile: api.CAFile, TokenFile: api.Token(t, fmt.Sprintf("m%d", i)), TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return p
	})
}

// providerNodes starts n members, member i with the provider provider(i);
// lost[i] is set when member i says it lost its place.
func providerNodes(t *testing.T, n int, provider func(i int) pcluster.ClusterProvider) ([]*Node, []*atomic.Bool) {
	t.Helper()
	nodes := make([]*Node, n)
	lost := make([]*atomic.Bool, n)
	for i := range n {
		lost[i] = &atomic.Bool{}
		l := lost[i]
		nodes[i] = joined(t, Config{Name: "provider test", Provider: provider(i), Gossip: 50 * time.Millisecond, InsecureLoopback: true, OnLost: func() { l.Store(true) },
			Handler: func(ctx context.Context, body []byte) ([]byte, error) { return body, nil }})
	}
	return nodes, lost
}

// waitMembers waits until each of nodes counts exactly want as members.
func waitMembers(t *testing.T, nodes []*Node, want []*Node, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	addrs := sortedAddrs(want)
	for {
		all := true
		for _, n := range nodes {
			all = all && slices.Equal(n.Members(), addrs)
		}
		if all {
			return time.Since(start)
		}
		if time.Since(start) > within {
			for _, n := range nodes {
				t.Logf("%s counts %v", n.Self(), n.Members())
			}
			t.Fatalf("members never agreed on %v", addrs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Members find each other by their Leases, place names alike, and one that
// leaves deletes its Lease: the others count it out at their next poll.
func TestKubernetesMembership(t *testing.T) {
	api := k8stest.New(t)
	// A Lease long enough that none lapses on a loaded machine: what is
	// tested is that one deleted is counted out at the next poll.
	nodes, _ := kubeNodes(t, api, 3, 15*time.Second)
	took := waitMembers(t, nodes, nodes, 10*time.Second)
	t.Logf("three members agreed in %v", took.Round(time.Millisecond))
	if got := api.Leases("agents"); len(got) != 3 {
		t.Fatalf("leases %v, want one per member", got)
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		owner := nodes[0].Owner(name, "")
		for _, n := range nodes[1:] {
			if n.Owner(name, "") != owner {
				t.Fatalf("%s placed apart", name)
			}
		}
	}
	nodes[2].Stop()
	took = waitMembers(t, nodes[:2], nodes[:2], 5*time.Second)
	t.Logf("a member that left was counted out in %v", took.Round(time.Millisecond))
	if got := api.Leases("agents"); len(got) != 2 {
		t.Errorf("leases %v after a member left, want 2", got)
	}
}

// A member cut off from the API server counts itself lost (its host then
// stops its servers) before the others drop it, which they do once they
// have seen its Lease unchanged for its duration, and delete it.
func TestKubernetesMemberCutOff(t *testing.T) {
	api := k8stest.New(t)
	// Members fence themselves after two thirds of the TTL without an
	// answer: 4 s leaves the ones not cut off room on a loaded machine.
	ttl := 4 * time.Second
	nodes, lost := kubeNodes(t, api, 3, ttl)
	waitMembers(t, nodes, nodes, 10*time.Second)
	memberCutOff(t, nodes, lost, 10*ttl, func() { api.Cut("m2", true) })
	deadline := time.Now().Add(5 * time.Second)
	for len(api.Leases("agents")) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the expired Lease was not deleted: %v", api.Leases("agents"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// memberCutOff cuts nodes[2] off from its membership's store (cut) and
// checks that it counts itself lost before the others drop it.
func memberCutOff(t *testing.T, nodes []*Node, lost []*atomic.Bool, within time.Duration, cut func()) {
	t.Helper()
	cut()
	at := time.Now()
	var fenced, dropped time.Duration
	for fenced == 0 || dropped == 0 {
		if fenced == 0 && lost[2].Load() {
			fenced = time.Since(at)
		}
		if dropped == 0 && !slices.Contains(nodes[0].Members(), nodes[2].Self()) && !slices.Contains(nodes[1].Members(), nodes[2].Self()) {
			dropped = time.Since(at)
			if fenced == 0 && !lost[2].Load() {
				t.Fatalf("the others dropped the member %v after the cut, before it counted itself lost", dropped)
			}
		}
		if time.Since(at) > within {
			t.Fatalf("after %v: lost %v, members %v", time.Since(at), lost[2].Load(), nodes[0].Members())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("cut off: counted itself lost after %v, dropped by the others after %v", fenced.Round(time.Millisecond), dropped.Round(time.Millisecond))
	if fenced >= dropped {
		t.Errorf("fenced %v, dropped %v: the others must drop it after it stops", fenced, dropped)
	}
	if lost[0].Load() || lost[1].Load() {
		t.Error("a member not cut off counted itself lost")
	}
}

// Outside a pod, with nothing given, the provider says what is missing.
func TestKubernetesOutsideAPod(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := NewKubernetesProvider(KubernetesConfig{})
	if err == nil || !strings.Contains(err.Error(), "KUBERNETES_SERVICE_HOST") {
		t.Errorf("no configuration: %v", err)
	}
	api := k8stest.New(t)
	_, err = NewKubernetesProvider(KubernetesConfig{APIServer: api.URL, Namespace: "x", CAFile: api.CAFile, TokenFile: "/nonexistent/token"})
	if err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("no token: %v", err)
	}
}
