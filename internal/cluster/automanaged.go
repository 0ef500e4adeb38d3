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
	"net/http"
	"slices"
	"sync"
	"time"

	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
)

// AutomanagedConfig is a membership with no store: every member serves
// what it is on a small HTTP endpoint and asks the others' endpoints.
type AutomanagedConfig struct {
	// Listen is where this member's endpoint listens (host:port).
	Listen string
	// Peers are the endpoints of every member, this one's included or not.
	Peers []string
	// Interval is how often the peers are asked (0: 500 ms), each ask
	// bounded by two intervals; a peer that has not answered for
	// missedPolls intervals is out of the membership until it answers
	// again.
	Interval time.Duration
	Logger   *slog.Logger
}

// AutomanagedProvider is protoactor's automanaged idea, written for
// mcpvisor: that one keeps its state behind package-level mutexes shared
// by every member in the process (one member's poll, holding a lock
// across its sleep, stalls the others'), always listens on 0.0.0.0, and
// pulls in an old web framework for one route. Here each member serves
// GET /_member on Listen and asks every peer once per Interval, in
// parallel, with a timeout of two intervals; the members are those that
// answered, in this cluster.
//
// With the cluster's mutual TLS (the node hands it over: Secure) the
// endpoint is HTTPS, served and asked with the members' certificates both
// ways, and a peer counts only when its certificate names the member id
// it answers: a process at a --peers address without a certificate of
// the cluster's CA is never a member. Without TLS (insecure loopback)
// it listens on loopback only.
//
// It needs no store, and so it has no authority: a member cut off from
// the others counts them gone and places their servers on itself, so
// during a partition a server can run on both sides; and protoactor never
// takes back a member id it dropped, so after the partition heals the two
// sides stay apart until the members of one side restart. For one machine
// or a test; the etcd membership fences and rejoins.
type AutomanagedProvider struct {
	cfg  AutomanagedConfig
	c    *pcluster.Cluster
	self MemberEntry // what GET /_member answers
	name string

	srv    *http.Server
	client *http.Client
	tls    *MutualTLS
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	seen map[string]seenMember // by peer address; poll's alone
}

// seenMember is a peer's last answer and when it came.
type seenMember struct {
	m  *pcluster.Member
	at time.Time
}

// missedPolls is how many intervals a peer may go unanswered before it is
// out of the membership (5 s at the default interval). Slow answers (a
// loaded machine, a TLS handshake at the timeout) must not move its
// servers: each move starts them elsewhere before the member that ran
// them hears it lost them, and protoactor never takes back a member it
// dropped, so a peer dropped for being slow stays apart. The price: a
// member that is gone, even one that left gracefully, has its servers
// moved about 5 s later.
const missedPolls = 10

// NewAutomanagedProvider makes the provider; it listens when the member
// starts.
func NewAutomanagedProvider(cfg AutomanagedConfig) (*AutomanagedProvider, error) {
	if cfg.Listen == "" {
		return nil, errors.New("cluster: automanaged: no listen address for this member's endpoint")
	}
	if len(cfg.Peers) == 0 {
		return nil, errors.New("cluster: automanaged: no peers")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 500 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &AutomanagedProvider{cfg: cfg, client: &http.Client{Timeout: askTimeout(cfg.Interval)}}, nil
}

// memberAnswer is GET /_member's body.
type memberAnswer struct {
	Cluster string `json:"cluster"`
	MemberEntry
}

// Secure serves and asks over mtls (nil: in clear, which only a
// loopback Listen may): the node calls it before the member starts.
func (p *AutomanagedProvider) Secure(mtls *MutualTLS) error {
	if mtls == nil {
		host, _, err := net.SplitHostPort(p.cfg.Listen)
		if err != nil {
			return fmt.Errorf("cluster: automanaged: listen address %q: %w", p.cfg.Listen, err)
		}
		return loopbackOnly(host, "")
	}
	p.tls = mtls
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = mtls.ClientConfig()
	p.client = &http.Client{Timeout: askTimeout(p.cfg.Interval), Transport: t}
	return nil
}

// Secured is a provider that serves or asks over the network on its own
// (automanaged): the node hands it its TLS, or nil, before it starts.
type Secured interface{ Secure(*MutualTLS) error }

func (p *AutomanagedProvider) StartMember(c *pcluster.Cluster) error {
	self, err := SelfEntry(c)
	if err != nil {
		return err
	}
	p.c, p.name = c, c.Config.Name
	p.self = self
	ln, err := net.Listen("tcp", p.cfg.Listen)
	if err != nil {
		return fmt.Errorf("cluster: automanaged: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_member", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(memberAnswer{Cluster: p.name, MemberEntry: p.self})
	})
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	if p.tls != nil {
		ln = tls.NewListener(ln, p.tls.ServerConfig())
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(ln)
	}()
	p.poll() // the first membership before StartMember returns
	go p.loop()
	return nil
}

func (p *AutomanagedProvider) StartClient(*pcluster.Cluster) error {
	return errors.New("cluster: automanaged: client members are not supported")
}

func (p *AutomanagedProvider) Shutdown(bool) error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	p.wg.Wait()
	return err
}

func (p *AutomanagedProvider) loop() {
	defer p.wg.Done()
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.poll()
		case <-p.ctx.Done():
			return
		}
	}
}

// poll asks every peer and reports those that answered within the last
// missedPolls intervals, this member always among them.
func (p *AutomanagedProvider) poll() {
	var mu sync.Mutex
	answered := map[string]*pcluster.Member{}
	var wg sync.WaitGroup
	for _, peer := range p.cfg.Peers {
		wg.Go(func() {
			m, err := p.ask(peer)
			if err != nil || m == nil || m.Id == p.self.ID {
				return
			}
			mu.Lock()
			answered[peer] = m
			mu.Unlock()
		})
	}
	wg.Wait()
	if p.ctx.Err() != nil {
		return
	}
	now := time.Now()
	if p.seen == nil {
		p.seen = map[string]seenMember{}
	}
	for peer, m := range answered {
		p.seen[peer] = seenMember{m: m, at: now}
	}
	var members []*pcluster.Member
	for _, peer := range slices.Sorted(maps.Keys(p.seen)) {
		if s := p.seen[peer]; now.Sub(s.at) <= missedPolls*p.cfg.Interval {
			members = append(members, s.m)
		} else {
			delete(p.seen, peer)
		}
	}
	ReportMembers(p.c, members, p.self)
}

func (p *AutomanagedProvider) ask(peer string) (*pcluster.Member, error) {
	scheme := "http://"
	if p.tls != nil {
		scheme = "https://"
	}
	req, err := http.NewRequestWithContext(p.ctx, http.MethodGet, scheme+peer+"/_member", nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a memberAnswer
	if resp.StatusCode != http.StatusOK || json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<16)).Decode(&a) != nil || a.Cluster != p.name {
		return nil, fmt.Errorf("peer %s: not a member of %q", peer, p.name)
	}
	if p.tls != nil && (resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 || resp.TLS.PeerCertificates[0].Subject.CommonName != MemberName(a.ID)) {
		return nil, fmt.Errorf("peer %s: %w: it answers as member %q", peer, ErrMemberName, a.ID)
	}
	b, _ := json.Marshal(a.MemberEntry)
	return DecodeMember(b), nil
}

// askTimeout bounds one ask of a peer: two intervals, so that an answer
// slowed by load still counts.
func askTimeout(interval time.Duration) time.Duration { return 2 * interval }
