package mcpvisor_test

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// A dual-era server runs modern; a legacy client that can be asked is
// served by its legacy incarnation, a process of its own: its questions
// reach that client, its tasks are polled there, and a modern client or a
// legacy one that cannot be asked stays on the modern one.
func TestLegacyClientsUseALegacyIncarnation(t *testing.T) {
	h := modernOpen(t, mcpvisor.Options{Inbox: true}, mcptest("dual", "-dual"))
	st := status(t, h, "dual")
	if st.ProtocolVersion != protocol.ModernVersion {
		t.Fatalf("dual-era server runs %q, want %s", st.ProtocolVersion, protocol.ModernVersion)
	}
	asked := 0
	legacy := mcpvisor.CallOptions{
		LegacyClient: true,
		Elicitation: func(_ context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
			asked++
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: map[string]any{"answer": "from the legacy client"}}, nil
		},
	}
	pid := func(opts mcpvisor.CallOptions) int {
		t.Helper()
		n, err := strconv.Atoi(modernCall(t, h, "mcp__dual__pid", `{}`, opts).Text)
		if err != nil {
			t.Fatalf("pid: %v", err)
		}
		return n
	}
	if got := pid(mcpvisor.CallOptions{}); got != st.PID {
		t.Errorf("a modern client's call ran in pid %d, want the server's %d", got, st.PID)
	}
	if got := pid(mcpvisor.CallOptions{LegacyClient: true}); got != st.PID {
		t.Errorf("a legacy client that cannot be asked ran in pid %d, want the server's %d", got, st.PID)
	}
	twin := pid(legacy)
	if twin == st.PID {
		t.Fatal("a legacy client that can be asked was served by the modern incarnation")
	}
	if again := pid(legacy); again != twin {
		t.Errorf("the second legacy call ran in pid %d, want the legacy incarnation's %d", again, twin)
	}
	if len(h.Status()) != 1 {
		t.Errorf("status lists %d servers, want the one", len(h.Status()))
	}
	if got := status(t, h, "dual").LegacyPID; got != twin {
		t.Errorf("status names legacy pid %d, want %d", got, twin)
	}

	// Its question reaches the legacy client's handler: the request the
	// legacy incarnation sends is attributed to the call that went there.
	res := modernCall(t, h, "mcp__dual__ask", `{}`, legacy)
	if asked != 1 || !strings.Contains(res.Text, "from the legacy client") {
		t.Errorf("ask: handler asked %d times, result %q", asked, res.Text)
	}

	// A task it starts is polled where it runs.
	if res := modernCall(t, h, "mcp__dual__sleep_task", `{"ms":20}`, legacy); res.Text != "slept 20 ms" {
		t.Errorf("sleep_task through the legacy incarnation: %q", res.Text)
	}

	// It stops with its server.
	if err := h.SetEnabled(modernCtx(t), "dual", false); err != nil {
		t.Fatalf("disable: %v", err)
	}
	if err := syscall.Kill(twin, 0); err == nil {
		t.Errorf("the legacy incarnation (pid %d) outlived its server's disable", twin)
	}
	if got := status(t, h, "dual").LegacyPID; got != 0 {
		t.Errorf("status names legacy pid %d once it stopped", got)
	}
}
