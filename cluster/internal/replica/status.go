package replica

import (
	"slices"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/member"
)

// Self is this member's address.
func (r *Replica) Self() string { return r.n().Self() }

// Status is this member's view of its cluster.
func (r *Replica) Status() member.Status {
	n := r.n()
	members := n.Members()
	labels := n.Labels()
	cs := member.Status{Name: n.Name(), Self: n.Self(), Lost: r.lost.Load(), Members: []member.MemberStatus{}, Published: n.Published()}
	for _, b := range cs.Published {
		cs.PublishedBytes += b
	}
	var mine []string
	if r.rt != nil {
		for _, st := range r.rt.Status() {
			if st.Node == "" && st.State != actors.StateElsewhere {
				mine = append(mine, st.Name)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, addr := range members {
		m := member.MemberStatus{Address: addr, Labels: labels[addr], Servers: []string{}}
		if addr == cs.Self {
			m.Self, m.Agreed, m.Servers = true, true, append(m.Servers, mine...)
		} else if v, ok := r.views[addr]; ok {
			m.Agreed = slices.Equal(v.Members, members)
			for _, rs := range v.Servers {
				m.Servers = append(m.Servers, rs.Status.Name)
			}
		}
		slices.Sort(m.Servers)
		cs.Members = append(cs.Members, m)
	}
	return cs
}
