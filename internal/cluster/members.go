package cluster

import (
	"encoding/json"
	"slices"
	"strings"

	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
)

// memberEntry is what a membership keeps or serves of a member (etcd and
// Consul keys, Kubernetes Lease annotations, automanaged GET /_member).
type memberEntry struct {
	ID    string   `json:"id"`
	Host  string   `json:"host"`
	Port  int32    `json:"port"`
	Kinds []string `json:"kinds"`
}

// selfEntry is the entry of the member c is.
func selfEntry(c *pcluster.Cluster) (memberEntry, error) {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return memberEntry{}, err
	}
	return memberEntry{ID: c.ActorSystem.ID, Host: host, Port: int32(port), Kinds: c.GetClusterKinds()}, nil
}

func (m memberEntry) member() *pcluster.Member {
	return &pcluster.Member{Id: m.ID, Host: m.Host, Port: m.Port, Kinds: m.Kinds}
}

// decodeMember reads an entry; nil when it is not one.
func decodeMember(b []byte) *pcluster.Member {
	var m memberEntry
	if json.Unmarshal(b, &m) != nil || m.ID == "" || m.Host == "" || m.Port <= 0 {
		return nil
	}
	return m.member()
}

// reportMembers hands the membership to c, sorted by id, with self in it:
// a member is one while its provider runs, whatever the store says of it
// for a moment (its key lapsed and is being registered again, a poll that
// did not see it).
func reportMembers(c *pcluster.Cluster, members []*pcluster.Member, self memberEntry) {
	if !slices.ContainsFunc(members, func(m *pcluster.Member) bool { return m.Id == self.ID }) {
		members = append(members, self.member())
	}
	slices.SortFunc(members, func(a, b *pcluster.Member) int { return strings.Compare(a.Id, b.Id) })
	c.MemberList.UpdateClusterTopology(members)
}
