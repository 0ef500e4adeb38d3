package cluster

import (
	"errors"
	"log/slog"
	"time"

	"github.com/mcpvisor/mcpvisor/cluster/internal/replica"
	"github.com/mcpvisor/mcpvisor/internal/cluster"
	"github.com/mcpvisor/mcpvisor/internal/member"
	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
)

// Options make a Host one member of a cluster of hosts that behave as one
// (mcpvisor.Options.Cluster). Every member runs the same configuration;
// each server runs on one member at a time, placed by rendezvous hashing
// of its name over the members (protoactor-go's cluster placement), and a
// call on any member reaches it: at once when it runs there, in one hop to
// its member when not. When a member leaves or dies its servers are placed
// on the others and started there. docs/design.md ("Cluster") says what
// is and is not shared, and what a client sees while members come and go.
//
// The host copies Options when it opens.
type Options struct {
	// Name is the cluster's; hosts of other clusters are not members.
	Name string
	// Members finds the other members: InProcess for hosts in one
	// process, Automanaged, or a provider's (packages etcd, consul,
	// kubernetes).
	Members Members
	// Listen is the host:port this member's cluster endpoint (protoactor's
	// remote, gRPC) listens on ("": a free port on 127.0.0.1); Advertise
	// the address the others reach it at, when not that.
	Listen, Advertise string
	// Labels are what this member offers: a server whose config names a
	// node (ServerConfig.Node) runs only on the members labelled so, and
	// nowhere while none is a member.
	Labels []string
	// Gossip is the interval of the members' gossip rounds, which carry
	// each member's servers' status and tools to the others (0: 300 ms).
	Gossip time.Duration
	// TLS secures the connections between members both ways (gossip,
	// forwarded calls, the automanaged membership's endpoint): each
	// member presents a certificate the cluster's CA signed and accepts
	// only peers that do. It is required: without it the host does not
	// open (ErrNoTLS), unless InsecureLoopback.
	TLS *TLS
	// Member is this member's name, which must be its certificate's
	// CommonName ("": the certificate's). A member whose certificate
	// names another does not start (ErrMemberName).
	Member string
	// InsecureLoopback lets the members talk without TLS, for tests of
	// several members on one machine: only when Listen and Advertise are
	// loopback addresses (ErrNotLoopback), with a warning in the log.
	// Then any process on the machine can speak for a member (run a
	// command through it, read and decide what it holds): never in
	// production. docs/security.md ("Cluster").
	InsecureLoopback bool

	// wrap, when set, stands between the replica and its member: tests
	// read what the member publishes and tells through it.
	wrap func(member.Node) member.Node
}

// The errors of a member that does not start.
var (
	// ErrNoTLS: Options.TLS is not set, nor InsecureLoopback.
	ErrNoTLS = cluster.ErrNoTLS
	// ErrNotLoopback: InsecureLoopback off loopback.
	ErrNotLoopback = cluster.ErrNotLoopback
	// ErrMemberName: Options.Member is not the certificate's name.
	ErrMemberName = cluster.ErrMemberName
)

// TLS is a member's certificate and key and the cluster's CA, PEM files,
// read each time the member joins (so a member that joins again takes a
// renewed certificate). A member's name is its certificate's CommonName
// (letters, digits, '.', '-', '_'): its id in the cluster begins with
// it, and a connection, a message or gossip that claims a member is
// taken only from a peer whose certificate names that member. A peer's
// address is not checked: members are reached at the addresses they
// advertise (pod IPs that change). Give the cluster a CA of its own, and
// each member a certificate of its own name. The certificates need both
// client and server authentication in their extended key usage.
type TLS struct {
	CertFile, KeyFile, CAFile string
}

// Members is how a cluster's members find each other: InProcess,
// Automanaged, etcd.Members, consul.Members, kubernetes.Members.
type Members interface {
	// Provider makes the membership of one member, a new one each time
	// the member joins. It is for this module's packages: its type is
	// internal.
	Provider() (pcluster.ClusterProvider, error)
}

// NewReplica makes the host's member of the cluster, with the
// replication that keeps the hosts one (placement, gossip, the shared
// registry, grants and pins, forwarded calls); the host calls it when it
// opens. It implements mcpvisor.Cluster and is not for other callers.
func (o Options) NewReplica(host member.Host, log *slog.Logger) (member.Replica, error) {
	if o.Members == nil {
		return nil, errors.New("cluster: Options.Members is needed (InProcess, or a provider)")
	}
	return replica.New(host, log, o.newMember)
}

// newMember makes a member with a provider of its own: when the host
// opens, and each time its member joins again after losing its place.
func (o Options) newMember(hooks member.Hooks) (member.Node, error) {
	var mtls *cluster.MutualTLS
	if t := o.TLS; t != nil {
		var err error
		if mtls, err = cluster.LoadMutualTLS(t.CertFile, t.KeyFile, t.CAFile); err != nil {
			return nil, err
		}
	}
	provider, err := o.Members.Provider()
	if err != nil {
		return nil, err
	}
	node, err := cluster.New(cluster.Config{
		Name: o.Name, Provider: provider, Listen: o.Listen, Advertise: o.Advertise, Labels: o.Labels, Gossip: o.Gossip,
		TLS: mtls, Member: o.Member, InsecureLoopback: o.InsecureLoopback,
		Handler: hooks.Handler, OnPlacement: hooks.OnPlacement, OnState: hooks.OnState, OnTell: hooks.OnTell, OnLost: hooks.OnLost, Logger: hooks.Logger,
	})
	if err != nil || o.wrap == nil {
		return node, err
	}
	return o.wrap(node), nil
}
