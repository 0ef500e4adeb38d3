package mcpvisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// A call made under a credential records it on its approval, and only
// another credential (or the embedder, with none) may decide it.
func TestApprovalRaisedByCannotDecide(t *testing.T) {
	h := openHost(t, mcpvisor.Options{AlwaysOn: []string{mcpvisor.ConfigGroup}, ApprovalInbox: true,
		ApprovalDeadline: time.Minute}, mcptest("a"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan *mcpvisor.Result, 1)
	go func() {
		res, _ := h.Session("chat", "").Call(mcpvisor.WithCredential(ctx, "token:asker"), mcpvisor.ToolToggle,
			json.RawMessage(`{"kind":"mcp","id":"a","enabled":false}`))
		done <- res
	}()
	var req mcpvisor.ApprovalRequest
	for {
		changed := h.ApprovalsChanged()
		if l := h.Approvals(); len(l) == 1 {
			req = l[0]
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("no approval pending")
		}
	}
	if req.RaisedBy != "token:asker" {
		t.Errorf("RaisedBy %q, want token:asker", req.RaisedBy)
	}
	if err := h.ResolveApprovalAs("token:asker", req.ID, true, ""); !errors.Is(err, mcpvisor.ErrSelfApproval) {
		t.Fatalf("decided by its own credential: %v, want ErrSelfApproval", err)
	}
	if l := h.Approvals(); len(l) != 1 {
		t.Fatalf("pending after the refusal: %d", len(l))
	}
	if err := h.ResolveApprovalAs("token:person", req.ID, false, "no"); err != nil {
		t.Fatalf("decided by another credential: %v", err)
	}
	select {
	case res := <-done:
		if res == nil || !res.IsError {
			t.Errorf("the denied toggle: %+v", res)
		}
	case <-ctx.Done():
		t.Fatal("the toggle never answered")
	}
}
