package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/certtest"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/actor"
	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/cluster/clusterproviders/test"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func (n *Node) topologyIDs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Sorted(maps.Keys(n.byID))
}

// records is what a member under attack saw: the logs of its remote's
// gate, and what reached its handler, OnTell and OnState.
type records struct {
	mu                       sync.Mutex
	drops, refusals, failed  int
	linkRefusals             int
	handled, told, forStates []string
	changed                  chan struct{}
}

func (r *records) note(f func()) {
	r.mu.Lock()
	f()
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// wait waits until cond holds of the records, for 10 s.
func (r *records) wait(t *testing.T, what string, cond func(*records) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		ok := cond(r)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("%s: not after 10 s (drops %d, refusals %d)", what, r.drops, r.refusals)
		}
	}
}

type recordHandler struct{ r *records }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, rec slog.Record) error {
	switch {
	case strings.Contains(rec.Message, "EndpointReader dropped a message"):
		h.r.note(func() { h.r.drops++ })
	case strings.Contains(rec.Message, "EndpointReader refused a connection"):
		h.r.note(func() { h.r.refusals++ })
	case strings.Contains(rec.Message, "refused a link"):
		h.r.note(func() { h.r.linkRefusals++ })
	case strings.Contains(rec.Message, "failed the TLS handshake"):
		h.r.note(func() { h.r.failed++ })
	}
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// attacked starts members a and b of the cluster CA over mutual TLS, a
// recording what reaches it.
func attacked(t *testing.T, ca *certtest.CA) (a, b *Node, rec *records) {
	agent := test.NewInMemAgent()
	rec = &records{changed: make(chan struct{}, 1)}
	start := func(name string, r *records) *Node {
		cert, key := ca.Issue(t, name)
		mtls, err := LoadMutualTLS(cert, key, ca.File)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Name: "attacked", Provider: test.NewTestProvider(agent), Gossip: 50 * time.Millisecond, TLS: mtls,
			Handler: func(_ context.Context, body []byte) ([]byte, error) {
				if r != nil {
					r.note(func() { r.handled = append(r.handled, string(body)) })
				}
				return body, nil
			}}
		if r != nil {
			cfg.Logger = slog.New(recordHandler{r})
			cfg.OnTell = func(body []byte) { r.note(func() { r.told = append(r.told, string(body)) }) }
			cfg.OnState = func(member, key string, _ []byte) {
				r.note(func() { r.forStates = append(r.forStates, member+" "+key) })
			}
		}
		return joined(t, cfg)
	}
	a, b = start("a", rec), start("b", nil)
	waitFor(t, func() bool { return len(a.Members()) == 2 && len(b.Members()) == 2 }, func() string { return fmt.Sprint(a.Members(), b.Members()) })
	return a, b, rec
}

// stream opens protoactor's Remoting stream to addr as a process that is
// not a member would: with cert (nil: none) and trusting any server.
func stream(t *testing.T, addr string, cert *tls.Certificate) (remote.Remoting_ReceiveClient, error) {
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the attacker trusts anyone
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return remote.NewRemotingClient(cc).Receive(ctx)
}

// connect sends a ConnectRequest claiming systemID and returns the answer.
func connect(s remote.Remoting_ReceiveClient, systemID string) (*remote.ConnectResponse, error) {
	err := s.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{SystemId: systemID, Address: "127.0.0.1:1"}}}}})
	if err != nil {
		return nil, err
	}
	m, err := s.Recv()
	if err != nil {
		return nil, err
	}
	return m.GetConnectResponse(), nil
}

// nodeActorName is the actor that took forwarded requests before the
// links did: the remote's gate refuses what is sent to it.
const nodeActorName = "mcpvisor-node"

// forgeries are what the attack run sent a member: a forged
// shared-registry entry told to the node actor, a forwarded call, a
// PoisonPill and a Stop for the node actor, and gossip under a made-up
// member id. Each is one envelope of one batch.
func forgeries(t *testing.T, victim *Node, claim string) *remote.MessageBatch {
	node := actor.NewPID(victim.Self(), nodeActorName)
	gossip := actor.NewPID(victim.Self(), pcluster.DefaultGossipActorName)
	entry := []byte(`{"kind":"registry","name":"pwn","config":{"command":"touch","args":["/tmp/pwned"]}}`)
	tell := (&frame{kind: frameTell, body: entry}).encode()
	call := (&frame{kind: frameRequest, id: 1, body: []byte(`{"method":"tools/call","params":{"name":"mcp__s__rm"}}`)}).encode()
	val, _ := anypb.New(wrapperspb.Bytes([]byte(`{"from":"127.0.0.1:1","state":"eyJ4IjoxfQ=="}`)))
	forged := &pcluster.GossipRequest{FromMemberId: claim, State: &pcluster.GossipState{Members: map[string]*pcluster.GossipMemberState{
		"evil~1": {Values: map[string]*pcluster.GossipKeyValue{statePrefix + "registry/pwn": {SequenceNumber: 1, Value: val}}},
	}}}
	var b remote.MessageBatch
	add := func(target *actor.PID, msg proto.Message, sender bool) {
		data, typeName, err := remote.Serialize(msg, 0)
		if err != nil {
			t.Fatal(err)
		}
		b.TypeNames = append(b.TypeNames, typeName)
		b.Targets = append(b.Targets, target)
		env := &remote.MessageEnvelope{TypeId: int32(len(b.TypeNames) - 1), MessageData: data, Target: int32(len(b.Targets) - 1)}
		if sender {
			b.Senders = append(b.Senders, actor.NewPID("127.0.0.1:1", nodeActorName))
			env.Sender = int32(len(b.Senders))
		}
		b.Envelopes = append(b.Envelopes, env)
	}
	add(node, wrapperspb.Bytes(tell), false)
	add(node, wrapperspb.Bytes(call), true)
	add(node, &actor.PoisonPill{}, false)
	add(node, &actor.Stop{}, false)
	add(gossip, forged, true)
	return &b
}

// The attack run, against members over mutual TLS: a process without a
// certificate, with one of another CA, with the cluster CA's for a name
// not in the membership, and with one claiming another member's id, each
// sends a member a forged registry entry, a forwarded call, a PoisonPill
// and forged gossip. None is taken: the handler, OnTell and OnState see
// nothing of it, and the members still forward to each other.
func TestAttackersAreRefused(t *testing.T) {
	ca, other := certtest.NewCA(t, "cluster CA"), certtest.NewCA(t, "another CA")
	a, b, rec := attacked(t, ca)
	load := func(ca *certtest.CA, name string) *tls.Certificate { return issuedCert(t, ca, name) }
	bID := b.system.ID

	t.Run("no certificate", func(t *testing.T) {
		s, err := stream(t, a.Self(), nil)
		if err == nil {
			_, err = connect(s, "mallory~1")
		}
		if err == nil {
			t.Fatal("a stream without a certificate was opened")
		}
	})
	t.Run("another CA", func(t *testing.T) {
		s, err := stream(t, a.Self(), load(other, "mallory"))
		if err == nil {
			_, err = connect(s, "mallory~1")
		}
		if err == nil {
			t.Fatal("a stream with a certificate of another CA was opened")
		}
	})
	t.Run("a name not in the membership", func(t *testing.T) {
		s, err := stream(t, a.Self(), load(ca, "mallory"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := connect(s, "mallory~1"); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		before := rec.drops
		rec.mu.Unlock()
		if err := s.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: forgeries(t, a, "mallory~1")}}); err != nil {
			t.Fatal(err)
		}
		rec.wait(t, "the five forgeries dropped", func(r *records) bool { return r.drops == before+5 })
	})
	t.Run("another member's id", func(t *testing.T) {
		s, err := stream(t, a.Self(), load(ca, "mallory"))
		if err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		before := rec.refusals
		rec.mu.Unlock()
		resp, err := connect(s, bID)
		if err == nil && !resp.Blocked {
			t.Fatalf("a connection claiming %s with the certificate of mallory: %v", bID, resp)
		}
		rec.wait(t, "the connection refused", func(r *records) bool { return r.refusals == before+1 })
	})

	t.Run("a member gossiping for a made-up member", func(t *testing.T) {
		// b's own certificate and id: the state it relays of a member id
		// not in the topology is not merged, its own is.
		s, err := stream(t, a.Self(), load(ca, "b"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := connect(s, bID); err != nil {
			t.Fatal(err)
		}
		mine, _ := anypb.New(wrapperspb.Bytes([]byte(`{"from":"` + b.Self() + `","state":"eyJ4IjoxfQ=="}`)))
		evil, _ := anypb.New(wrapperspb.Bytes([]byte(`{"from":"127.0.0.1:1","state":"eyJ4IjoxfQ=="}`)))
		req := &pcluster.GossipRequest{FromMemberId: bID, State: &pcluster.GossipState{Members: map[string]*pcluster.GossipMemberState{
			"evil~1": {Values: map[string]*pcluster.GossipKeyValue{statePrefix + "registry/pwn": {SequenceNumber: 1 << 40, Value: evil}}},
			bID:      {Values: map[string]*pcluster.GossipKeyValue{statePrefix + "marker": {SequenceNumber: 1 << 40, Value: mine}}},
		}}}
		data, typeName, err := remote.Serialize(req, 0)
		if err != nil {
			t.Fatal(err)
		}
		batch := &remote.MessageBatch{TypeNames: []string{typeName}, Targets: []*actor.PID{actor.NewPID(a.Self(), pcluster.DefaultGossipActorName)},
			Envelopes: []*remote.MessageEnvelope{{MessageData: data}}}
		if err := s.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: batch}}); err != nil {
			t.Fatal(err)
		}
		rec.wait(t, "b's own state merged", func(r *records) bool { return slices.Contains(r.forStates, b.Self()+" marker") })
	})

	rec.mu.Lock()
	if len(rec.handled)+len(rec.told) > 0 || slices.ContainsFunc(rec.forStates, func(s string) bool { return strings.Contains(s, "pwn") }) {
		t.Errorf("a forgery reached the member: handled %q, told %q, states %q", rec.handled, rec.told, rec.forStates)
	}
	rec.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := b.Forward(ctx, a.Self(), []byte(`"still there"`), nil)
	if err != nil || string(got) != `"still there"` {
		t.Errorf("a forwarded request after the attacks: %s, %v", got, err)
	}
	if slices.Contains(a.topologyIDs(), "evil~1") {
		t.Error("the made-up member joined the topology")
	}
}

// Automanaged membership over mutual TLS: a process answering GET
// /_member at a --peers address without a certificate of the cluster's
// CA is never a member; one with a certificate for a name that answers
// another member's id is not either; one with a certificate whose member
// entry points where no member proves that name (the attack run's "draws
// 3 of 4 servers onto itself") is in the membership but fails the
// handshake, and nothing is placed on it.
func TestAutomanagedRefusesFakeMembers(t *testing.T) {
	ca, other := certtest.NewCA(t, "cluster CA"), certtest.NewCA(t, "another CA")
	dead := freeAddrs(t, 1)[0] // where the fake member says its remote is
	host, port, _ := strings.Cut(dead, ":")
	fake := func(ca *certtest.CA, cert, id string) string {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /_member", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, `{"cluster":"auto","id":%q,"host":%q,"port":%s,"kinds":[%q]}`, id, host, port, ServerKind)
		})
		srv := httptest.NewUnstartedServer(mux)
		if ca != nil {
			certFile, keyFile := ca.Issue(t, cert)
			c, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			srv.TLS = &tls.Config{Certificates: []tls.Certificate{c}}
			srv.StartTLS()
		} else {
			srv.Start()
		}
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	fakes := []string{
		fake(nil, "", "plain~1"),            // no TLS at all
		fake(other, "mallory", "mallory~1"), // a certificate of another CA
		fake(ca, "mallory", "a-twin~1"),     // the cluster's, answering another name's id
		fake(ca, "squatter", "squatter~1"),  // the cluster's, pointing at a remote that is not its
	}
	listens := freeAddrs(t, 2)
	peers := append(slices.Clone(listens), fakes...)
	var nodes []*Node
	var recs []*records
	for i, name := range []string{"a", "b"} {
		r := &records{changed: make(chan struct{}, 1)}
		certFile, keyFile := ca.Issue(t, name)
		mtls, err := LoadMutualTLS(certFile, keyFile, ca.File)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewAutomanagedProvider(AutomanagedConfig{Listen: listens[i], Peers: peers})
		if err != nil {
			t.Fatal(err)
		}
		n := joined(t, Config{Name: "auto", Provider: p, TLS: mtls, Gossip: 50 * time.Millisecond, Logger: slog.New(recordHandler{r}),
			Handler: func(_ context.Context, body []byte) ([]byte, error) { return body, nil }})
		nodes, recs = append(nodes, n), append(recs, r)
	}
	for i, n := range nodes {
		// The squatter is in the membership (it has a certificate of the
		// cluster's CA) and its handshake has failed once.
		waitFor(t, func() bool { return len(n.Members()) == 2 && slices.Contains(n.topologyIDs(), "squatter~1") },
			func() string { return fmt.Sprint(n.Members(), n.topologyIDs()) })
		recs[i].wait(t, "the squatter's handshake failed", func(r *records) bool { return r.failed > 0 })
		ids := n.topologyIDs()
		for _, id := range []string{"plain~1", "mallory~1", "a-twin~1"} {
			if slices.Contains(ids, id) {
				t.Errorf("member %d counts %s a member: %v", i, id, ids)
			}
		}
		for s := range 40 {
			if o := n.Owner(fmt.Sprintf("server-%d", s), ""); o == dead {
				t.Errorf("member %d places server-%d on the squatter", i, s)
			}
		}
	}
}

// freeAddrs are n loopback addresses free when asked.
func freeAddrs(t *testing.T, n int) []string {
	var out []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// openLink opens a link to addr as a process that may not be a member
// would: with cert (nil: none), trusting any server, its hello claiming
// id at from; then it sends a tell and a request, as a member would once
// accepted. It returns the first frame answered, or why none was.
func openLink(t *testing.T, addr string, cert *tls.Certificate, id, from string) (frame, error) {
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the attacker trusts anyone
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cc.NewStream(ctx, &linkStream, linkMethod, grpc.CallContentSubtype(linkCodecName))
	if err != nil {
		return frame{}, err
	}
	for _, f := range []frame{
		{kind: frameHello, body: []byte(id + "\n" + from)},
		{kind: frameTell, body: []byte(`{"kind":"registry","name":"pwn"}`)},
		{kind: frameRequest, id: 1, body: []byte(`{"method":"tools/call","params":{"name":"mcp__s__rm"}}`)},
	} {
		if err := s.SendMsg(f.encode()); err != nil {
			break // refused already: RecvMsg says why
		}
	}
	return recvFrame(s)
}

// The links that carry forwarded requests hold to the rules of the
// remote's gate: a process without a certificate of the cluster's CA is
// not served; one with a certificate of a name not in the membership, one
// claiming another member's id, and a member claiming another address
// are refused at their hello; nothing they send reaches the handler or
// OnTell, and the members still forward to each other.
func TestLinkRefusesAttackers(t *testing.T) {
	ca, other := certtest.NewCA(t, "cluster CA"), certtest.NewCA(t, "another CA")
	a, b, rec := attacked(t, ca)
	load := func(ca *certtest.CA, name string) *tls.Certificate { return issuedCert(t, ca, name) }
	bID := b.system.ID
	for _, tc := range []struct {
		name     string
		cert     *tls.Certificate
		id, from string
		atHello  bool // refused at the hello (logged), not at the handshake
	}{
		{"no certificate", nil, "mallory~1", "127.0.0.1:1", false},
		{"another CA", load(other, "mallory"), "mallory~1", "127.0.0.1:1", false},
		{"a name not in the membership", load(ca, "mallory"), "mallory~1", "127.0.0.1:1", true},
		{"another member's id", load(ca, "mallory"), bID, b.Self(), true},
		{"a member at another address", load(ca, "b"), bID, "127.0.0.1:1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec.mu.Lock()
			before := rec.linkRefusals
			rec.mu.Unlock()
			f, err := openLink(t, a.Self(), tc.cert, tc.id, tc.from)
			if err == nil {
				t.Fatalf("the link was opened: %+v", f)
			}
			if tc.atHello {
				if status.Code(err) != codes.PermissionDenied {
					t.Errorf("refused with %v, want PermissionDenied", err)
				}
				rec.wait(t, "the link refused", func(r *records) bool { return r.linkRefusals == before+1 })
			}
		})
	}
	rec.mu.Lock()
	if len(rec.told)+len(rec.handled) > 0 {
		t.Errorf("what the refused links sent reached the member: handled %q, told %q", rec.handled, rec.told)
	}
	rec.mu.Unlock()
	// With b's own certificate, id and address the same frames are taken:
	// what the refusals kept out.
	if f, err := openLink(t, a.Self(), load(ca, "b"), bID, b.Self()); err != nil || f.kind != frameHello {
		t.Errorf("b's own link: %+v, %v", f, err)
	}
	rec.wait(t, "a member's tell and request taken", func(r *records) bool { return len(r.told) == 1 && len(r.handled) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := b.Forward(ctx, a.Self(), []byte(`"still there"`), nil); err != nil || string(got) != `"still there"` {
		t.Errorf("a forward after the attacks: %s, %v", got, err)
	}
}

// issuedCert is a certificate and key of ca's for name, loaded.
func issuedCert(t *testing.T, ca *certtest.CA, name string) *tls.Certificate {
	t.Helper()
	certFile, keyFile := ca.Issue(t, name)
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}
