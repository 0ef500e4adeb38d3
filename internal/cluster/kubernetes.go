package cluster

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
)

// KubernetesConfig is where a Kubernetes membership keeps its members:
// Lease objects (coordination.k8s.io/v1) in a namespace, one per member.
// The zero value is the in-cluster configuration of a pod: the API server
// from KUBERNETES_SERVICE_HOST and _PORT, the service account's token,
// CA and namespace from their mounted files.
type KubernetesConfig struct {
	// APIServer is the API server's URL ("": in-cluster).
	APIServer string
	// Namespace holds the Leases ("": the pod's own).
	Namespace string
	// TokenFile and CAFile are the service account's ("": the mounted
	// ones). The token is read again at every request: projected tokens
	// rotate.
	TokenFile, CAFile string
	// TTL is the Lease's duration (whole seconds, 0: 3 s): a member that
	// stops renewing it is dropped by the others this long after they last
	// saw it renewed.
	TTL    time.Duration
	Logger *slog.Logger
	// HTTPClient, when set, is used as is (its TLS configuration
	// included).
	HTTPClient *http.Client
}

const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount/"

// KubernetesProvider is a protoactor cluster provider backed by Lease
// objects. protoactor's own Kubernetes provider labels pods and watches
// them through client-go: it needs the pod to patch itself, knows a pod
// that hangs as alive until Kubernetes deletes it, and has no lease to
// fence by. Here each member holds a Lease it renews every third of its
// duration, like a Kubernetes leader lock:
//
//   - the others count it alive while they see its renewals, by their own
//     clocks (a Lease they saw unchanged for its duration is expired,
//     whatever its renewTime says: no clock agreement is needed), polling
//     the list every sixth of the duration, and delete it once expired;
//   - a member whose renewals have gone unanswered for two thirds of the
//     duration counts itself lost (Config.OnLost) before the others can
//     have dropped it: its host stops its servers and joins again as a new
//     member, as with etcd;
//   - a member that shuts down deletes its Lease: the others see it leave
//     at the next poll.
type KubernetesProvider struct {
	cfg  KubernetesConfig
	api  restAPI
	base string // …/apis/coordination.k8s.io/v1/namespaces/<ns>/leases

	c        *pcluster.Cluster
	name     string // this member's Lease
	selector string
	member   MemberEntry
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu      sync.Mutex
	version string // the resourceVersion of this member's Lease, last written
	token   string // the token last read
	lostFn  func()
}

func (p *KubernetesProvider) OnLost(f func()) { p.lostFn = f }

// NewKubernetesProvider makes the provider from cfg, reading the
// in-cluster configuration for what cfg leaves out.
func NewKubernetesProvider(cfg KubernetesConfig) (*KubernetesProvider, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = 3 * time.Second
	}
	cfg.TTL = max(cfg.TTL.Round(time.Second), time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.APIServer == "" {
		host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
		if host == "" || port == "" {
			return nil, errors.New("cluster: kubernetes: not in a pod (KUBERNETES_SERVICE_HOST and _PORT unset) and no API server given")
		}
		cfg.APIServer = "https://" + net.JoinHostPort(host, port)
	}
	if cfg.TokenFile == "" {
		cfg.TokenFile = serviceAccountDir + "token"
	}
	if cfg.Namespace == "" {
		b, err := os.ReadFile(serviceAccountDir + "namespace")
		if err != nil {
			return nil, fmt.Errorf("cluster: kubernetes: no namespace given, and the pod's is unreadable: %w", err)
		}
		cfg.Namespace = strings.TrimSpace(string(b))
	}
	p := &KubernetesProvider{cfg: cfg}
	p.api = restAPI{name: "kubernetes API", client: cfg.HTTPClient, auth: func(req *http.Request) error {
		token, err := p.bearer()
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return err
	}}
	if p.api.client == nil {
		caFile := cfg.CAFile
		if caFile == "" {
			caFile = serviceAccountDir + "ca.crt"
		}
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("cluster: kubernetes: the API server's CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cluster: kubernetes: %s holds no PEM certificate", caFile)
		}
		p.api.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	}
	if _, err := p.bearer(); err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.APIServer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("cluster: kubernetes: API server %q is not a URL", cfg.APIServer)
	}
	p.base = strings.TrimSuffix(cfg.APIServer, "/") + "/apis/coordination.k8s.io/v1/namespaces/" + url.PathEscape(cfg.Namespace) + "/leases"
	return p, nil
}

// bearer is the service account's token, read again each time (the last
// read if it cannot be).
func (p *KubernetesProvider) bearer() (string, error) {
	b, err := os.ReadFile(p.cfg.TokenFile)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.token != "" {
			return p.token, nil
		}
		return "", fmt.Errorf("cluster: kubernetes: the service account token: %w", err)
	}
	p.token = strings.TrimSpace(string(b))
	return p.token, nil
}

// lease is the part of a Lease object the provider reads and writes.
type lease struct {
	APIVersion string        `json:"apiVersion,omitempty"`
	Kind       string        `json:"kind,omitempty"`
	Metadata   leaseMetadata `json:"metadata"`
	Spec       leaseSpec     `json:"spec"`
}

type leaseMetadata struct {
	Name            string            `json:"name"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
}

type leaseSpec struct {
	HolderIdentity       string `json:"holderIdentity,omitempty"`
	LeaseDurationSeconds int32  `json:"leaseDurationSeconds,omitempty"`
	RenewTime            string `json:"renewTime,omitempty"` // MicroTime
}

type leaseList struct {
	Items []lease `json:"items"`
}

const (
	labelCluster     = "mcpvisor.dev/cluster"
	annotationMember = "mcpvisor.dev/member"
	microTime        = "2006-01-02T15:04:05.000000Z07:00"
)

// labelValue makes s a valid label value (63 characters of [A-Za-z0-9._-],
// alphanumeric at both ends), a hash standing in for what does not fit.
var invalidLabel = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func labelValue(s string) string {
	v := invalidLabel.ReplaceAllString(s, "-")
	if v != s || len(v) > 63 {
		sum := sha256.Sum256([]byte(s))
		v = strings.Trim(v[:min(len(v), 40)], "-_.") + "-" + hex.EncodeToString(sum[:8])
	}
	return strings.Trim(v, "-_.")
}

func (p *KubernetesProvider) StartMember(c *pcluster.Cluster) error {
	self, err := SelfEntry(c)
	if err != nil {
		return err
	}
	p.c, p.member = c, self
	sum := sha256.Sum256([]byte(c.ActorSystem.ID))
	p.name = "mcpvisor-" + hex.EncodeToString(sum[:12])
	p.selector = labelCluster + "=" + labelValue(c.Config.Name)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	if err := p.create(ctx); err != nil {
		p.cancel()
		return fmt.Errorf("cluster: kubernetes: creating the member's Lease: %w", err)
	}
	seen := map[string]*observed{}
	if err := p.poll(ctx, seen); err != nil {
		p.cancel()
		_ = p.remove(context.Background(), p.name, "")
		return fmt.Errorf("cluster: kubernetes: listing the members' Leases: %w", err)
	}
	p.wg.Add(2)
	go p.renewLoop()
	go p.pollLoop(seen)
	return nil
}

func (p *KubernetesProvider) StartClient(*pcluster.Cluster) error {
	return errors.New("cluster: kubernetes: client members are not supported")
}

// Shutdown deletes the member's Lease: the others see it leave at their
// next poll.
func (p *KubernetesProvider) Shutdown(bool) error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	p.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return p.remove(ctx, p.name, "")
}

func (p *KubernetesProvider) leaseOf(version string) lease {
	m, _ := json.Marshal(p.member)
	return lease{
		APIVersion: "coordination.k8s.io/v1", Kind: "Lease",
		Metadata: leaseMetadata{Name: p.name, ResourceVersion: version,
			Labels:      map[string]string{labelCluster: labelValue(p.c.Config.Name)},
			Annotations: map[string]string{annotationMember: string(m)}},
		Spec: leaseSpec{HolderIdentity: p.member.ID, LeaseDurationSeconds: int32(p.cfg.TTL / time.Second),
			RenewTime: time.Now().UTC().Format(microTime)},
	}
}

func (p *KubernetesProvider) create(ctx context.Context) error {
	var out lease
	if err := p.do(ctx, http.MethodPost, p.base, p.leaseOf(""), &out); err != nil {
		return err
	}
	p.mu.Lock()
	p.version = out.Metadata.ResourceVersion
	p.mu.Unlock()
	return nil
}

// renew writes a new renewTime, on the version last written: a Lease
// changed by anyone else is not overwritten.
func (p *KubernetesProvider) renew(ctx context.Context) error {
	p.mu.Lock()
	version := p.version
	p.mu.Unlock()
	var out lease
	if err := p.do(ctx, http.MethodPut, p.base+"/"+p.name, p.leaseOf(version), &out); err != nil {
		return err
	}
	p.mu.Lock()
	p.version = out.Metadata.ResourceVersion
	p.mu.Unlock()
	return nil
}

// remove deletes a Lease, only at version when given (an expired member's
// that has not been renewed since it was seen).
func (p *KubernetesProvider) remove(ctx context.Context, name, version string) error {
	var body any
	if version != "" {
		body = map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": map[string]string{"resourceVersion": version}}
	}
	err := p.do(ctx, http.MethodDelete, p.base+"/"+name, body, nil)
	if isStatus(err, http.StatusNotFound, http.StatusConflict) {
		return nil
	}
	return err
}

// renewLoop renews the Lease until it is lost (renewUntilLost; or
// deleted, or written by another: not this member's any more), then says
// so (onLost).
func (p *KubernetesProvider) renewLoop() {
	defer p.wg.Done()
	err := renewUntilLost(p.ctx, p.cfg.TTL, p.renew,
		func(err error) bool { return isStatus(err, http.StatusNotFound, http.StatusConflict) },
		func(err error) {
			p.cfg.Logger.Debug("cluster: kubernetes: renewing the Lease", "lease", p.name, "error", err)
		})
	if err == nil {
		return
	}
	p.cfg.Logger.Warn("cluster: kubernetes: this member's Lease was lost", "lease", p.name, "error", err)
	if p.lostFn != nil {
		go p.lostFn()
	}
}

// observed is a member's Lease as this member last saw it change.
type observed struct {
	version string
	at      time.Time // when this member saw it change, by its clock
	ttl     time.Duration
	member  *pcluster.Member
}

// pollLoop lists the Leases every sixth of the duration and reports the
// members alive.
func (p *KubernetesProvider) pollLoop(seen map[string]*observed) {
	defer p.wg.Done()
	tick := time.NewTicker(p.cfg.TTL / 6)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.TTL)
		if err := p.poll(ctx, seen); err != nil && p.ctx.Err() == nil {
			p.cfg.Logger.Debug("cluster: kubernetes: listing the Leases", "error", err)
		}
		cancel()
	}
}

// poll lists the cluster's Leases, notes which changed, deletes those
// expired, and reports the rest.
func (p *KubernetesProvider) poll(ctx context.Context, seen map[string]*observed) error {
	var list leaseList
	if err := p.do(ctx, http.MethodGet, p.base+"?labelSelector="+url.QueryEscape(p.selector), nil, &list); err != nil {
		return err
	}
	now := time.Now()
	present := map[string]bool{}
	for _, l := range list.Items {
		name := l.Metadata.Name
		present[name] = true
		o := seen[name]
		if o == nil || o.version != l.Metadata.ResourceVersion {
			m := DecodeMember([]byte(l.Metadata.Annotations[annotationMember]))
			o = &observed{version: l.Metadata.ResourceVersion, at: now, ttl: time.Duration(l.Spec.LeaseDurationSeconds) * time.Second, member: m}
			seen[name] = o
		}
	}
	var members []*pcluster.Member
	for name, o := range seen {
		switch {
		case !present[name]:
			delete(seen, name)
		case name != p.name && now.Sub(o.at) > o.ttl:
			// Expired by this member's clock: gone. Deleted if nobody
			// renewed it since it was seen.
			if err := p.remove(ctx, name, o.version); err != nil {
				p.cfg.Logger.Debug("cluster: kubernetes: deleting an expired Lease", "lease", name, "error", err)
			}
			delete(seen, name)
		case o.member != nil:
			members = append(members, o.member)
		}
	}
	ReportMembers(p.c, members, p.member)
	return nil
}

// do sends one request with the service account's token.
func (p *KubernetesProvider) do(ctx context.Context, method, u string, in, out any) error {
	_, err := p.api.do(ctx, method, u, in, out)
	return err
}
