package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/hosttest"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

func openMetricsHost(t *testing.T, opts mcpvisor.Options, servers ...mcpvisor.ServerConfig) *mcpvisor.Host {
	t.Helper()
	return hosttest.Open(t, opts, servers...)
}

// metricsScrape fetches m's handler over HTTP, as Prometheus would, and parses the
// text exposition.
func metricsScrape(t *testing.T, m *sidecar.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// metricSample returns the metric of family name whose labels are exactly labels
// ("k=v" pairs).
func metricSample(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	fam, ok := fams[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range fam.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for i, lp := range m.GetLabel() {
			if lp.GetName()+"="+lp.GetValue() != labels[i] {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no sample %s{%s}", name, strings.Join(labels, ","))
	return nil
}

func metricValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := metricSample(t, fams, name, labels...)
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	t.Fatalf("%s is neither gauge nor counter", name)
	return 0
}

func TestMetricsHostState(t *testing.T) {
	alpha := mcpvisor.ServerConfig{Name: "alpha", Type: "stdio", Command: mcptestBin, Args: []string{"-name", "alpha"}, Enabled: true}
	beta := mcpvisor.ServerConfig{Name: "beta", Type: "stdio", Command: mcptestBin, Args: []string{"-name", "beta"}, Enabled: false}
	h := openMetricsHost(t, mcpvisor.Options{Inbox: true}, alpha, beta)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.WaitReady(ctx, "alpha"); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	m := sidecar.NewMetrics(sidecar.MetricsOptions{})
	m.Watch(h)

	// One server event, committed: seen through Subscribe, then acked. The
	// ack is a durable write after the event's, so the writer has counted
	// the event by the time Ack returns.
	subCtx, subCancel := context.WithCancel(ctx)
	defer subCancel()
	events := h.Journal().Subscribe(subCtx, mcpvisor.EventFilter{Server: "alpha", Method: "event/test"})
	if _, err := h.Call(ctx, "mcp__alpha__notify", nil); err != nil {
		t.Fatalf("notify: %v", err)
	}
	var ev mcpvisor.JournalEvent
	select {
	case ev = <-events:
	case <-ctx.Done():
		t.Fatal("event/test never reached the journal")
	}
	subCancel()
	if err := h.Journal().Ack(ctx, ev.Seq); err != nil {
		t.Fatalf("Ack: %v", err)
	}

	// One elicitation waiting in the inbox while we scrape.
	changed := h.ElicitationsChanged()
	askDone := make(chan error, 1)
	go func() {
		_, err := h.Call(ctx, "mcp__alpha__ask", json.RawMessage(`{"message":"metrics?"}`))
		askDone <- err
	}()
	for len(h.Elicitations()) == 0 {
		select {
		case <-changed:
			changed = h.ElicitationsChanged()
		case <-ctx.Done():
			t.Fatal("the elicitation never reached the inbox")
		}
	}

	fams := metricsScrape(t, m)

	states := []mcpvisor.State{
		mcpvisor.StateStarting, mcpvisor.StateInitializing, mcpvisor.StateReady, mcpvisor.StateBackoff,
		mcpvisor.StateStopped, mcpvisor.StateDisabled, mcpvisor.StateFailed, mcpvisor.StateNeedsAuth,
	}
	for _, s := range states {
		want := 0.0
		if s == mcpvisor.StateReady {
			want = 1
		}
		if got := metricValue(t, fams, "mcpvisor_server_state", "server=alpha", "state="+string(s)); got != want {
			t.Errorf("mcpvisor_server_state{alpha,%s} = %v, want %v", s, got, want)
		}
	}
	if got := metricValue(t, fams, "mcpvisor_server_state", "server=beta", "state=disabled"); got != 1 {
		t.Errorf("mcpvisor_server_state{beta,disabled} = %v, want 1", got)
	}
	if n := len(fams["mcpvisor_server_state"].GetMetric()); n != 2*len(states) {
		t.Errorf("%d mcpvisor_server_state series, want %d (every state of 2 servers)", n, 2*len(states))
	}
	if got := metricValue(t, fams, "mcpvisor_server_restarts", "server=alpha"); got != 0 {
		t.Errorf("mcpvisor_server_restarts{alpha} = %v, want 0", got)
	}
	var tools int
	for _, st := range h.Status() {
		if st.Name == "alpha" {
			tools = st.Tools
		}
	}
	if got := metricValue(t, fams, "mcpvisor_server_tools", "server=alpha"); tools == 0 || got != float64(tools) {
		t.Errorf("mcpvisor_server_tools{alpha} = %v, want %d (> 0)", got, tools)
	}
	if got := metricValue(t, fams, "mcpvisor_events_ingested_total"); got < 1 {
		t.Errorf("mcpvisor_events_ingested_total = %v, want >= 1", got)
	}
	if got := metricValue(t, fams, "mcpvisor_events_dropped_total"); got != 0 {
		t.Errorf("mcpvisor_events_dropped_total = %v, want 0", got)
	}
	if got := metricValue(t, fams, "mcpvisor_journal_records_total"); got < 2 {
		t.Errorf("mcpvisor_journal_records_total = %v, want >= 2 (the event and its ack)", got)
	}
	if got := metricValue(t, fams, "mcpvisor_journal_size_bytes", "part=vlog"); got <= 0 {
		t.Errorf("mcpvisor_journal_size_bytes{vlog} = %v, want > 0", got)
	}
	metricValue(t, fams, "mcpvisor_journal_size_bytes", "part=lsm")
	metricValue(t, fams, "mcpvisor_events_pending")
	metricValue(t, fams, "mcpvisor_journal_queued_records")
	if got := metricValue(t, fams, "mcpvisor_pending_calls", "server=alpha"); got != 1 {
		t.Errorf("mcpvisor_pending_calls{alpha} = %v while ask waits, want 1", got)
	}
	if got := metricValue(t, fams, "mcpvisor_elicitations_pending"); got != 1 {
		t.Errorf("mcpvisor_elicitations_pending = %v, want 1", got)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s: runtime and process collectors missing", name)
		}
	}
	for name := range fams {
		if !strings.HasPrefix(name, "mcpvisor_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("metric %s lacks the mcpvisor_ prefix", name)
		}
	}

	if err := h.ResolveElicitation(h.Elicitations()[0].ID, mcpvisor.ElicitDecline, nil); err != nil {
		t.Fatalf("ResolveElicitation: %v", err)
	}
	if err := <-askDone; err != nil {
		t.Fatalf("ask: %v", err)
	}
	if got := metricValue(t, metricsScrape(t, m), "mcpvisor_pending_calls", "server=alpha"); got != 0 {
		t.Errorf("mcpvisor_pending_calls{alpha} = %v after the answer, want 0", got)
	}
	if got := metricValue(t, metricsScrape(t, m), "mcpvisor_elicitations_pending"); got != 0 {
		t.Errorf("mcpvisor_elicitations_pending = %v after the answer, want 0", got)
	}
}

func TestMetricsObserveCall(t *testing.T) {
	h := openMetricsHost(t, mcpvisor.Options{})
	m := sidecar.NewMetrics(sidecar.MetricsOptions{})
	m.Watch(h)
	// A second Metrics on the same host registers nothing globally, so it
	// neither panics nor shares counts.
	other := sidecar.NewMetrics(sidecar.MetricsOptions{})
	other.Watch(h)

	m.ObserveCall("alpha", "echo", "ok", 20*time.Millisecond)
	m.ObserveCall("alpha", "echo", "ok", 20*time.Millisecond)
	m.ObserveCall("alpha", "slow", "ok", 40*time.Millisecond)
	m.ObserveCall("alpha", "echo", "tool_error", 3*time.Second)
	fams := metricsScrape(t, m)

	for _, c := range []struct {
		tool, outcome string
		want          float64
	}{
		{"echo", "ok", 2},
		{"slow", "ok", 1},
		{"echo", "tool_error", 1},
	} {
		if got := metricValue(t, fams, "mcpvisor_calls_total", "outcome="+c.outcome, "server=alpha", "tool="+c.tool); got != c.want {
			t.Errorf("mcpvisor_calls_total{alpha,%s,%s} = %v, want %v", c.tool, c.outcome, got, c.want)
		}
	}

	for _, c := range []struct {
		outcome string
		count   uint64
		sum     float64
		buckets map[float64]uint64 // upper bound → cumulative count
	}{
		{"ok", 3, 0.08, map[float64]uint64{0.01: 0, 0.025: 2, 0.05: 3, 300: 3}},
		{"tool_error", 1, 3, map[float64]uint64{2.5: 0, 5: 1}},
	} {
		hist := metricSample(t, fams, "mcpvisor_call_duration_seconds", "outcome="+c.outcome, "server=alpha").GetHistogram()
		if hist == nil {
			t.Fatalf("mcpvisor_call_duration_seconds is not a histogram")
		}
		if hist.GetSampleCount() != c.count || math.Abs(hist.GetSampleSum()-c.sum) > 1e-9 {
			t.Errorf("mcpvisor_call_duration_seconds{%s}: count %d sum %v, want %d and %v", c.outcome, hist.GetSampleCount(), hist.GetSampleSum(), c.count, c.sum)
		}
		seen := 0
		for _, b := range hist.GetBucket() {
			if want, ok := c.buckets[b.GetUpperBound()]; ok {
				seen++
				if b.GetCumulativeCount() != want {
					t.Errorf("mcpvisor_call_duration_seconds{%s} bucket le=%v: %d, want %d", c.outcome, b.GetUpperBound(), b.GetCumulativeCount(), want)
				}
			}
		}
		if seen != len(c.buckets) {
			t.Errorf("mcpvisor_call_duration_seconds{%s}: %d of the expected buckets present, want %d", c.outcome, seen, len(c.buckets))
		}
	}

	if _, ok := metricsScrape(t, other)["mcpvisor_calls_total"]; ok {
		t.Error("a second Metrics shows the first one's calls")
	}
}

// Tool latency is a histogram per server and tool, its tool labels capped:
// past MaxToolLabels pairs, a new tool is counted as "other" of its server,
// in calls_total too, while a tool labelled before keeps its label.
func TestMetricsToolLabelsCapped(t *testing.T) {
	m := sidecar.NewMetrics(sidecar.MetricsOptions{MaxToolLabels: 2})
	m.ObserveCall("alpha", "echo", "ok", 20*time.Millisecond)
	m.ObserveCall("beta", "echo", "ok", 30*time.Millisecond)
	m.ObserveCall("alpha", "slow", "ok", 2*time.Second)       // past the cap
	m.ObserveCall("beta", "fetch", "error", time.Second)      // past the cap
	m.ObserveCall("alpha", "echo", "ok", 40*time.Millisecond) // labelled before
	fams := metricsScrape(t, m)
	for _, c := range []struct {
		server, tool string
		count        uint64
		sum          float64
	}{
		{"alpha", "echo", 2, 0.06},
		{"beta", "echo", 1, 0.03},
		{"alpha", "other", 1, 2},
		{"beta", "other", 1, 1},
	} {
		hist := metricSample(t, fams, "mcpvisor_tool_call_duration_seconds", "server="+c.server, "tool="+c.tool).GetHistogram()
		if hist.GetSampleCount() != c.count || math.Abs(hist.GetSampleSum()-c.sum) > 1e-9 {
			t.Errorf("tool_call_duration{%s,%s}: count %d sum %v, want %d and %v", c.server, c.tool,
				hist.GetSampleCount(), hist.GetSampleSum(), c.count, c.sum)
		}
	}
	if got := metricValue(t, fams, "mcpvisor_calls_total", "outcome=error", "server=beta", "tool=other"); got != 1 {
		t.Errorf("calls_total{beta,other,error} = %v", got)
	}
	if n := len(fams["mcpvisor_tool_call_duration_seconds"].GetMetric()); n != 4 {
		t.Errorf("%d tool latency series, want 4 (2 labelled, 2 other)", n)
	}
}

func TestMetricsApprovalsPending(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := openMetricsHost(t, mcpvisor.Options{ApprovalInbox: true})
	m := sidecar.NewMetrics(sidecar.MetricsOptions{})
	m.Watch(h)
	if got := metricValue(t, metricsScrape(t, m), "mcpvisor_approvals_pending"); got != 0 {
		t.Errorf("mcpvisor_approvals_pending = %v before any call, want 0", got)
	}

	args, _ := json.Marshal(map[string]any{"name": "x", "transport": "stdio", "command": mcptestBin})
	done := make(chan error, 1)
	changed := h.ApprovalsChanged()
	go func() {
		_, err := h.Call(ctx, "register_mcp", args)
		done <- err
	}()
	for len(h.Approvals()) == 0 {
		select {
		case <-changed:
			changed = h.ApprovalsChanged()
		case <-ctx.Done():
			t.Fatal("the register_mcp call never reached the approval inbox")
		}
	}
	if got := metricValue(t, metricsScrape(t, m), "mcpvisor_approvals_pending"); got != 1 {
		t.Errorf("mcpvisor_approvals_pending = %v while register_mcp waits, want 1", got)
	}
	if err := h.ResolveApproval(h.Approvals()[0].ID, false, ""); err != nil {
		t.Fatalf("ResolveApproval: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("register_mcp: %v", err)
	}
	if got := metricValue(t, metricsScrape(t, m), "mcpvisor_approvals_pending"); got != 0 {
		t.Errorf("mcpvisor_approvals_pending = %v after the answer, want 0", got)
	}
}

// Calls through the /mcp gateway are counted like calls through the API:
// the count is a stage of the host's call pipeline, which both use.
func TestMetricsCountGatewayCalls(t *testing.T) {
	m := sidecar.NewMetrics(sidecar.MetricsOptions{})
	h := openMetricsHost(t, mcpvisor.Options{CallMiddleware: []mcpvisor.CallMiddleware{m.CallMiddleware}}, mcptest("t"))
	m.Watch(h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.WaitReady(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	g := gateway.New(h, gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	defer g.Close()
	ts := httptest.NewServer(sidecar.New(h, sidecar.Options{Token: testToken, MCP: g.Handler(), Logger: slog.New(slog.DiscardHandler)}).Handler())
	defer ts.Close()

	session := ""
	post := func(body string) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			session = id
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %s", body, resp.StatusCode, b)
		}
		return string(b)
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, call := range []string{`{"name":"activate_tools","arguments":{"groups":["t"]}}`, `{"name":"mcp__t__echo","arguments":{"a":1}}`} {
		if out := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+2, call)); !strings.Contains(out, `"result"`) || strings.Contains(out, `"isError":true`) {
			t.Fatalf("tools/call %s: %s", call, out)
		}
	}

	fams := metricsScrape(t, m)
	for _, c := range []struct{ server, tool string }{{"", "activate_tools"}, {"t", "echo"}} {
		if got := metricValue(t, fams, "mcpvisor_calls_total", "outcome=ok", "server="+c.server, "tool="+c.tool); got != 1 {
			t.Errorf("mcpvisor_calls_total{%q,%q,ok} = %v, want 1", c.server, c.tool, got)
		}
	}
}
