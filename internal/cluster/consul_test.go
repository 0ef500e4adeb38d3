package cluster

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"

	"github.com/mcpvisor/mcpvisor/internal/consultest"
)

func consulNodes(t *testing.T, agent *consultest.Agent, n int, ttl time.Duration) ([]*Node, []*atomic.Bool) {
	return providerNodes(t, n, func(i int) pcluster.ClusterProvider {
		p, err := NewConsulProvider(ConsulConfig{Address: agent.URL, Token: agent.Token(fmt.Sprintf("m%d", i)), TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return p
	})
}

// Members find each other by their keys, and one that leaves destroys its
// session: its key goes, and the others count it out at once (a blocking
// query returns).
func TestConsulMembership(t *testing.T) {
	agent := consultest.New(t)
	nodes, _ := consulNodes(t, agent, 3, 10*time.Second)
	took := waitMembers(t, nodes, nodes, 10*time.Second)
	t.Logf("three members agreed in %v", took.Round(time.Millisecond))
	if keys := agent.Keys("mcpvisor/provider test/"); len(keys) != 3 {
		t.Fatalf("keys %v, want one per member", keys)
	}
	nodes[2].Stop()
	took = waitMembers(t, nodes[:2], nodes[:2], 5*time.Second)
	t.Logf("a member that left was counted out in %v", took.Round(time.Millisecond))
	if keys := agent.Keys("mcpvisor/"); len(keys) != 2 {
		t.Errorf("keys %v after a member left, want 2", keys)
	}
}

// A member cut off from Consul counts itself lost before the others drop
// it, which they do when Consul invalidates its session.
func TestConsulMemberCutOff(t *testing.T) {
	agent := consultest.New(t)
	ttl := 2 * time.Second // under Consul's minimum; the test agent takes it
	nodes, lost := consulNodes(t, agent, 3, ttl)
	waitMembers(t, nodes, nodes, 10*time.Second)
	memberCutOff(t, nodes, lost, 10*ttl, func() { agent.Cut("m2", true) })
}
