package mcpvisor

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/member"
)

// StateElsewhere is a server placed on another member of the cluster
// (cluster mode) whose status that member has not published yet; once it
// has, the server shows that member's state, and ServerStatus.Node names
// the member.
const StateElsewhere = actors.StateElsewhere

// Cluster makes a Host one member of a cluster of hosts that behave as
// one (Options.Cluster): each server runs on one member at a time, and a
// call on any member reaches it. Package cluster implements it
// (cluster.Options, with the memberships it and its subpackages offer); a
// program that does not import that package links none of the cluster
// machinery. docs/design.md ("Cluster") says what is and is not shared.
type Cluster interface {
	// NewReplica makes this host's member of the cluster, with the
	// replication that keeps the members one; it reaches the host through
	// host. The host calls it once, when it opens.
	NewReplica(host member.Host, log *slog.Logger) (member.Replica, error)
}

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
	// Published is the same by kind of state: "servers" (their
	// statuses), "catalog" (their tools, sent when they change) and
	// "shared" (the server registry, grants and tool pins).
	Published map[string]int64 `json:"published,omitempty"`
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
	if h.cluster == nil {
		return ClusterStatus{}, false
	}
	st := h.cluster.Status()
	cs := ClusterStatus{Name: st.Name, Self: st.Self, Lost: st.Lost, Members: []ClusterMember{}, PublishedBytes: st.PublishedBytes, Published: st.Published}
	for _, m := range st.Members {
		cs.Members = append(cs.Members, ClusterMember(m))
	}
	return cs, true
}

// MemberHistory is one cluster member's history records (ClusterHistory).
type MemberHistory struct {
	// Member is the member's address; "" for a host not in a cluster.
	Member  string          `json:"member"`
	Records []HistoryRecord `json:"history"`
	// Error says why the member did not answer; its records are then
	// missing, not empty.
	Error string `json:"error,omitempty"`
}

// ClusterHistory is the history f selects on every member of the cluster:
// each journals the calls that arrive at it and the lifecycle of the
// servers it runs, so a question about the whole cluster ("every call of
// tool X this morning") asks them all, at once. This member's records come
// first, then the others' by address; a member that does not answer within
// 10 s is listed with its error. Outside a cluster it is this host's
// history alone.
func (h *Host) ClusterHistory(ctx context.Context, f HistoryFilter) ([]MemberHistory, error) {
	local := func() ([]HistoryRecord, error) { return h.journal.History(f) }
	return member.Gather(ctx, h.cluster, member.OpHistory, f, local, func(m string, r []HistoryRecord, e string) MemberHistory {
		return MemberHistory{Member: m, Records: r, Error: e}
	})
}

// MemberAccess is which scopes one member's sessions held (ClusterWhoHadAccess).
type MemberAccess struct {
	Member string  `json:"member"`
	Scopes []Scope `json:"scopes"`
	Error  string  `json:"error,omitempty"`
}

// ClusterWhoHadAccess is Journal.WhoHadAccess asked of every member: the
// sessions of each member (grants are each member's own) that held tool's
// group at the instant at. Ordered and bounded as ClusterHistory.
func (h *Host) ClusterWhoHadAccess(ctx context.Context, tool string, at time.Time) ([]MemberAccess, error) {
	local := func() ([]Scope, error) { return h.journal.WhoHadAccess(tool, at) }
	return member.Gather(ctx, h.cluster, member.OpAccess, member.AccessQuery{Tool: tool, At: at}, local, func(m string, s []Scope, e string) MemberAccess {
		return MemberAccess{Member: m, Scopes: s, Error: e}
	})
}

// MemberEvents is one member's journaled events (ClusterEvents).
type MemberEvents struct {
	Member string         `json:"member"`
	Events []JournalEvent `json:"events"`
	Error  string         `json:"error,omitempty"`
}

// ClusterEvents is Journal.Events asked of every member: a server's
// events are journaled by the member that runs it (by each, in turn, if
// it moved), so the cluster's pending events are the union of these.
// Ordered and bounded as ClusterHistory. An event is acknowledged on the
// member that holds it: ClusterAck.
func (h *Host) ClusterEvents(ctx context.Context, f EventFilter) ([]MemberEvents, error) {
	local := func() ([]JournalEvent, error) { return h.journal.Events(f) }
	return member.Gather(ctx, h.cluster, member.OpEvents, f, local, func(m string, e []JournalEvent, err string) MemberEvents {
		return MemberEvents{Member: m, Events: e, Error: err}
	})
}

// ClusterAck acknowledges events of the member at addr that journaled
// them ("" or this member's address: this host's, as Journal.Ack). The ids are that
// member's; an id it never had is ErrUnknownEvent, as on the member
// itself, so an acknowledgement lands once, where the event is.
func (h *Host) ClusterAck(ctx context.Context, addr string, ids ...uint64) error {
	if h.cluster == nil || addr == "" || addr == h.cluster.Self() {
		return h.journal.Ack(ctx, ids...)
	}
	_, err := h.cluster.Ask(ctx, addr, member.OpAck, ids)
	return err
}

// remoteOwner is the member a server runs on when not here ("": here, or
// not in a cluster).
func (h *Host) remoteOwner(server string) string {
	if h.cluster == nil {
		return ""
	}
	return h.cluster.Owner(server)
}

// replicating is the cluster's replica when a change made with ctx is this
// member's own, to replicate; nil outside a cluster, or for a change
// another member made (applied here by clusterHost).
func (h *Host) replicating(ctx context.Context) member.Replica {
	if h.cluster == nil || ctx.Value(fromCluster{}) != nil {
		return nil
	}
	return h.cluster
}

// fromCluster marks a context whose change came from another member: it
// is applied, not replicated as this member's.
type fromCluster struct{}
