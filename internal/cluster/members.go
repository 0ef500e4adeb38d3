package cluster

import (
	"encoding/json"
	"slices"
	"strings"

	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
)

// MemberEntry is what a membership keeps or serves of a member (etcd and
// Consul keys, Kubernetes Lease annotations, automanaged GET /_member).
type MemberEntry struct {
	ID    string   `json:"id"`
	Host  string   `json:"host"`
	Port  int32    `json:"port"`
	Kinds []string `json:"kinds"`
}

// SelfEntry is the entry of the member c is.
func SelfEntry(c *pcluster.Cluster) (MemberEntry, error) {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return MemberEntry{}, err
	}
	return MemberEntry{ID: c.ActorSystem.ID, Host: host, Port: int32(port), Kinds: c.GetClusterKinds()}, nil
}

func (m MemberEntry) member() *pcluster.Member {
	return &pcluster.Member{Id: m.ID, Host: m.Host, Port: m.Port, Kinds: m.Kinds}
}

// DecodeMember reads an entry; nil when it is not one.
func DecodeMember(b []byte) *pcluster.Member {
	var m MemberEntry
	if json.Unmarshal(b, &m) != nil || m.ID == "" || m.Host == "" || m.Port <= 0 {
		return nil
	}
	return m.member()
}

// ReportMembers hands the membership to c, sorted by id, with self in it:
// a member is one while its provider runs, whatever the store says of it
// for a moment (its key lapsed and is being registered again, a poll that
// did not see it).
func ReportMembers(c *pcluster.Cluster, members []*pcluster.Member, self MemberEntry) {
	if !slices.ContainsFunc(members, func(m *pcluster.Member) bool { return m.Id == self.ID }) {
		members = append(members, self.member())
	}
	slices.SortFunc(members, func(a, b *pcluster.Member) int { return strings.Compare(a.Id, b.Id) })
	c.MemberList.UpdateClusterTopology(members)
}
