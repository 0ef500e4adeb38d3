package mcpvisor

import (
	"time"

	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/cluster/clusterproviders/test"

	"github.com/mcpvisor/mcpvisor/internal/cluster"
)

// ClusterMembers is how a cluster's members find each other.
type ClusterMembers interface {
	provider() (pcluster.ClusterProvider, error)
}

// InProcessMembers is a membership of the hosts of this process that
// share it: for tests, and for an embedder that runs several hosts in one
// process. A member that closes leaves at once.
func InProcessMembers() ClusterMembers { return &inProcess{agent: test.NewInMemAgent()} }

type inProcess struct{ agent *test.InMemAgent }

func (m *inProcess) provider() (pcluster.ClusterProvider, error) {
	return test.NewTestProvider(m.agent, test.WithTestProviderRefreshTtl(100*time.Millisecond)), nil
}

// EtcdMembers is a membership kept in etcd: each member holds the key
// <prefix>/<cluster>/<member id> under a lease it renews (ttl, 3 s when
// 0), so a member killed or cut off from etcd leaves the others'
// membership within ttl, and one that closes leaves at once. prefix ""
// is "/mcpvisor".
func EtcdMembers(endpoints []string, prefix string, ttl time.Duration) ClusterMembers {
	return &etcdMembers{cfg: cluster.EtcdConfig{Endpoints: endpoints, Prefix: prefix, TTL: ttl}}
}

type etcdMembers struct{ cfg cluster.EtcdConfig }

// AutomanagedMembers is a membership with no store: this member serves
// what it is at listen (GET /_member) and asks every one of peers (the
// members' listen addresses) every half second; the members are those
// that answer. It has no authority: a member cut off from the others
// places their servers on itself until the network heals, and the two
// sides then stay apart until one side's members restart. For one machine
// or a test; EtcdMembers fences and rejoins.
func AutomanagedMembers(listen string, peers []string) ClusterMembers {
	return &automanagedMembers{cfg: cluster.AutomanagedConfig{Listen: listen, Peers: peers}}
}

type automanagedMembers struct{ cfg cluster.AutomanagedConfig }

func (m *automanagedMembers) provider() (pcluster.ClusterProvider, error) {
	return cluster.NewAutomanagedProvider(m.cfg)
}

func (m *etcdMembers) provider() (pcluster.ClusterProvider, error) {
	return cluster.NewEtcdProvider(m.cfg)
}

// ConsulMembers is a membership kept in Consul's KV store: each member
// acquires the key <prefix>/<cluster>/<member id> under a session with the
// delete behaviour and renews it every third of ttl (0: 10 s, Consul's
// minimum), so a member killed or cut off from Consul leaves the others'
// membership when Consul invalidates its session (ttl to twice ttl
// later), and one that closes leaves at once. Like EtcdMembers it fences:
// a member whose renewals go unanswered for two thirds of ttl stops its
// servers and joins again as a new member. address "" is the local agent
// (http://127.0.0.1:8500); token, when set, is its ACL token; prefix ""
// is "mcpvisor".
func ConsulMembers(address, token, prefix string, ttl time.Duration) ClusterMembers {
	return &consulMembers{cfg: cluster.ConsulConfig{Address: address, Token: token, Prefix: prefix, TTL: ttl}}
}

type consulMembers struct{ cfg cluster.ConsulConfig }

func (m *consulMembers) provider() (pcluster.ClusterProvider, error) {
	return cluster.NewConsulProvider(m.cfg)
}

// KubernetesConfig is where a Kubernetes membership keeps its members.
// The zero value is a pod's in-cluster configuration.
type KubernetesConfig struct {
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

// KubernetesMembers is a membership kept as Lease objects
// (coordination.k8s.io/v1) in a namespace, one per member, labelled
// mcpvisor.dev/cluster=<name>: each member renews its own every third of
// the TTL, counts the others alive while it sees theirs renewed (by its own
// clock), and deletes the Lease of one it has seen unrenewed for the TTL.
// Like EtcdMembers it fences: a member whose renewals go unanswered for two
// thirds of the TTL stops its servers and joins again as a new member,
// before the others can have dropped it. The service account needs get,
// list, create, update and delete on leases in the namespace.
func KubernetesMembers(cfg KubernetesConfig) ClusterMembers {
	return &kubernetesMembers{cfg: cluster.KubernetesConfig{APIServer: cfg.APIServer, Namespace: cfg.Namespace,
		TokenFile: cfg.TokenFile, CAFile: cfg.CAFile, TTL: cfg.TTL}}
}

type kubernetesMembers struct{ cfg cluster.KubernetesConfig }

func (m *kubernetesMembers) provider() (pcluster.ClusterProvider, error) {
	return cluster.NewKubernetesProvider(m.cfg)
}
