package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/certtest"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/cluster/clusterproviders/test"
)

// Members with certificates of the cluster's CA reach each other over
// mutual TLS; one whose certificate another CA signed is a member of the
// membership but reaches no one, and no one reaches it.
func TestMutualTLS(t *testing.T) {
	agent := test.NewInMemAgent()
	ours, theirs := certtest.NewCA(t, "cluster CA"), certtest.NewCA(t, "another CA")
	member := func(ca *certtest.CA, name string) *Node {
		cert, key := ca.Issue(t, name)
		mtls, err := LoadMutualTLS(cert, key, ours.File) // every member trusts the cluster's CA
		if err != nil {
			t.Fatal(err)
		}
		n, err := New(Config{Name: "tls", Provider: test.NewTestProvider(agent), Gossip: 50 * time.Millisecond, TLS: mtls,
			Handler: func(ctx context.Context, body []byte) ([]byte, error) { return body, nil }})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Join(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Stop)
		return n
	}
	a, b, rogue := member(ours, "a"), member(ours, "b"), member(theirs, "rogue")
	deadline := time.Now().Add(10 * time.Second)
	for len(a.Members()) != 3 || len(b.Members()) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("members: %v, %v", a.Members(), b.Members())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pair := range [][2]*Node{{a, b}, {b, a}} {
		got, err := pair[0].Forward(context.Background(), pair[1].Self(), []byte(`"over TLS"`), nil)
		if err != nil || string(got) != `"over TLS"` {
			t.Errorf("%s to %s: %s, %v", pair[0].Self(), pair[1].Self(), got, err)
		}
	}
	// The connection fails (protoactor tries five times, two seconds
	// apart), and so does the request: it does not wait for its deadline.
	for _, pair := range [][2]*Node{{a, rogue}, {rogue, b}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		start := time.Now()
		got, err := pair[0].Forward(ctx, pair[1].Self(), []byte(`"x"`), nil)
		cancel()
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("%s to %s with a certificate of another CA: %s, %v", pair[0].Self(), pair[1].Self(), got, err)
		}
		t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
}

// A member's certificate, key or CA that cannot be read is a clear error.
func TestMutualTLSBadFiles(t *testing.T) {
	ca := certtest.NewCA(t, "cluster CA")
	cert, key := ca.Issue(t, "a")
	if _, err := LoadMutualTLS(cert, "/nonexistent/key.pem", ca.File); err == nil {
		t.Error("a missing key loaded")
	}
	if _, err := LoadMutualTLS(cert, key, key); err == nil {
		t.Error("a key as the CA loaded")
	}
}
