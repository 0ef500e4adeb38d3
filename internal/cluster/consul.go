package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
)

// ConsulConfig is where a Consul membership keeps its members: a key per
// member in Consul's KV store, held by a session.
type ConsulConfig struct {
	// Address is the Consul agent's HTTP API ("": http://127.0.0.1:8500).
	Address string
	// Token is the ACL token, if the agent needs one (X-Consul-Token).
	Token string
	// Prefix is the key prefix ("mcpvisor" when empty): each member is the
	// key <prefix>/<cluster>/<member id>.
	Prefix string
	// TTL is the session's, in whole seconds (0: 10 s, Consul's minimum).
	// Consul invalidates a session it has not seen renewed for the TTL, at
	// the earliest, and up to twice that.
	TTL        time.Duration
	Logger     *slog.Logger
	HTTPClient *http.Client
}

// ConsulProvider is a protoactor cluster provider backed by Consul's KV
// store and sessions, written for mcpvisor rather than taken from
// protoactor's: that one registers a service with a TTL health check and
// follows the catalog's healthy instances, so a member that hangs counts
// as alive until its check lapses, and nothing tells the member itself
// that the others dropped it. Here each member acquires its key under a
// session with the delete behaviour and renews the session every third of
// its TTL; the key goes when the session does (a member killed, or cut
// off from Consul), which the others see by a blocking query. A member
// whose renewals go unanswered for two thirds of the TTL counts itself
// lost (Config.OnLost) before Consul can have invalidated the session, and
// its host joins again as a new member. Shutdown destroys the session: the
// key goes at once.
type ConsulProvider struct {
	cfg ConsulConfig
	api restAPI

	c       *pcluster.Cluster
	prefix  string // the cluster's members, with a trailing slash
	key     string // this member's
	self    MemberEntry
	value   []byte // self, as stored
	session string
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	lostFn  func()
}

func (p *ConsulProvider) OnLost(f func()) { p.lostFn = f }

// consulMinTTL is the shortest session TTL Consul accepts.
const consulMinTTL = 10 * time.Second

// NewConsulProvider makes the provider; it reaches Consul when the member
// starts.
func NewConsulProvider(cfg ConsulConfig) (*ConsulProvider, error) {
	if cfg.Address == "" {
		cfg.Address = "http://127.0.0.1:8500"
	}
	if u, err := url.Parse(cfg.Address); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("cluster: consul: address %q is not an http(s) URL", cfg.Address)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "mcpvisor"
	}
	if cfg.TTL <= 0 {
		cfg.TTL = consulMinTTL
	}
	cfg.TTL = max(cfg.TTL.Round(time.Second), time.Second) // Consul refuses one under its minimum, and says so
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Address = strings.TrimSuffix(cfg.Address, "/")
	api := restAPI{name: "consul", client: cfg.HTTPClient, auth: func(req *http.Request) error {
		if cfg.Token != "" {
			req.Header.Set("X-Consul-Token", cfg.Token)
		}
		return nil
	}}
	if api.client == nil {
		api.client = &http.Client{}
	}
	return &ConsulProvider{cfg: cfg, api: api}, nil
}

func (p *ConsulProvider) StartMember(c *pcluster.Cluster) error {
	self, err := SelfEntry(c)
	if err != nil {
		return err
	}
	p.c, p.self = c, self
	p.prefix = strings.Trim(p.cfg.Prefix, "/") + "/" + url.PathEscape(c.Config.Name) + "/"
	p.key = p.prefix + c.ActorSystem.ID
	p.value, _ = json.Marshal(self)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	if err := p.register(ctx); err != nil {
		p.cancel()
		return fmt.Errorf("cluster: consul: registering the member: %w", err)
	}
	index, err := p.reload(ctx, 0)
	if err != nil {
		p.cancel()
		p.destroy()
		return fmt.Errorf("cluster: consul: reading the members: %w", err)
	}
	p.wg.Add(2)
	go p.renewLoop()
	go p.watch(index)
	return nil
}

func (p *ConsulProvider) StartClient(*pcluster.Cluster) error {
	return errors.New("cluster: consul: client members are not supported")
}

// Shutdown destroys the session, which deletes the member's key: the
// others see it leave at once.
func (p *ConsulProvider) Shutdown(bool) error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	p.wg.Wait()
	return p.destroy()
}

// register makes a session and acquires this member's key with it.
func (p *ConsulProvider) register(ctx context.Context) error {
	var s struct {
		ID string `json:"ID"`
	}
	body := map[string]string{"Name": "mcpvisor " + p.c.Config.Name, "TTL": strconv.Itoa(int(p.cfg.TTL/time.Second)) + "s", "Behavior": "delete", "LockDelay": "0s"}
	if err := p.do(ctx, http.MethodPut, "/v1/session/create", body, &s); err != nil {
		return err
	}
	if s.ID == "" {
		return errors.New("consul answered no session id")
	}
	p.session = s.ID
	var ok bool
	if err := p.do(ctx, http.MethodPut, "/v1/kv/"+p.key+"?acquire="+url.QueryEscape(s.ID), json.RawMessage(p.value), &ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the key %s is held by another session", p.key)
	}
	return nil
}

func (p *ConsulProvider) destroy() error {
	if p.session == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return p.do(ctx, http.MethodPut, "/v1/session/destroy/"+p.session, nil, nil)
}

// renewLoop renews the session until it is lost (renewUntilLost; or
// Consul no longer knows it: invalidated, its key gone), then says so
// (onLost), before Consul can have invalidated it and the others started
// its servers.
func (p *ConsulProvider) renewLoop() {
	defer p.wg.Done()
	renew := func(ctx context.Context) error {
		return p.do(ctx, http.MethodPut, "/v1/session/renew/"+p.session, nil, nil)
	}
	err := renewUntilLost(p.ctx, p.cfg.TTL, renew,
		func(err error) bool { return isStatus(err, http.StatusNotFound) },
		func(err error) {
			p.cfg.Logger.Debug("cluster: consul: renewing the session", "session", p.session, "error", err)
		})
	if err == nil {
		return
	}
	p.cfg.Logger.Warn("cluster: consul: this member's session was lost", "key", p.key, "error", err)
	if p.lostFn != nil {
		go p.lostFn()
	}
}

// watch follows the members by blocking queries from index on; after an
// error it waits a second and reads them again.
func (p *ConsulProvider) watch(index uint64) {
	defer p.wg.Done()
	for p.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(p.ctx, 70*time.Second)
		next, err := p.reload(ctx, index)
		cancel()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			p.cfg.Logger.Debug("cluster: consul: reading the members", "error", err)
			select {
			case <-time.After(time.Second):
			case <-p.ctx.Done():
			}
			index = 0
			continue
		}
		if next < index {
			next = 0 // the index went back (a new leader, a snapshot): start over
		}
		index = next
	}
}

// reload reads the members (waiting, when index is set, until they
// change past it or a minute passes), reports them, and returns the
// index to wait on next.
func (p *ConsulProvider) reload(ctx context.Context, index uint64) (uint64, error) {
	q := "/v1/kv/" + p.prefix + "?recurse=true"
	if index > 0 {
		q += "&index=" + strconv.FormatUint(index, 10) + "&wait=60s"
	}
	var entries []struct {
		Key   string `json:"Key"`
		Value []byte `json:"Value"` // base64 in JSON
	}
	hdr, err := p.api.do(ctx, http.MethodGet, p.cfg.Address+q, nil, &entries)
	if isStatus(err, http.StatusNotFound) {
		err, entries = nil, nil // no member at all (Consul answers 404)
	}
	if err != nil {
		return 0, err
	}
	var members []*pcluster.Member
	for _, e := range entries {
		if m := DecodeMember(e.Value); m != nil {
			members = append(members, m)
		}
	}
	ReportMembers(p.c, members, p.self)
	next, _ := strconv.ParseUint(hdr.Get("X-Consul-Index"), 10, 64)
	return max(next, 1), nil
}

func (p *ConsulProvider) do(ctx context.Context, method, path string, in, out any) error {
	_, err := p.api.do(ctx, method, p.cfg.Address+path, in, out)
	return err
}
