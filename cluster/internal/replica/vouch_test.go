package replica

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/member"
)

// A registry change whose maker did not answer (out of reach for a
// moment) is asked for again, and applied once it answers; one the maker
// refuses is not asked for again.
func TestVouchAsksAgainWhenUnanswered(t *testing.T) {
	entry := registryEntry{Config: json.RawMessage(`{"command":"true"}`), Enabled: false,
		Origin: member.Provenance{By: member.ByOperator}, stamp: stamp{Version: 42, By: "fake:2"}}
	var mu sync.Mutex
	asked := map[string]int{}
	fc := &fakeCluster{others: []string{"fake:2"}, forward: func(addr string, body []byte) ([]byte, error) {
		f, err := decodeForwarded(body)
		if err != nil || f.Op != opVouch {
			return nil, member.ErrUnreachable
		}
		mu.Lock()
		asked[f.Server]++
		n := asked[f.Server]
		mu.Unlock()
		switch {
		case f.Server == "refused":
			return nil, &member.RemoteError{Message: "holds no such change"}
		case n == 1:
			return nil, member.ErrUnreachable
		}
		return json.Marshal(vouched{Entry: entry})
	}}
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Cluster: fc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	fc.mu.Lock()
	onTell := fc.hooks.OnTell
	fc.mu.Unlock()
	push, _ := json.Marshal(tell{Shared: &sharedView{Registry: map[string]registryEntry{"refused": entry, "late": entry}}})
	onTell(push)

	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, ok := findServer(h, "late"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change its maker answered the second time is not applied: %+v", h.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := findServer(h, "refused"); ok {
		t.Error("a change its maker refused is applied")
	}
	mu.Lock()
	defer mu.Unlock()
	if asked["late"] != 2 || asked["refused"] != 1 {
		t.Errorf("asked %v, want late twice and refused once", asked)
	}
}

func findServer(h *mcpvisor.Host, name string) (mcpvisor.ServerStatus, bool) {
	for _, st := range h.Status() {
		if st.Name == name {
			return st, true
		}
	}
	return mcpvisor.ServerStatus{}, false
}
