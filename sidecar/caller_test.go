package sidecar_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// personWait is how long the tests' person takes to answer: long beside
// the tool's own time (milliseconds), so a latency that counts it shows.
const personWait = time.Second

// waitElicitations waits, without polling, until h has n pending
// elicitations, and returns them as GET /v1/elicitations lists them.
func waitElicitations(t *testing.T, ctx context.Context, a *api, n int) []sidecar.ElicitationView {
	t.Helper()
	for {
		changed := a.h.ElicitationsChanged()
		var got struct {
			Elicitations []sidecar.ElicitationView `json:"elicitations"`
		}
		a.do("GET", "/v1/elicitations", nil).json(t, &got)
		if len(got.Elicitations) == n {
			return got.Elicitations
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %d elicitations: %v", n, ctx.Err())
		}
	}
}

// historyCall waits for the history record of the call of tool.
func historyCall(t *testing.T, a *api, tool string) mcpvisor.HistoryRecord {
	t.Helper()
	var rec mcpvisor.HistoryRecord
	eventually(t, "the history record of "+tool, func() bool {
		var page struct {
			History []mcpvisor.HistoryRecord `json:"history"`
		}
		a.do("GET", "/v1/history?kind=call&tool="+tool, nil).json(t, &page)
		if len(page.History) == 0 {
			return false
		}
		rec = page.History[len(page.History)-1]
		return true
	})
	return rec
}

// An elicitation names the call it belongs to (tool, call id, session,
// stack frame) in GET /v1/elicitations, and the history keeps that call
// id. The person's time answering is no latency: not in the history's
// duration, the operations figures nor the metrics' latency histograms,
// but kept apart (the history's waitedNs, the person-wait histogram).
func TestElicitationNamesItsCallAndItsWaitIsNoLatency(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ops := sidecar.NewOps(sidecar.OpsOptions{Window: 5 * time.Minute, Step: time.Second})
	metrics := sidecar.NewMetrics(sidecar.MetricsOptions{})
	a := openAPIHost(t, mcpvisor.Options{CallMiddleware: []mcpvisor.CallMiddleware{ops.CallMiddleware, metrics.CallMiddleware}},
		sidecar.Options{Ops: ops, Metrics: metrics.Handler()}, mcptest("t"))
	ops.Watch(a.h)
	t.Cleanup(ops.Close)

	s := a.h.Session("claude-1", "main")
	if err := s.Activate(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]any{"message": "Your name?", "schema": map[string]any{"type": "object",
		"properties": map[string]any{"name": map[string]any{"type": "string"}}}})
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "mcp__t__ask", args)
		done <- err
	}()
	got := waitElicitations(t, ctx, a, 1)[0]
	if got.Server != "t" || got.Tool != "mcp__t__ask" || got.CallID == "" || got.Session != "claude-1" || got.Stack != "main" {
		t.Errorf("the elicitation %+v, want it to name the call: mcp__t__ask of session claude-1/main, with its id", got)
	}

	time.Sleep(personWait) // the person reads and types
	if r := a.do("POST", "/v1/elicitations/"+got.ID, map[string]any{"action": "accept", "content": map[string]any{"name": "ada"}}); r.status != http.StatusNoContent {
		t.Fatalf("accept: %d %s", r.status, r.body)
	}
	if err := <-done; err != nil {
		t.Fatalf("the call: %v", err)
	}

	rec := historyCall(t, a, "mcp__t__ask")
	if rec.CallID != got.CallID {
		t.Errorf("the history's call id %q, the inbox showed %q", rec.CallID, got.CallID)
	}
	if rec.Waited < personWait || rec.Duration >= personWait/2 {
		t.Errorf("history: duration %v, waited %v; want the person's %v in waited only", rec.Duration, rec.Waited, personWait)
	}
	if p99 := opsServer(t, a.ops(t, "?points=false"), "t").Recent.P99; p99 <= 0 || p99 >= (personWait/2).Seconds()*1000 {
		t.Errorf("ops: p99 %v ms, want the tool's own time, not the person's %v", p99, personWait)
	}

	r := a.do("GET", "/metrics", nil)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(r.body)))
	if err != nil {
		t.Fatal(err)
	}
	sum := func(name string) (count uint64, seconds float64) {
		for _, m := range families[name].GetMetric() {
			count += m.GetHistogram().GetSampleCount()
			seconds += m.GetHistogram().GetSampleSum()
		}
		return count, seconds
	}
	if n, sec := sum("mcpvisor_call_duration_seconds"); n != 1 || sec >= (personWait/2).Seconds() {
		t.Errorf("metrics: %d calls taking %v s, want 1 without the person's %v", n, sec, personWait)
	}
	if n, sec := sum("mcpvisor_call_person_wait_seconds"); n != 1 || sec < personWait.Seconds() {
		t.Errorf("metrics: person wait %d observations, %v s; want 1 of at least %v", n, sec, personWait)
	}
}

// A host-tool call's wait for a person's approval is no latency either.
func TestApprovalWaitIsNoLatency(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := openAPIHost(t, mcpvisor.Options{ApprovalInbox: true, AlwaysOn: []string{mcpvisor.ConfigGroup}}, sidecar.Options{})
	args, _ := registerArgs("fresh")
	raw, _ := json.Marshal(args)
	done := make(chan *mcpvisor.Result, 1)
	go func() {
		res, _ := a.h.Session("s", "k").Call(ctx, "register_mcp", raw)
		done <- res
	}()
	pending := waitApprovals(t, ctx, a.h, 1)
	time.Sleep(personWait) // the person reads the command line
	if r := a.do("POST", "/v1/approvals/"+pending[0].ID, map[string]any{"decision": "deny"}); r.status != http.StatusNoContent {
		t.Fatalf("deny: %d %s", r.status, r.body)
	}
	<-done
	rec := historyCall(t, a, "register_mcp")
	if rec.Waited < personWait || rec.Duration >= personWait/2 {
		t.Errorf("history: duration %v, waited %v; want the person's %v in waited only", rec.Duration, rec.Waited, personWait)
	}
}
