package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/certtest"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/cluster/clusterproviders/test"
)

// Members with certificates of the cluster's CA reach each other over
// mutual TLS; one whose certificate another CA signed is in the
// provider's membership but fails every handshake: no member counts it
// (nothing is placed on it, nothing is forwarded to it), and it reaches
// no one.
func TestMutualTLS(t *testing.T) {
	agent := test.NewInMemAgent()
	ours, theirs := certtest.NewCA(t, "cluster CA"), certtest.NewCA(t, "another CA")
	member := func(ca *certtest.CA, name string) *Node {
		cert, key := ca.Issue(t, name)
		mtls, err := LoadMutualTLS(cert, key, ours.File) // every member trusts the cluster's CA
		if err != nil {
			t.Fatal(err)
		}
		return joined(t, Config{Name: "tls", Provider: test.NewTestProvider(agent), Gossip: 50 * time.Millisecond, TLS: mtls,
			Handler: func(ctx context.Context, body []byte) ([]byte, error) { return body, nil }})
	}
	a, b, rogue := member(ours, "a"), member(ours, "b"), member(theirs, "rogue")
	waitFor(t, func() bool {
		return len(a.Members()) == 2 && len(b.Members()) == 2 && len(a.topologyIDs()) == 3 && len(b.topologyIDs()) == 3
	},
		func() string { return fmt.Sprint(a.Members(), b.Members()) })
	for _, pair := range [][2]*Node{{a, b}, {b, a}} {
		got, err := pair[0].Forward(context.Background(), pair[1].Self(), []byte(`"over TLS"`), nil)
		if err != nil || string(got) != `"over TLS"` {
			t.Errorf("%s to %s: %s, %v", pair[0].Self(), pair[1].Self(), got, err)
		}
	}
	for i := range 40 {
		name := fmt.Sprintf("server-%d", i)
		if o := a.Owner(name, ""); o == rogue.Self() {
			t.Errorf("%s placed on the member that failed the handshake", name)
		}
	}
	// Refused at once: the rogue is not a member for a, and a is not one
	// for the rogue (it proves no one).
	for _, pair := range [][2]*Node{{a, rogue}, {rogue, b}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		got, err := pair[0].Forward(ctx, pair[1].Self(), []byte(`"x"`), nil)
		cancel()
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("%s to %s with a certificate of another CA: %s, %v", pair[0].Self(), pair[1].Self(), got, err)
		}
	}
}

// waitFor polls cond until it holds, failing after 10 s with what
// state says.
func waitFor(t *testing.T, cond func() bool, state func() string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not so after 10 s: %s", state())
		}
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
