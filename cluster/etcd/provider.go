package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/cluster"
	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// config is where an etcd membership keeps its members.
type config struct {
	// Endpoints are the etcd servers' client URLs.
	Endpoints []string
	// Prefix is the key prefix ("/mcpvisor" when empty): each member is
	// the key <prefix>/<cluster>/<member id>, held by a lease.
	Prefix string
	// TTL is the lease's: a member that stops renewing it (killed, or cut
	// off from etcd) is gone from the others' membership this long after
	// (0: 3 s).
	TTL    time.Duration
	Logger *slog.Logger
}

// provider is a protoactor cluster provider backed by etcd, written
// for mcpvisor rather than taken from protoactor's: that one reads and
// writes its member map and shutdown flag from several goroutines without
// a lock, registers again under the same member id once its lease lapses
// (an id protoactor has blocked for good by then: the member never
// rejoins after a network blip), and sleeps in its retry loops. Here one
// goroutine owns the membership (a Get, then a Watch from that revision,
// again after any error), another renews the lease; when the lease is
// lost the provider says so (Config.OnLost) and its host joins again as a
// new member. Shutdown revokes the lease, so the others see the member
// leave at once.
type provider struct {
	cfg    config
	client *clientv3.Client

	c      *pcluster.Cluster
	key    string // this member's
	prefix string // the cluster's members
	self   cluster.MemberEntry
	value  []byte // self, as stored
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	lease  clientv3.LeaseID
	lostFn func() // called once the lease is lost (Config.OnLost)
}

func (p *provider) OnLost(f func()) { p.lostFn = f }

// newProvider makes the provider; it connects to etcd when the member
// starts (after protoactor's remote has set gRPC's process-wide logger,
// which must not change while a gRPC client runs).
func newProvider(cfg config) (*provider, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("cluster: etcd: no endpoints")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/mcpvisor"
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &provider{cfg: cfg}, nil
}

func (p *provider) StartMember(c *pcluster.Cluster) error {
	self, err := cluster.SelfEntry(c)
	if err != nil {
		return err
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: p.cfg.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("cluster: etcd %v: %w", p.cfg.Endpoints, err)
	}
	p.client = client
	p.c = c
	p.prefix = strings.TrimSuffix(p.cfg.Prefix, "/") + "/" + c.Config.Name + "/"
	p.key = p.prefix + c.ActorSystem.ID
	p.self = self
	p.value, _ = json.Marshal(self)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	if err := p.register(ctx); err != nil {
		p.cancel()
		p.client.Close()
		return fmt.Errorf("cluster: etcd: registering the member: %w", err)
	}
	members := map[string]*pcluster.Member{}
	rev, err := p.reload(ctx, members)
	if err != nil {
		p.cancel()
		p.client.Close()
		return fmt.Errorf("cluster: etcd: reading the members: %w", err)
	}
	p.wg.Add(2)
	go p.keepAlive()
	go p.watch(rev, members)
	return nil
}

func (p *provider) StartClient(c *pcluster.Cluster) error {
	return errors.New("cluster: etcd: client members are not supported")
}

// Shutdown revokes the member's lease, deleting its key: the others see
// it leave now rather than when the lease would lapse.
func (p *provider) Shutdown(bool) error {
	if p.cancel == nil {
		if p.client != nil {
			return p.client.Close()
		}
		return nil
	}
	p.cancel()
	p.wg.Wait()
	p.mu.Lock()
	lease := p.lease
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var err error
	if lease != 0 {
		_, err = p.client.Revoke(ctx, lease)
	}
	return errors.Join(err, p.client.Close())
}

// register puts this member's key under a new lease.
func (p *provider) register(ctx context.Context) error {
	g, err := p.client.Grant(ctx, int64(max(p.cfg.TTL/time.Second, 1)))
	if err != nil {
		return err
	}
	if _, err := p.client.Put(ctx, p.key, string(p.value), clientv3.WithLease(g.ID)); err != nil {
		return err
	}
	p.mu.Lock()
	p.lease = g.ID
	p.mu.Unlock()
	return nil
}

// keepAlive renews the lease until it is lost: etcd unreachable, or the
// lease expired or revoked. The member counts it lost when no renewal has
// been answered for two thirds of the TTL (two renewals missed: the client
// renews every third), before etcd can expire it, so that it has stopped
// its servers by the time the others, seeing its key expire, start them:
// no server runs on two members at once. The others will drop the member
// anyway, and protoactor will not take it back under its id, so it does
// not register again: it says so (onLost), and its host joins again as a
// new member.
func (p *provider) keepAlive() {
	defer p.wg.Done()
	p.mu.Lock()
	lease := p.lease
	p.mu.Unlock()
	limit := p.cfg.TTL * 2 / 3
	ch, err := p.client.KeepAlive(p.ctx, lease)
	if err == nil {
		last := time.Now()
		tick := time.NewTicker(limit / 8)
		defer tick.Stop()
	renew:
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					break renew
				}
				last = time.Now()
			case now := <-tick.C:
				if now.Sub(last) > limit {
					err = fmt.Errorf("no renewal answered for %v", now.Sub(last).Round(time.Millisecond))
					break renew
				}
			case <-p.ctx.Done():
				return
			}
		}
	}
	if p.ctx.Err() != nil {
		return
	}
	p.cfg.Logger.Warn("cluster: etcd: this member's lease was lost", "key", p.key, "error", err)
	if p.lostFn != nil {
		go p.lostFn()
	}
}

// watch follows the members from rev on: each change is reported; after
// an error (etcd unreachable, the revision compacted) it reads them all
// again and watches from there.
func (p *provider) watch(rev int64, members map[string]*pcluster.Member) {
	defer p.wg.Done()
	for p.ctx.Err() == nil {
		wch := p.client.Watch(clientv3.WithRequireLeader(p.ctx), p.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		for resp := range wch {
			if resp.Err() != nil {
				break
			}
			for _, ev := range resp.Events {
				switch ev.Type {
				case clientv3.EventTypePut:
					if m := cluster.DecodeMember(ev.Kv.Value); m != nil {
						members[string(ev.Kv.Key)] = m
					}
				case clientv3.EventTypeDelete:
					delete(members, string(ev.Kv.Key))
				}
			}
			rev = resp.Header.Revision
			p.report(members)
		}
		if p.ctx.Err() != nil {
			return
		}
		for p.ctx.Err() == nil {
			ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
			r, err := p.reload(ctx, members)
			cancel()
			if err == nil {
				rev = r
				break
			}
			select {
			case <-time.After(time.Second):
			case <-p.ctx.Done():
			}
		}
	}
}

// reload reads every member into members and reports them; it returns
// the revision read.
func (p *provider) reload(ctx context.Context, members map[string]*pcluster.Member) (int64, error) {
	resp, err := p.client.Get(ctx, p.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	clear(members)
	for _, kv := range resp.Kvs {
		if m := cluster.DecodeMember(kv.Value); m != nil {
			members[string(kv.Key)] = m
		}
	}
	p.report(members)
	return resp.Header.Revision, nil
}

// report hands the membership to the cluster.
func (p *provider) report(members map[string]*pcluster.Member) {
	cluster.ReportMembers(p.c, slices.Collect(maps.Values(members)), p.self)
}
