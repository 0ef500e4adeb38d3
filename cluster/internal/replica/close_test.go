package replica

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/member"
)

// fakeCluster makes a Replica of fakeNodes and keeps the hooks it gave
// the last.
type fakeCluster struct {
	mu      sync.Mutex
	replica *Replica
	hooks   member.Hooks
	nodes   []*fakeNode
	join    chan struct{} // when set, a node made from now on joins once it is closed
	// others are more members, which forward answers for; nil: alone.
	others  []string
	forward func(addr string, body []byte) ([]byte, error)
}

func (c *fakeCluster) NewReplica(h member.Host, log *slog.Logger) (member.Replica, error) {
	r, err := New(h, log, c.newMember)
	c.replica = r
	return r, err
}

func (c *fakeCluster) newMember(h member.Hooks) (member.Node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks = h
	n := &fakeNode{join: c.join, others: c.others, forward: c.forward}
	c.nodes = append(c.nodes, n)
	return n, nil
}

// fakeNode is a member alone in its cluster, or with others that only
// answer forwarded requests.
type fakeNode struct {
	join    chan struct{}
	others  []string
	forward func(addr string, body []byte) ([]byte, error)
	mu      sync.Mutex
	joined  bool
	stopped bool
}

func (n *fakeNode) Join() error {
	if n.join != nil {
		<-n.join
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.joined = true
	return nil
}

func (n *fakeNode) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopped = true
}

func (n *fakeNode) state() (joined, stopped bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.joined, n.stopped
}

func (n *fakeNode) Name() string                { return "fake" }
func (n *fakeNode) Self() string                { return "fake:1" }
func (n *fakeNode) Members() []string           { return append([]string{"fake:1"}, n.others...) }
func (n *fakeNode) Labels() map[string][]string { return nil }
func (n *fakeNode) Owner(string, string) string { return "fake:1" }
func (n *fakeNode) Publish(string, []byte)      {}
func (n *fakeNode) Published() map[string]int64 { return nil }
func (n *fakeNode) Tell(string, []byte)         {}
func (n *fakeNode) Forward(_ context.Context, addr string, body []byte, _ *member.Reverse) ([]byte, error) {
	if n.forward == nil {
		return nil, errors.New("fake: alone")
	}
	return n.forward(addr, body)
}

// A member that lost its place and is joining again when the host closes
// is stopped by Close, which returns only after the rejoin has: no member
// is left joined after Close.
func TestClusterCloseWhileJoiningAgain(t *testing.T) {
	fc := &fakeCluster{}
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Cluster: fc})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	fc.mu.Lock()
	fc.join = release
	onLost := fc.hooks.OnLost
	fc.mu.Unlock()
	onLost()
	// Wait until the rejoin has made its new member and is joining it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		fc.mu.Lock()
		n := len(fc.nodes)
		fc.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the member did not join again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- h.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a member was joining", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for i, n := range fc.nodes {
		if joined, stopped := n.state(); joined && !stopped {
			t.Errorf("member %d is joined after Close", i)
		}
	}
	if fc.replica.spawn(func() {}) {
		t.Error("a cluster goroutine started after Close")
	}
}
