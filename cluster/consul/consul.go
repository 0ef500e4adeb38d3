// Package consul is a cluster membership kept in Consul's KV store
// (cluster.Options.Members).
package consul

import (
	"time"

	"github.com/mcpvisor/mcpvisor/cluster"
	icluster "github.com/mcpvisor/mcpvisor/internal/cluster"
	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
)

// Options are where a Consul membership keeps its members.
type Options struct {
	// Address is the Consul agent's HTTP API ("": http://127.0.0.1:8500).
	Address string
	// Token is its ACL token, if it needs one.
	Token string
	// Prefix is the key prefix ("": "mcpvisor").
	Prefix string
	// TTL is each member's session, in whole seconds (0: 10 s, Consul's
	// minimum).
	TTL time.Duration
}

// Members is a membership kept in Consul's KV store: each member acquires
// the key <prefix>/<cluster>/<member id> under a session with the delete
// behaviour and renews it every third of the TTL, so a member killed or
// cut off from Consul leaves the others' membership when Consul
// invalidates its session (the TTL to twice the TTL later), and one that
// closes leaves at once. It fences: a member whose renewals go unanswered
// for two thirds of the TTL stops its servers and joins again as a new
// member.
func Members(o Options) cluster.Members {
	return &members{cfg: icluster.ConsulConfig{Address: o.Address, Token: o.Token, Prefix: o.Prefix, TTL: o.TTL}}
}

type members struct{ cfg icluster.ConsulConfig }

func (m *members) Provider() (pcluster.ClusterProvider, error) {
	return icluster.NewConsulProvider(m.cfg)
}
