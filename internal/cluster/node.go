// Package cluster makes several mcpvisor hosts one: each host is a member
// of a protoactor-go cluster (membership from a provider, gossip, remote
// actors over gRPC), every server is a cluster identity of the kind
// ServerKind placed on one member by rendezvous hashing, as protoactor's
// own identity lookup places its virtual actors, and a call to a server
// placed on another member goes to that member in one hop, on the link
// (one gRPC stream) between the two.
//
// The package knows nothing of MCP: it forwards opaque requests to the
// member that owns a name, tells its host where each name is placed when
// the membership changes, and carries each member's published state (the
// host's view of its own servers) to the others by gossip.
//
// What protoactor's cluster does not do well at the version pinned, and
// what this package does about it, is in docs/design.md ("Cluster").
package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/actor"
	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/cluster/identitylookup/disthash"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/mcpvisor/mcpvisor/internal/protolog"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// ServerKind is the cluster kind every member serves: a server's name is
// an identity of this kind.
const ServerKind = "mcpvisor.server"

// endpointWriterQueue is the initial size of the queue of each of
// protoactor's endpoint writers.
const endpointWriterQueue = 1024

// statePrefix begins the gossip keys under which each member publishes
// its states (Publish).
const statePrefix = "mcpvisor."

// Config is a member's configuration.
type Config struct {
	// Name is the cluster's: members of other clusters are not seen.
	Name string
	// Provider finds the other members (automanaged, etcd, or the
	// in-process test provider).
	Provider pcluster.ClusterProvider
	// Listen is the host:port the member's remote listens on ("" or port
	// 0: a free port on 127.0.0.1); Advertise, when set, the address the
	// others reach it at.
	Listen, Advertise string
	// Labels are what this member offers: a name with a label is placed
	// only on the members that have it (Owner).
	Labels []string
	// Handler answers the requests forwarded to this member.
	Handler Handler
	// OnPlacement is called, from one goroutine, after every change of the
	// membership with the members now in it; Owner answers by it.
	OnPlacement func()
	// OnState is called, from one goroutine, when a member's published
	// state under key changes (its address, the key and the state; key ""
	// and state nil when it left).
	OnState func(member, key string, state []byte)
	// OnTell receives what another member sends this one with Tell, on
	// the goroutine reading the link from it, in order: it must not block.
	OnTell func(body []byte)
	// OnLost is called, from its own goroutine, when the provider no longer
	// holds this member (an etcd lease that lapsed): the others no longer
	// count it, and protoactor will not take it back under its id. The
	// member should stop what it runs and join again as a new Node.
	OnLost func()
	Logger *slog.Logger
	// TLS secures every connection between members both ways (gossip and
	// forwarded requests): only members with a certificate of the
	// cluster's CA are reached or accepted, and what arrives over a
	// connection is held to the name its peer's certificate gives. It is
	// needed unless InsecureLoopback.
	TLS *MutualTLS
	// Member is this member's name: its certificate's CommonName ("":
	// taken from the certificate; another is an error). Without TLS, ""
	// is "member".
	Member string
	// InsecureLoopback lets a member start without TLS when it listens,
	// and is reached, on loopback only: for tests of several members on
	// one machine. Any local process can then speak for a member.
	InsecureLoopback bool
	// Gossip is the interval of gossip rounds (0: protoactor's 300 ms);
	// Heartbeat the time after which a member that stopped gossiping is
	// blocked (0: 20 s).
	Gossip, Heartbeat time.Duration
}

// Node is one member of the cluster.
type Node struct {
	cfg    Config
	system *actor.ActorSystem
	c      *pcluster.Cluster
	self   string // this member's address, once joined (under mu)
	log    *slog.Logger

	mu       sync.Mutex
	members  []*pcluster.Member // the last topology's that placement counts (verified), sorted by address
	addrs    map[string]bool    // the addresses of members
	topology []*pcluster.Member // the last topology's, all of them
	byID     map[string]string  // the last topology's members' addresses, by id: who may send
	proofs   map[string]proof   // by member id: whether a handshake proved its certificate names it (TLS only)
	rdv      *pcluster.Rendezvous
	pending  map[string][]byte // states published before Join returned

	omu      sync.Mutex
	outbound map[uint64]*outbound // this member's forwarded requests in flight, by id
	nextID   atomic.Uint64        // the last request id

	lmu         sync.Mutex
	links       map[string]*link    // the links this member opened, by the other member's address
	dialings    map[string]*dialing // links being opened, by address
	accepted    map[*link]struct{}  // the links the others opened to this member
	linksClosed bool                // the member is leaving: no more links

	handoff chan func()  // to a handler goroutine waiting for its next request (unbuffered)
	idle    atomic.Int32 // handler goroutines waiting on handoff

	published map[string]int64 // bytes published (Publish), by kind of state; under mu

	events    chan func()   // OnPlacement and OnState calls, in order
	started   chan struct{} // closed when Start returns the node: no callback runs before
	subs      []*actorEventSub
	done      chan struct{}
	probes    context.Context // ends with done: the handshakes in flight
	endProbes context.CancelFunc
	stop      sync.Once // Stop's: the host's Close and a lost member's rejoin may both stop it
	wg        sync.WaitGroup
}

var _ member.Node = (*Node)(nil)

// New makes a member of the cluster, which Join makes join it.
func New(cfg Config) (*Node, error) {
	if cfg.Name == "" {
		return nil, errors.New("cluster: a cluster name is needed")
	}
	if cfg.Provider == nil {
		return nil, errors.New("cluster: a member provider is needed")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	host, port, err := listenAddr(cfg.Listen)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.TLS != nil:
		if cfg.Member != "" && cfg.Member != cfg.TLS.Name() {
			return nil, fmt.Errorf("%w: this member is named %q, its certificate %q", ErrMemberName, cfg.Member, cfg.TLS.Name())
		}
		cfg.Member = cfg.TLS.Name()
	case !cfg.InsecureLoopback:
		return nil, ErrNoTLS
	default:
		if err := loopbackOnly(host, cfg.Advertise); err != nil {
			return nil, err
		}
		if cfg.Member == "" {
			cfg.Member = "member"
		}
		if err := checkMemberName(cfg.Member); err != nil {
			return nil, err
		}
		cfg.Logger.Warn("cluster: INSECURE: the members talk without TLS (insecure loopback): any process on this machine can speak for a member and run commands through it; for tests only",
			"cluster", cfg.Name, "listen", net.JoinHostPort(host, strconv.Itoa(port)))
	}
	if port == 0 {
		// protoactor's remote panics when it cannot listen: find the port
		// here so that it is known, and a failure is an error.
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("cluster: listen on %s: %w", host, err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	} else if l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port))); err != nil {
		return nil, fmt.Errorf("cluster: listen on %s: %w", cfg.Listen, err)
	} else {
		l.Close()
	}
	// The other members' streams close when they see this one leave; a
	// second is plenty on any network a cluster should span (patch 11).
	// Each endpoint writer (one per other member) starts its queue at
	// this many slots and doubles it when full: protoactor's default, a
	// million, is 16 MB of pointers per other member that the garbage
	// collector scans at every cycle (three members in one process: about
	// 100 MB, a fifth of the CPU of their calls). Only the gossip goes
	// through them now; the forwarded requests go over the links.
	ropts := []remote.ConfigOption{remote.WithGracefulStopTimeout(time.Second), remote.WithEndpointWriterQueueSize(endpointWriterQueue)}
	if cfg.Advertise != "" {
		ropts = append(ropts, remote.WithAdvertisedHost(cfg.Advertise))
	}
	n := &Node{cfg: cfg, log: cfg.Logger, outbound: map[uint64]*outbound{}, rdv: pcluster.NewRendezvous(),
		byID: map[string]string{}, proofs: map[string]proof{},
		links: map[string]*link{}, dialings: map[string]*dialing{}, accepted: map[*link]struct{}{},
		events: make(chan func(), 256), started: make(chan struct{}), done: make(chan struct{}), handoff: make(chan func())}
	n.probes, n.endProbes = context.WithCancel(context.Background())
	// The links (forwarded requests) are a method of the remote's own
	// gRPC server: one port, one set of certificates.
	sopts := []grpc.ServerOption{grpc.UnknownServiceHandler(n.accept),
		grpc.StaticStreamWindowSize(streamWindow), grpc.StaticConnWindowSize(connWindow)}
	if cfg.TLS != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(cfg.TLS.server)))
		ropts = append(ropts, remote.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(cfg.TLS.client))))
	}
	ropts = append(ropts, remote.WithServerOptions(sopts...), remote.WithGate(gate{n}))
	n.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return protolog.Logger(cfg.Logger) }))
	// The member's id begins with its name, which its certificate gives
	// (MemberName): what arrives over a connection is held to it. The
	// rest stays unique to this join.
	n.system.ID = cfg.Member + memberSep + n.system.ID
	// The kind's actor is never activated: placement is by rendezvous on
	// the members that serve the kind, and calls go over the links.
	// A member label is one more kind the member serves.
	kinds := []*pcluster.Kind{pcluster.NewKind(ServerKind, actor.PropsFromFunc(func(actor.Context) {}))}
	for _, l := range cfg.Labels {
		if l == "" || strings.ContainsAny(l, "/@ ") {
			return nil, fmt.Errorf("cluster: member label %q: want a word without '/', '@' or spaces", l)
		}
		kinds = append(kinds, pcluster.NewKind(labelKind(l), actor.PropsFromFunc(func(actor.Context) {})))
	}
	opts := []pcluster.ConfigOption{pcluster.WithKinds(kinds...), pcluster.WithRequestTimeout(5 * time.Second)}
	if cfg.Heartbeat > 0 {
		opts = append(opts, pcluster.WithHeartbeatExpiration(cfg.Heartbeat))
	}
	if sp, ok := cfg.Provider.(Secured); ok {
		if err := sp.Secure(cfg.TLS); err != nil {
			return nil, err
		}
	}
	if l, ok := cfg.Provider.(Losable); ok && cfg.OnLost != nil {
		l.OnLost(cfg.OnLost)
	}
	ccfg := pcluster.Configure(cfg.Name, cfg.Provider, disthash.New(), remote.Configure(host, port, ropts...), opts...)
	if cfg.Gossip > 0 {
		ccfg.GossipInterval = cfg.Gossip
	}
	// No virtual actor is ever activated here: nothing to wait for when
	// joining, nothing to hand over when leaving (patch 4).
	ccfg.MemberStartDelay, ccfg.OwnershipTransferWait = 0, 0
	n.c = pcluster.New(n.system, ccfg)

	n.wg.Add(1)
	go n.dispatch()
	n.subs = append(n.subs, subscribe(n.system, func(ev any) {
		switch ev := ev.(type) {
		case *pcluster.ClusterTopology:
			n.onTopology(ev)
		case *pcluster.GossipUpdate:
			if key, ok := strings.CutPrefix(ev.Key, statePrefix); ok {
				n.onGossip(key, ev)
			}
		}
	}))
	return n, nil
}

// Join makes the node a member: its remote listens, the provider
// announces it and finds the others (OnPlacement). The callbacks and the
// handler run only from here on, so whoever keeps the node from New has
// it before they do.
func (n *Node) Join() (err error) {
	defer func() {
		if p := recover(); p != nil {
			// The provider failed after the remote and the gossip
			// started (protoactor panics): stop them too.
			n.Stop()
			err = fmt.Errorf("cluster: joining %q: %v", n.cfg.Name, p)
		}
	}()
	n.c.StartMember()
	n.mu.Lock()
	n.self = n.system.Address()
	close(n.started)
	pending := n.pending
	n.pending = nil
	n.mu.Unlock()
	for key, state := range pending {
		n.Publish(key, state)
	}
	return nil
}

// Losable is a provider that can lose its member's registration: the
// node hands it Config.OnLost.
type Losable interface{ OnLost(func()) }

// listenAddr splits Listen, 127.0.0.1:0 when empty.
func listenAddr(s string) (string, int, error) {
	if s == "" {
		return "127.0.0.1", 0, nil
	}
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("cluster: listen address %q: %w", s, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("cluster: listen address %q: bad port", s)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}

// Name is the cluster's.
func (n *Node) Name() string { return n.cfg.Name }

// Self is this member's address, as the others know it.
func (n *Node) Self() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.self
}

// Labels returns each member's labels, by address.
func (n *Node) Labels() map[string][]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string][]string, len(n.members))
	for _, m := range n.members {
		var labels []string
		for _, k := range m.Kinds {
			if l, ok := strings.CutPrefix(k, ServerKind+"@"); ok {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		out[m.Address()] = labels
	}
	return out
}

// Members are the addresses of the members in the last topology, sorted.
func (n *Node) Members() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, len(n.members))
	for i, m := range n.members {
		out[i] = m.Address()
	}
	return out
}

// Owner is the address of the member a name is placed on, among the
// members with label when it is not "" ("" while no such member is
// known).
func (n *Node) Owner(name, label string) string {
	kind := ServerKind
	if label != "" {
		kind = labelKind(label)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rdv.GetByClusterIdentity(&pcluster.ClusterIdentity{Kind: kind, Identity: name})
}

// labelKind is the kind a member with label serves.
func labelKind(label string) string { return ServerKind + "@" + label }

// Publish sets this member's state under key, which the others receive
// by gossip (OnState). Each key is gossiped on its own: a state that does
// not change is not sent again when another does.
// Before Join has returned, the state waits for it (protoactor's gossip
// is not ready before, and its start is not safe to race with).
func (n *Node) Publish(key string, state []byte) {
	n.mu.Lock()
	select {
	case <-n.started:
	default:
		if n.pending == nil {
			n.pending = map[string][]byte{}
		}
		n.pending[key] = state
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	b, _ := json.Marshal(published{From: n.Self(), State: state})
	kind, _, _ := strings.Cut(key, "/")
	n.mu.Lock()
	if n.published == nil {
		n.published = map[string]int64{}
	}
	n.published[kind] += int64(len(b))
	n.mu.Unlock()
	n.c.Gossip.SetState(statePrefix+key, wrapperspb.Bytes(b))
}

// Published is how many bytes this member has published so far, by kind
// of state (a key's part before its first "/"): what gossip sends each
// other member once.
func (n *Node) Published() map[string]int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return maps.Clone(n.published)
}

// published is a member's state as gossiped: with its address, so that a
// member that has not yet seen the sender in its topology (gossip can
// outrun the provider) still knows whose it is.
type published struct {
	From  string `json:"from"`
	State []byte `json:"state"`
}

// Forward sends body to the member at addr's Handler, as it is (the
// handler reads it, and refuses what it cannot), and returns its answer
// (JSON). When ctx ends first the member is told to cancel the request. rev, when
// set, answers what the member's handler tells and asks its Caller while
// the request runs.
func (n *Node) Forward(ctx context.Context, addr string, body []byte, rev *Reverse) ([]byte, error) {
	n.mu.Lock()
	member := n.addrs[addr]
	n.mu.Unlock()
	if !member {
		return nil, fmt.Errorf("%w: %s is not a member of cluster %q", ErrUnreachable, addr, n.cfg.Name)
	}
	l, err := n.linkTo(ctx, addr)
	if err != nil {
		return nil, err
	}
	return n.send(ctx, l, body, 0, rev)
}

// noteBuffer is how many notes of one request wait for its caller.
const noteBuffer = 256

// send forwards body on l, on behalf of the request of l's member named
// by forID when set (Caller.Ask).
func (n *Node) send(ctx context.Context, l *link, body []byte, forID uint64, rev *Reverse) ([]byte, error) {
	id := n.nextID.Add(1)
	var notes chan []byte
	if rev != nil && rev.OnNote != nil {
		notes = make(chan []byte, noteBuffer)
	}
	got := n.expect(l, id, rev, notes)
	defer n.forget(id)
	if err := l.write(&frame{kind: frameRequest, id: id, forID: forID, body: body}); err != nil {
		return nil, fmt.Errorf("%w: the connection to member %s failed: %w", ErrUnreachable, l.addr, err)
	}
	for {
		select {
		case note := <-notes:
			rev.OnNote(note)
		case v := <-got:
			// The link's reader handed over every note sent before the
			// answer before the answer.
			for drained := false; !drained; {
				select {
				case note := <-notes:
					rev.OnNote(note)
				default:
					drained = true
				}
			}
			switch v := v.(type) {
			case frame:
				if v.err != nil {
					return nil, v.err
				}
				return v.body, nil
			case memberLeft:
				return nil, fmt.Errorf("%w: member %s left the cluster with the request in flight", ErrUnreachable, l.addr)
			case connectionLost:
				return nil, fmt.Errorf("%w: the connection to member %s failed with the request in flight", ErrUnreachable, l.addr)
			default:
				return nil, fmt.Errorf("%w: member %s answered %T", ErrUnreachable, l.addr, v)
			}
		case <-ctx.Done():
			_ = l.write(&frame{kind: frameCancel, id: id})
			return nil, ctx.Err()
		case <-n.done:
			return nil, fmt.Errorf("%w: this member left the cluster", ErrUnreachable)
		}
	}
}

// memberLeft is what a forwarded request in flight receives when its
// member leaves the topology; connectionLost, when the connection to it
// could not be made or broke (a member cut off, or one that does not
// accept this one's certificate): protoactor drops what it would have
// sent, so no answer is coming.
type (
	memberLeft     struct{}
	connectionLost struct{}
)

// failOutbound hands why to the requests in flight that fails picks.
func (n *Node) failOutbound(fails func(o *outbound) bool, why any) {
	n.omu.Lock()
	defer n.omu.Unlock()
	for _, o := range n.outbound {
		if fails(o) {
			select {
			case o.c <- why:
			default:
			}
		}
	}
}

// expect notes request id about to be sent on l.
func (n *Node) expect(l *link, id uint64, rev *Reverse, notes chan []byte) chan any {
	c := make(chan any, 1)
	n.omu.Lock()
	n.outbound[id] = &outbound{link: l, c: c, rev: rev, notes: notes}
	n.omu.Unlock()
	return c
}

func (n *Node) forget(id uint64) {
	n.omu.Lock()
	delete(n.outbound, id)
	n.omu.Unlock()
}

// answered hands an answer, or a note, to the request waiting for it, if
// it still is and was sent on l: another member cannot answer it.
func (n *Node) answered(l *link, f frame) {
	n.omu.Lock()
	o, ok := n.outbound[f.id]
	n.omu.Unlock()
	if !ok || o.link != l {
		return
	}
	if f.kind == frameNote {
		if o.notes != nil {
			select {
			case o.notes <- f.body:
			default: // the caller is this far behind: dropped
			}
		}
		return
	}
	select {
	case o.c <- f:
	default:
	}
}

// outbound is a request this member forwarded, waiting for its answer.
type outbound struct {
	link  *link
	c     chan any
	rev   *Reverse
	notes chan []byte // Reverse.OnNote's, in order
}

// Stop leaves the cluster: the others see this member go at once
// (graceful) rather than when its heartbeat expires. It returns when the
// node's goroutines have exited, or after 10 s when the provider does not
// leave. It may be called more than once, concurrently: a later call
// waits for the first.
func (n *Node) Stop() { n.stop.Do(n.leave) }

func (n *Node) leave() {
	n.closeLinks()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer func() { _ = recover() }() // a provider that fails to leave must not take the host down
		n.c.Shutdown(true)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		n.log.Warn("cluster: leaving took more than 10 s; going on")
	}
	n.stopDispatch()
}

func (n *Node) stopDispatch() {
	for _, s := range n.subs {
		s.unsubscribe()
	}
	close(n.done)
	n.endProbes()
	n.wg.Wait()
}

// dispatch runs the callbacks in order, off the actor system's threads.
func (n *Node) dispatch() {
	defer n.wg.Done()
	select {
	case <-n.started:
	case <-n.done:
		return
	}
	for {
		select {
		case f := <-n.events:
			f()
		case <-n.done:
			return
		}
	}
}

func (n *Node) post(f func()) {
	select {
	case n.events <- f:
	case <-n.done:
	}
}

func (n *Node) onTopology(t *pcluster.ClusterTopology) {
	members := slices.Clone(t.Members)
	slices.SortFunc(members, func(a, b *pcluster.Member) int { return cmpString(a.Address(), b.Address()) })
	left := make([]string, 0, len(t.Left))
	for _, m := range t.Left {
		left = append(left, m.Address())
	}
	n.mu.Lock()
	n.topology = members
	clear(n.byID)
	for _, m := range members {
		n.byID[m.Id] = m.Address()
	}
	for id := range n.proofs {
		if _, ok := n.byID[id]; !ok {
			delete(n.proofs, id)
		}
	}
	for _, m := range members {
		if _, ok := n.proofs[m.Id]; !ok && n.cfg.TLS != nil && m.Id != n.system.ID {
			n.proofs[m.Id] = proofPending
			n.wg.Add(1)
			go n.prove(m)
		}
	}
	if n.proving() {
		// Placement waits for the new members' first handshakes, to
		// change once: a member that counted none of the others for a
		// moment would place every server on itself (a member joining
		// counts no one, itself included, until then). Those that left
		// count no more at once.
		n.members = slices.DeleteFunc(slices.Clone(n.topology), func(m *pcluster.Member) bool {
			return !slices.ContainsFunc(n.members, func(o *pcluster.Member) bool { return o.Id == m.Id })
		})
		n.setMembers()
	} else {
		n.placeVerified()
	}
	n.mu.Unlock()
	// The requests in flight to a member that left fail now, not when
	// their deadline passes: whether they ran there is not known.
	n.failOutbound(func(o *outbound) bool { return slices.Contains(left, o.link.addr) }, memberLeft{})
	n.closeLinksTo(left)
	n.post(func() {
		for _, addr := range left {
			if n.cfg.OnState != nil {
				n.cfg.OnState(addr, "", nil)
			}
		}
		if n.cfg.OnPlacement != nil {
			n.cfg.OnPlacement()
		}
	})
}

var protoUnmarshalOptions = proto.UnmarshalOptions{}

func (n *Node) onGossip(key string, u *pcluster.GossipUpdate) {
	if n.cfg.OnState == nil || u.Value == nil {
		return
	}
	var b wrapperspb.BytesValue
	if err := anypb.UnmarshalTo(u.Value, &b, protoUnmarshalOptions); err != nil {
		return
	}
	var p published
	if json.Unmarshal(b.Value, &p) != nil || p.From == "" || p.From == n.Self() {
		return
	}
	// A state is its member's: one that names another member's address
	// is not taken.
	n.mu.Lock()
	addr, ok := n.byID[u.MemberID]
	n.mu.Unlock()
	if !ok || addr != p.From {
		return
	}
	n.post(func() { n.cfg.OnState(p.From, key, p.State) })
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// placeVerified counts, for placement and forwarding, the members of the
// topology that a handshake proved hold the certificate of the name
// their id gives (all of them without TLS), under n.mu: a member that
// is announced (in etcd, at a --peers address) but cannot prove it is
// placed nothing.
func (n *Node) placeVerified() {
	n.members = slices.DeleteFunc(slices.Clone(n.topology), func(m *pcluster.Member) bool {
		return n.cfg.TLS != nil && m.Id != n.system.ID && n.proofs[m.Id] != proven
	})
	n.setMembers()
}

// setMembers places by n.members, and forwards to them; under n.mu.
func (n *Node) setMembers() {
	n.rdv.UpdateMembers(n.members)
	n.addrs = make(map[string]bool, len(n.members))
	for _, m := range n.members {
		n.addrs[m.Address()] = true
	}
}

// proof is where a member's handshake is.
type proof int

const (
	proofPending proof = iota // the first handshake has not ended
	proofFailed               // it failed; another is tried now and then
	proven
)

// proving is whether a member's first handshake has not ended, under n.mu.
func (n *Node) proving() bool {
	for _, p := range n.proofs {
		if p == proofPending {
			return true
		}
	}
	return false
}

// prove makes a TLS handshake with m until one succeeds with the
// certificate of m's name, or m leaves the topology, or the node stops.
// When the first ends, and when one succeeds, placement counts the
// members proven (once no first handshake is under way) and OnPlacement
// is called.
func (n *Node) prove(m *pcluster.Member) {
	defer n.wg.Done()
	wait := 100 * time.Millisecond
	for warned := false; ; {
		err := n.handshake(m)
		n.mu.Lock()
		was, current := n.proofs[m.Id]
		place := false
		if current && (err == nil || was == proofPending) {
			n.proofs[m.Id] = proofFailed
			if err == nil {
				n.proofs[m.Id] = proven
			}
			if !n.proving() {
				n.placeVerified()
				place = true
			}
		}
		n.mu.Unlock()
		if place {
			n.post(func() {
				if n.cfg.OnPlacement != nil {
					n.cfg.OnPlacement()
				}
			})
		}
		if !current || err == nil {
			return
		}
		if !warned {
			warned = true
			n.log.Warn("cluster: a member of the topology failed the TLS handshake; nothing is placed on it", "member", m.Id, "addr", m.Address(), "err", err)
		}
		select {
		case <-time.After(wait):
			wait = min(2*wait, 5*time.Second)
		case <-n.probes.Done():
			return
		}
	}
}

// handshake connects to m over the cluster's TLS and checks that its
// certificate names m's member name.
func (n *Node) handshake(m *pcluster.Member) error {
	cfg := n.cfg.TLS.ClientConfig()
	cfg.NextProtos = []string{"h2"} // the member's gRPC server wants HTTP/2
	ctx, cancel := context.WithTimeout(n.probes, 3*time.Second)
	defer cancel()
	c, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", m.Address())
	if err != nil {
		return err
	}
	defer c.Close()
	cs := c.(*tls.Conn).ConnectionState()
	if got := cs.PeerCertificates[0].Subject.CommonName; got != MemberName(m.Id) {
		return fmt.Errorf("%w: member %s presents the certificate of %q", ErrMemberName, m.Id, got)
	}
	return nil
}

// loopbackOnly refuses listen and advertise hosts that are not loopback:
// without TLS a member is open to whoever reaches it.
func loopbackOnly(listen, advertise string) error {
	hosts := []string{listen}
	if advertise != "" {
		h, _, err := net.SplitHostPort(advertise)
		if err != nil {
			h = advertise
		}
		hosts = append(hosts, h)
	}
	for _, h := range hosts {
		if h == "localhost" {
			continue
		}
		if ip := net.ParseIP(h); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("%w: %q is not a loopback address", ErrNotLoopback, h)
		}
	}
	return nil
}

// gate is what the member's remote accepts from the network: from
// current members only, over a connection whose certificate names the
// member the connection claims to be, and only what the gossip expects
// (no system messages: no remote Stop or PoisonPill). The links, which
// carry the forwarded requests, are held to the same rules by accept.
type gate struct{ n *Node }

func (g gate) Connect(ctx context.Context, systemID string) error {
	return g.n.claims(ctx, systemID)
}

// claims checks that a connection claiming member id is over TLS from a
// peer whose certificate names id's member.
func (n *Node) claims(ctx context.Context, id string) error {
	if n.cfg.TLS == nil {
		return nil
	}
	name, ok := peerName(ctx)
	if !ok {
		return errors.New("cluster: a connection without a certificate")
	}
	if MemberName(id) != name {
		return fmt.Errorf("%w: a peer with the certificate of %q claims member id %q", ErrMemberName, name, id)
	}
	return nil
}

func (g gate) Deliver(ctx context.Context, systemID string, target, sender *actor.PID, message any) error {
	n := g.n
	if systemID == "" {
		return errors.New("cluster: a message on a connection that did not say whose it is")
	}
	if err := n.claims(ctx, systemID); err != nil {
		return err
	}
	n.mu.Lock()
	addr, member := n.byID[systemID]
	n.mu.Unlock()
	if !member {
		return fmt.Errorf("cluster: %s is not a member", systemID)
	}
	if sender != nil && sender.Address != addr {
		return fmt.Errorf("cluster: member %s (%s) sends as %s", systemID, addr, sender.Address)
	}
	switch message.(type) {
	case actor.SystemMessage, actor.AutoReceiveMessage:
		return fmt.Errorf("cluster: a %T from the network", message)
	}
	switch {
	case target.Id == pcluster.DefaultGossipActorName:
		r, ok := message.(*pcluster.GossipRequest)
		if !ok {
			return fmt.Errorf("cluster: a %T for the gossip", message)
		}
		if r.FromMemberId != systemID {
			return fmt.Errorf("cluster: member %s gossips as %s", systemID, r.FromMemberId)
		}
	case strings.HasPrefix(target.Id, "future$"):
		// An answer to a request of this member's (gossip's).
	default:
		return fmt.Errorf("cluster: a message for %q", target.Id)
	}
	return nil
}
