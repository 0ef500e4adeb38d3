// Package replica keeps a host one member of a cluster of hosts that
// behave as one: it places the host's servers over the members, publishes
// their status and catalogs by gossip and shows the others', keeps the
// registry, grants and tool pins changed at run time the same on every
// member, forwards calls and requests to the member a server runs on
// (answering there what the server asks, here), and asks every member the
// cluster-wide journal questions.
//
// It reaches its host only through member.Host and the host's runtime,
// and the host reaches it only through member.Replica; package cluster
// makes it (cluster.Options.NewReplica), over an internal/cluster node.
package replica
