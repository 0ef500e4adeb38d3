package mcpvisor

import "slices"

// ClusterStatus is a member's view of its cluster (Host.Cluster).
type ClusterStatus struct {
	// Name is the cluster's; Self this member's address.
	Name string `json:"name"`
	Self string `json:"self"`
	// Lost: the member lost its place (cut off from its membership's
	// store) and runs nothing until it has joined again.
	Lost bool `json:"lost,omitempty"`
	// Members are the members this one counts, by address.
	Members []ClusterMember `json:"members"`
	// PublishedBytes is how much this member has published by gossip
	// since it last joined: what gossip sends each other member once.
	PublishedBytes int64 `json:"publishedBytes,omitempty"`
}

// ClusterMember is one member as another sees it.
type ClusterMember struct {
	Address string   `json:"address"`
	Self    bool     `json:"self,omitempty"`
	Labels  []string `json:"labels,omitempty"`
	// Servers are those it runs, as it last published them (this
	// member's: as they run now).
	Servers []string `json:"servers"`
	// Agreed: it last placed the servers by the same membership as this
	// member. A server moving between members starts once all have.
	Agreed bool `json:"agreed"`
}

// Cluster returns this member's view of its cluster; false when the host
// is not a member of one.
func (h *Host) Cluster() (ClusterStatus, bool) {
	hc := h.cluster
	if hc == nil {
		return ClusterStatus{}, false
	}
	n := hc.n()
	members := n.Members()
	labels := n.Labels()
	cs := ClusterStatus{Name: n.Name(), Self: n.Self(), Lost: hc.lost.Load(), Members: []ClusterMember{}, PublishedBytes: n.PublishedBytes()}
	var mine []string
	for _, st := range h.rt.Status() {
		if st.Node == "" && st.State != StateElsewhere {
			mine = append(mine, st.Name)
		}
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for _, addr := range members {
		m := ClusterMember{Address: addr, Labels: labels[addr], Servers: []string{}}
		if addr == cs.Self {
			m.Self, m.Agreed, m.Servers = true, true, append(m.Servers, mine...)
		} else if v, ok := hc.views[addr]; ok {
			m.Agreed = slices.Equal(v.Members, members)
			for _, rs := range v.Servers {
				m.Servers = append(m.Servers, rs.Status.Name)
			}
		}
		slices.Sort(m.Servers)
		cs.Members = append(cs.Members, m)
	}
	return cs, true
}
