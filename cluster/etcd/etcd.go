// Package etcd is a cluster membership kept in etcd (cluster.Options.Members).
// Importing it links etcd's client; a program that does not import it
// links none of it.
package etcd

import (
	"time"

	"github.com/mcpvisor/mcpvisor/cluster"
	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
)

// Options are where an etcd membership keeps its members.
type Options struct {
	// Endpoints are the etcd servers' client URLs.
	Endpoints []string
	// Prefix is the key prefix ("": "/mcpvisor").
	Prefix string
	// TTL is each member's lease (0: 3 s).
	TTL time.Duration
}

// Members is a membership kept in etcd: each member holds the key
// <prefix>/<cluster>/<member id> under a lease it renews, so a member
// killed or cut off from etcd leaves the others' membership within the
// TTL, and one that closes leaves at once. It fences: a member whose lease
// lapsed stops its servers and joins again as a new member.
func Members(o Options) cluster.Members {
	return &members{cfg: config{Endpoints: o.Endpoints, Prefix: o.Prefix, TTL: o.TTL}}
}

type members struct{ cfg config }

func (m *members) Provider() (pcluster.ClusterProvider, error) { return newProvider(m.cfg) }
