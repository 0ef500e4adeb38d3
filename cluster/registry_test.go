package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/cluster"
	"github.com/mcpvisor/mcpvisor/internal/mcphttptest"
)

// openTapped opens one member of an in-process cluster whose gossip and
// tells w records.
func openTapped(t *testing.T, members cluster.Members, opts mcpvisor.Options, labels []string, w *cluster.Wire) *mcpvisor.Host {
	t.Helper()
	co := cluster.Options{Name: "test", Members: members, Gossip: 50 * time.Millisecond, Labels: labels, InsecureLoopback: true}
	opts.Cluster = cluster.Tap(co, w)
	return openHost(t, opts)
}

// waitMembers waits until every host counts n members.
func waitMembers(t *testing.T, n int, hosts ...*mcpvisor.Host) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, h := range hosts {
		for {
			if cs, _ := h.Cluster(); len(cs.Members) == n {
				break
			}
			if time.Now().After(deadline) {
				cs, _ := h.Cluster()
				t.Fatalf("a host counts %d members, want %d", len(cs.Members), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// A registration's secrets cross the cluster by reference: the gossip and
// the pushes of both members hold none of its apiKey, header, env and URL
// credential values, yet the servers placed on the other member start
// with every one of them (the HTTP server answers only when all arrive;
// the stdio server's env gives it its extra tools).
func TestClusterRegistrySecretsCrossSealed(t *testing.T) {
	const (
		apiKey = "apikey-4f1e77"
		header = "header-93ab21"
		query  = "query-c0de55"
		user   = "user-77c1e0"
		pass   = "pass-2b9d0a"
		env    = "-tools 2 -crash-after 918273"
	)
	secretValues := []string{apiKey, header, query, user, pass, "918273"}

	m := &mcphttptest.Server{}
	mcphttptest.Start(t, m) // makes m ready; its own listener goes unused
	guard := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+apiKey || r.Header.Get("X-Extra") != header || r.URL.Query().Get("token") != query {
			http.Error(w, "missing credentials", http.StatusUnauthorized)
			return
		}
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(guard.Close)

	members := cluster.InProcess()
	var wireA, wireB cluster.Wire
	a := openTapped(t, members, mcpvisor.Options{}, nil, &wireA)
	b := openTapped(t, members, mcpvisor.Options{}, []string{"b"}, &wireB)
	waitMembers(t, 2, a, b)

	ctx := featureCtx(t)
	web := mcpvisor.ServerConfig{Name: "web", Type: "http", Enabled: true, AllowPrivate: true, Node: "b",
		URL:    fmt.Sprintf("http://%s:%s@%s/mcp?token=%s", user, pass, strings.TrimPrefix(guard.URL, "http://"), query),
		APIKey: apiKey, Headers: map[string]string{"X-Extra": header}}
	local := mcptest("local")
	local.Node = "b"
	local.Env = map[string]string{"MCPTEST_ARGS": env}
	for _, sc := range []mcpvisor.ServerConfig{web, local} {
		if err := a.Register(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []*mcpvisor.Host{a, b} {
		waitAllReady(t, h, 2)
	}
	if st := status(t, b, "web"); st.Node != "" {
		t.Fatalf("web runs on %q, not on the member labelled b", st.Node)
	}
	if res := call(t, a, "mcp__web__echo", `{"text":"x"}`); res.IsError {
		t.Errorf("web through the member that registered it: %s", res.Wire())
	}
	if res := call(t, a, "mcp__local__t0001", `{}`); res.IsError {
		t.Errorf("local's extra tool, which only its env gives it: %s", res.Wire())
	}

	registryShared := false
	for _, w := range []*cluster.Wire{&wireA, &wireB} {
		for _, s := range w.Sent() {
			for _, v := range secretValues {
				if bytes.Contains(s.Body, []byte(v)) {
					t.Errorf("%s carries the secret %q: %s", s.Kind, v, s.Body)
				}
			}
			if (s.Kind == "publish shared" || strings.HasPrefix(s.Kind, "tell ")) && bytes.Contains(s.Body, []byte(`"web"`)) &&
				bytes.Contains(s.Body, []byte("${MCPVISOR_SECRET_APIKEY}")) {
				registryShared = true
			}
		}
	}
	if !registryShared {
		t.Fatal("no gossip or push carried web's registration, sealed")
	}
}

// A registration that a register_mcp call made on a member where no
// person allowed it (no gate there, or an approver that allows every
// call, as --approve-host-tools) is held on a member with an approval
// inbox: listed there, registered there disabled, and run there only once
// a person allows it. An operator's registration is not held.
func TestClusterRegistrationHeldForApproval(t *testing.T) {
	allowAll := func(context.Context, *mcpvisor.ApprovalRequest) (mcpvisor.ApprovalDecision, error) {
		return mcpvisor.ApprovalDecision{Allow: true}, nil
	}
	for _, tc := range []struct {
		name  string
		maker mcpvisor.Options
	}{
		{"no gate where made", mcpvisor.Options{AlwaysOn: []string{mcpvisor.ConfigGroup}}},
		{"an approver that allows all where made", mcpvisor.Options{AlwaysOn: []string{mcpvisor.ConfigGroup}, Approve: allowAll}},
	} {
		t.Run(tc.name, func(t *testing.T) { testHeldForApproval(t, tc.maker) })
	}
}

func testHeldForApproval(t *testing.T, maker mcpvisor.Options) {
	members := cluster.InProcess()
	a := openTapped(t, members, maker, nil, new(cluster.Wire))
	b := openTapped(t, members, mcpvisor.Options{ApprovalInbox: true}, nil, new(cluster.Wire))
	waitMembers(t, 2, a, b)
	ctx := featureCtx(t)

	args, _ := json.Marshal(map[string]any{"name": "held", "transport": "stdio", "command": bin.mcptest, "args": []string{"-name", "held"}})
	// Its answer says whether it is ready, which depends on the member it
	// is placed on: held on b, it is not.
	if _, err := a.Session("chat", "").Call(ctx, mcpvisor.ToolRegister, args); err != nil {
		t.Fatalf("register_mcp: %v", err)
	}
	if _, ok := findStatus(a, "held"); !ok {
		t.Fatal("register_mcp did not register the server where it was made")
	}
	if err := a.Register(ctx, mcptest("byoperator")); err != nil {
		t.Fatal(err)
	}

	var held mcpvisor.ApprovalRequest
	deadline := time.Now().Add(30 * time.Second)
	for {
		if as := b.Approvals(); len(as) > 0 {
			held = as[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other member lists no approval for the registration")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if held.Server != "held" || held.Tool != mcpvisor.ToolRegister || !slices.Contains(held.Command, bin.mcptest) {
		t.Fatalf("the approval raised: %+v", held)
	}
	waitEveryState(t, []*mcpvisor.Host{a, b}, "byoperator", mcpvisor.StateReady)
	if as := b.Approvals(); len(as) != 1 {
		t.Errorf("approvals on the gated member: %+v, want only held's", as)
	}

	// With the member that made it gone, it is placed on the one that
	// holds it, where it does not run.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, 1, b)
	deadline = time.Now().Add(30 * time.Second)
	for {
		st := status(t, b, "held")
		if st.Node == "" && st.State == mcpvisor.StateDisabled && st.PID == 0 {
			break
		}
		if st.PID != 0 {
			t.Fatalf("held runs before it is approved: %+v", st)
		}
		if time.Now().After(deadline) {
			t.Fatalf("held, on the member that holds it: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := b.ResolveApproval(held.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	waitEveryState(t, []*mcpvisor.Host{b}, "held", mcpvisor.StateReady)
	if st := status(t, b, "held"); st.PID == 0 || !st.Enabled {
		t.Fatalf("held once approved: %+v", st)
	}
	if res := call(t, b, "mcp__held__echo", `{"text":"x"}`); res.IsError {
		t.Errorf("held once approved: %s", res.Wire())
	}
}

// A shared-registry entry that no member made, told to a member (the
// attack: any process that reaches a member's transport tells it one
// naming a command), is refused: the member asks for it the member named
// as its maker and every other, none holds it, and it is never
// registered, run, nor published again.
func TestClusterForgedRegistryEntryIsRefused(t *testing.T) {
	members := cluster.InProcess()
	var wireA, wireB cluster.Wire
	a := openTapped(t, members, mcpvisor.Options{}, nil, &wireA)
	b := openTapped(t, members, mcpvisor.Options{}, nil, &wireB)
	waitMembers(t, 2, a, b)
	csA, _ := a.Cluster()
	csB, _ := b.Cluster()

	forged := mcptest("forged")
	cfg, _ := json.Marshal(forged)
	for _, by := range []string{"10.9.9.9:4242", csA.Self} {
		body, _ := json.Marshal(map[string]any{"shared": map[string]any{"registry": map[string]any{
			"forged": map[string]any{"config": json.RawMessage(cfg), "enabled": true, "version": int64(1) << 62, "by": by,
				"origin": map[string]any{"by": "operator"}},
		}}})
		wireA.Tell(csB.Self, body)
	}
	// Tells from one member are merged in order: once the next real
	// change is on b, the forged ones were decided.
	ctx := featureCtx(t)
	if err := a.Register(ctx, mcptest("real")); err != nil {
		t.Fatal(err)
	}
	waitEveryState(t, []*mcpvisor.Host{a, b}, "real", mcpvisor.StateReady)
	for _, h := range []*mcpvisor.Host{a, b} {
		if st, ok := findStatus(h, "forged"); ok {
			t.Errorf("a forged entry is registered: %+v", st)
		}
	}
	for _, s := range wireB.Sent() {
		if bytes.Contains(s.Body, []byte(`"forged"`)) {
			t.Errorf("b published the forged entry again: %s %s", s.Kind, s.Body)
		}
	}
}

// A registration whose register_mcp call a person allowed on the member
// where it was made carries that approval: a member with a gate of its
// own runs it without asking again, once it is placed there.
func TestClusterRegistrationApprovedWhereMadeRunsEverywhere(t *testing.T) {
	members := cluster.InProcess()
	a := openTapped(t, members, mcpvisor.Options{AlwaysOn: []string{mcpvisor.ConfigGroup}, ApprovalInbox: true}, nil, new(cluster.Wire))
	b := openTapped(t, members, mcpvisor.Options{ApprovalInbox: true}, nil, new(cluster.Wire))
	waitMembers(t, 2, a, b)
	ctx := featureCtx(t)

	args, _ := json.Marshal(map[string]any{"name": "approved", "transport": "stdio", "command": bin.mcptest, "args": []string{"-name", "approved"}})
	done := make(chan error, 1)
	go func() {
		res, err := a.Session("chat", "").Call(ctx, mcpvisor.ToolRegister, args)
		if err == nil && res.IsError {
			err = fmt.Errorf("register_mcp: %s", res.Text)
		}
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(a.Approvals()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("register_mcp does not wait in the approval inbox of the member it is made on")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.ResolveApproval(a.Approvals()[0].ID, true, ""); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The other member has taken it from this one before it leaves.
	deadline = time.Now().Add(30 * time.Second)
	for {
		if _, ok := findStatus(b, "approved"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other member does not list the registration")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, 1, b)
	deadline = time.Now().Add(30 * time.Second)
	for {
		st, _ := findStatus(b, "approved")
		if st.Node == "" && st.State == mcpvisor.StateReady && st.PID != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the approved registration on the other member: %+v (approvals there: %+v)", st, b.Approvals())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if as := b.Approvals(); len(as) != 0 {
		t.Errorf("the other member asks again: %+v", as)
	}
}

// A registration allowed on a member stays allowed there when the member
// starts again: its journal holds it enabled with that configuration, so
// the gossip that brings it back does not hold it again.
func TestClusterHeldApprovalSurvivesRestart(t *testing.T) {
	members := cluster.InProcess()
	a := openTapped(t, members, mcpvisor.Options{AlwaysOn: []string{mcpvisor.ConfigGroup}}, nil, new(cluster.Wire))
	dirB := t.TempDir()
	b := openTapped(t, members, mcpvisor.Options{DataDir: dirB, ApprovalInbox: true}, nil, new(cluster.Wire))
	waitMembers(t, 2, a, b)
	ctx := featureCtx(t)

	args, _ := json.Marshal(map[string]any{"name": "held", "transport": "stdio", "command": bin.mcptest, "args": []string{"-name", "held"}})
	if _, err := a.Session("chat", "").Call(ctx, mcpvisor.ToolRegister, args); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(b.Approvals()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no approval raised")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := b.ResolveApproval(b.Approvals()[0].ID, true, ""); err != nil {
		t.Fatal(err)
	}
	enabledAfter := func(h *mcpvisor.Host, since time.Time) string {
		recs, err := h.Journal().History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryLifecycle, Server: "held", Since: since})
		if err != nil {
			t.Fatal(err)
		}
		last := ""
		for _, r := range recs {
			if r.Transition == "enabled" || r.Transition == "disabled" {
				last = r.Transition
			}
		}
		return last
	}
	deadline = time.Now().Add(30 * time.Second)
	for enabledAfter(b, time.Time{}) != "enabled" {
		if time.Now().After(deadline) {
			t.Fatal("the approved registration is not enabled on the member that approved it")
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	b = openTapped(t, members, mcpvisor.Options{DataDir: dirB, ApprovalInbox: true}, nil, new(cluster.Wire))
	// The gossip brings the registration back: applied, it is enabled
	// again, or held (disabled) again.
	deadline = time.Now().Add(30 * time.Second)
	for {
		last := enabledAfter(b, restarted)
		if last == "enabled" {
			break
		}
		if last == "disabled" || time.Now().After(deadline) {
			t.Fatalf("after the restart, held is %q on the member that approved it (approvals: %+v)", last, b.Approvals())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if as := b.Approvals(); len(as) != 0 {
		t.Errorf("asked again after a restart: %+v", as)
	}
}
