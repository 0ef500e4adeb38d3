package cluster

import (
	"time"

	"github.com/mcpvisor/mcpvisor/internal/cluster"
	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/cluster/clusterproviders/test"
)

// InProcess is a membership of the hosts of this process that share it:
// for tests, and for an embedder that runs several hosts in one process.
// A member that closes leaves at once.
func InProcess() Members { return &inProcess{agent: test.NewInMemAgent()} }

type inProcess struct{ agent *test.InMemAgent }

func (m *inProcess) Provider() (pcluster.ClusterProvider, error) {
	return test.NewTestProvider(m.agent, test.WithTestProviderRefreshTtl(100*time.Millisecond)), nil
}

// AutomanagedOptions are an automanaged membership's.
type AutomanagedOptions struct {
	// Listen is the host:port this member serves what it is at
	// (GET /_member).
	Listen string
	// Peers are the members' Listen addresses, this one's among them or
	// not.
	Peers []string
}

// Automanaged is a membership with no store: this member serves what it
// is at o.Listen and asks every one of o.Peers every half second; the
// members are those that answer. It has no authority: a member cut off
// from the others places their servers on itself until the network heals,
// and the two sides then stay apart until one side's members restart. For
// one machine or a test; etcd.Members fences and rejoins.
func Automanaged(o AutomanagedOptions) Members {
	return &automanaged{cfg: cluster.AutomanagedConfig{Listen: o.Listen, Peers: o.Peers}}
}

type automanaged struct{ cfg cluster.AutomanagedConfig }

func (m *automanaged) Provider() (pcluster.ClusterProvider, error) {
	return cluster.NewAutomanagedProvider(m.cfg)
}
