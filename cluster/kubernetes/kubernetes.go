// Package kubernetes is a cluster membership kept as Kubernetes Lease
// objects (cluster.Options.Members).
package kubernetes

import (
	"time"

	"github.com/mcpvisor/mcpvisor/cluster"
	icluster "github.com/mcpvisor/mcpvisor/internal/cluster"
	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
)

// Options are where a Kubernetes membership keeps its members. The zero
// value is a pod's in-cluster configuration.
type Options struct {
	// APIServer is the API server's URL ("": KUBERNETES_SERVICE_HOST and
	// _PORT, in a pod).
	APIServer string
	// Namespace holds the Leases ("": the pod's own).
	Namespace string
	// TokenFile and CAFile are the service account's token and the API
	// server's CA ("": the ones mounted in a pod). The token is read again
	// at each request, so a projected token that rotates keeps working.
	TokenFile, CAFile string
	// TTL is each member's Lease duration, in whole seconds (0: 3 s).
	TTL time.Duration
}

// Members is a membership kept as Lease objects (coordination.k8s.io/v1)
// in a namespace, one per member, labelled mcpvisor.dev/cluster=<name>:
// each member renews its own every third of the TTL, counts the others
// alive while it sees theirs renewed (by its own clock), and deletes the
// Lease of one it has seen unrenewed for the TTL. It fences: a member
// whose renewals go unanswered for two thirds of the TTL stops its
// servers and joins again as a new member, before the others can have
// dropped it. The service account needs get, list, create, update and
// delete on leases in the namespace.
func Members(o Options) cluster.Members {
	return &members{cfg: icluster.KubernetesConfig{APIServer: o.APIServer, Namespace: o.Namespace,
		TokenFile: o.TokenFile, CAFile: o.CAFile, TTL: o.TTL}}
}

type members struct{ cfg icluster.KubernetesConfig }

func (m *members) Provider() (pcluster.ClusterProvider, error) {
	return icluster.NewKubernetesProvider(m.cfg)
}
