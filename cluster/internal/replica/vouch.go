package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/internal/secrets"
)

// A registry change a member learns by gossip or push is a notice: the
// member asks for the change itself (opVouch) the member that made it,
// else, once that one is gone, any other that took it, and applies what
// that member answers. The answer carries the values of the
// registration's references to the secret store, which gossip never
// does; it crosses on the member transport (mutual TLS), from a member to
// a member. A change no member holds (forged, under a made-up member or
// stamp) is never applied, nor published again.

// opVouch asks a member for a registry change it holds: vouchQuery →
// vouched.
const opVouch = "vouch"

// vouchTimeout bounds each member's answer.
const vouchTimeout = 5 * time.Second

// vouchQuery names one registry change: a server's, by its stamp.
type vouchQuery struct {
	Server string `json:"server"`
	stamp
}

// vouched is a registry change as a member that holds it answers: the
// entry, and the values of its references to the secret store, by name.
type vouched struct {
	Entry   registryEntry     `json:"entry"`
	Secrets map[string]string `json:"secrets,omitempty"`
}

// errRefused marks a member's answer that it holds no such change, as
// against no answer: a change some member refused is not asked again.
var errRefused = errors.New("refused")

func forwardedVouch(name string, params json.RawMessage) []byte {
	f := forwarded{Op: opVouch, Server: name, Params: params}
	return f.encode()
}

// vouchRetries bound how often a change no member answered for (each
// unreachable, or out of time) is asked again, a second apart and then
// twice as long each time, in case its maker was only out of reach.
const vouchRetries = 4

// retryVouch merges e again later, when no member refused it and it was
// asked fewer than vouchRetries times.
func (r *Replica) retryVouch(name string, e registryEntry, err error) {
	if errors.Is(err, errRefused) {
		return
	}
	key := vouchQuery{Server: name, stamp: e.stamp}
	r.mu.Lock()
	n := r.retries[key]
	if n >= vouchRetries {
		delete(r.retries, key)
		r.mu.Unlock()
		return
	}
	r.retries[key] = n + 1
	r.mu.Unlock()
	r.spawn(func() {
		select {
		case <-time.After(time.Second << n):
		case <-r.bg.Done():
			return
		}
		select {
		case r.merges <- sharedView{Registry: map[string]registryEntry{name: e}}:
		case <-r.bg.Done():
		}
	})
}

// vouch asks the members, the one that made e first, for the change e
// stands for, and returns the first answer that holds it.
func (r *Replica) vouch(ctx context.Context, name string, e registryEntry) (vouched, error) {
	n := r.n()
	self := n.Self()
	members := n.Members()
	var ask []string
	if e.By != self && slices.Contains(members, e.By) {
		ask = append(ask, e.By)
	}
	for _, m := range members {
		if m != self && m != e.By {
			ask = append(ask, m)
		}
	}
	params, err := json.Marshal(vouchQuery{Server: name, stamp: e.stamp})
	if err != nil {
		return vouched{}, err
	}
	var errs []error
	for _, m := range ask {
		actx, cancel := context.WithTimeout(ctx, vouchTimeout)
		raw, err := r.n().Forward(actx, m, forwardedVouch(name, params), nil)
		cancel()
		if err != nil {
			if !errors.Is(err, member.ErrUnreachable) && !errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w: %s: %w", errRefused, m, err)
			}
			errs = append(errs, err)
			continue
		}
		var v vouched
		if err := json.Unmarshal(raw, &v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m, err))
			continue
		}
		if v.Entry.stamp != e.stamp {
			errs = append(errs, fmt.Errorf("%w: %s answered another change", errRefused, m))
			continue
		}
		return v, nil
	}
	if len(ask) == 0 {
		return vouched{}, errors.New("no other member to ask")
	}
	return vouched{}, errors.Join(errs...)
}

// serveVouch answers a member's opVouch: the change, if this member holds
// it, with its secrets' values. Only a member of the cluster is answered.
func (r *Replica) serveVouch(ctx context.Context, params json.RawMessage) ([]byte, error) {
	var q vouchQuery
	if err := json.Unmarshal(params, &q); err != nil {
		return nil, err
	}
	caller := member.CallerOf(ctx)
	if caller == nil || !slices.Contains(r.n().Members(), caller.Addr()) {
		return nil, errors.New("cluster: a registry change is told to members only")
	}
	r.mu.Lock()
	e, ok := r.registry[q.Server]
	r.mu.Unlock()
	if !ok || e.stamp != q.stamp {
		return nil, fmt.Errorf("cluster: %s holds no change %d by %s to server %q", r.n().Self(), q.Version, q.By, q.Server)
	}
	v := vouched{Entry: e}
	if !e.Deleted && e.Config != nil {
		var err error
		if v.Secrets, err = r.host.ServerSecrets(q.Server, secretRefs(e.Config)); err != nil {
			return nil, err
		}
	}
	return json.Marshal(v)
}

// secretRef is a reference to the secret store in a sealed entry.
var secretRef = regexp.MustCompile(`\$\{(` + secrets.Prefix + `[A-Za-z0-9_]+)\}`)

// secretRefs are the names of the references to the secret store that a
// sealed entry holds.
func secretRefs(sealed []byte) []string {
	var names []string
	for _, m := range secretRef.FindAllSubmatch(sealed, -1) {
		if name := string(m[1]); !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}
