// Package cluster makes several mcpvisor hosts one: set
// mcpvisor.Options.Cluster to an Options, and the host is a member of the
// cluster its Members finds. Each server runs on one member at a time and
// a call on any member reaches it; the registry, grants and tool pins
// changed on one member are the same on all (docs/design.md, "Cluster").
//
// A program that does not import this package links none of the cluster
// machinery (protoactor's cluster and remote, gRPC, a store's client).
// The memberships are InProcess and Automanaged here, and one package
// each for those kept in a store: etcd, consul, kubernetes (only a
// program that imports etcd links etcd's client). The Example runs two
// members in one process; across machines:
//
//	h, err := mcpvisor.Open(ctx, mcpvisor.Options{
//		Config: cfg,
//		Cluster: cluster.Options{
//			Name:    "agents",
//			Members: etcd.Members(etcd.Options{Endpoints: []string{"http://etcd:2379"}}),
//			Listen:  "0.0.0.0:7946", Advertise: podIP + ":7946",
//			// Required: this member's certificate (its CommonName is
//			// the member's name) and the cluster's CA.
//			TLS: &cluster.TLS{CertFile: "member.pem", KeyFile: "member-key.pem", CAFile: "cluster-ca.pem"},
//		},
//	})
package cluster
