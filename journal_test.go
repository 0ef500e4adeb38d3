package mcpvisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
)

// reopen closes h and opens a new host on the same data directory.
func reopen(t *testing.T, h *mcpvisor.Host, dir string, opts mcpvisor.Options, servers ...mcpvisor.ServerConfig) *mcpvisor.Host {
	t.Helper()
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	opts.DataDir = dir
	return openHost(t, opts, servers...)
}

func names(sts []mcpvisor.ServerStatus) []string {
	var out []string
	for _, st := range sts {
		out = append(out, fmt.Sprintf("%s:%v", st.Name, st.Enabled))
	}
	return out
}

func TestRegistrySurvivesRestarts(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := mcptest("a")
	a.Description, a.FriendlyName = "the first", "Server A"
	h := openHost(t, mcpvisor.Options{DataDir: dir}, a, mcptest("gone"))
	if err := h.Register(ctx, mcptest("api")); err != nil {
		t.Fatal(err)
	}
	if err := h.SetEnabled(ctx, "a", false); err != nil {
		t.Fatal(err)
	}

	// "gone" left the file; "a" keeps the API's disable; "api" is back.
	h = reopen(t, h, dir, mcpvisor.Options{}, a)
	if diff := cmp.Diff([]string{"a:false", "api:true"}, names(h.Status())); diff != "" {
		t.Errorf("servers after restart (-want +got):\n%s", diff)
	}
	if st := status(t, h, "a"); st.State != mcpvisor.StateDisabled || st.Description != "the first" || st.FriendlyName != "Server A" {
		t.Errorf("a after restart: state %s, description %q, friendly name %q", st.State, st.Description, st.FriendlyName)
	}
	waitReady(t, h, "api")
	rows, err := h.Journal().Servers()
	if err != nil {
		t.Fatal(err)
	}
	origins := map[string]string{}
	for _, r := range rows {
		origins[r.Name] = r.Origin
	}
	if diff := cmp.Diff(map[string]string{"a": "config", "api": "api"}, origins); diff != "" {
		t.Errorf("registry origins (-want +got):\n%s", diff)
	}

	// Unregister is irreversible, across restarts too. Changing a's entry
	// in the file makes the file's enabled flag count again.
	if err := h.Unregister(ctx, "api"); err != nil {
		t.Fatal(err)
	}
	a.Args = append(a.Args, "-tools", "1")
	h = reopen(t, h, dir, mcpvisor.Options{}, a)
	if diff := cmp.Diff([]string{"a:true"}, names(h.Status())); diff != "" {
		t.Errorf("servers after Unregister and a changed entry (-want +got):\n%s", diff)
	}
	waitReady(t, h, "a")

	hist, err := h.Journal().History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryLifecycle})
	if err != nil {
		t.Fatal(err)
	}
	var registry []string
	for _, r := range hist {
		switch r.Transition {
		case "registered", "unregistered", "enabled", "disabled":
			registry = append(registry, r.Server+" "+r.Transition)
		}
	}
	want := []string{"api registered", "a disabled", "gone unregistered", "api unregistered"}
	if diff := cmp.Diff(want, registry); diff != "" {
		t.Errorf("registry history (-want +got):\n%s", diff)
	}
}

func TestLastCatalogAnswersWhileStarting(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, mcpvisor.Options{DataDir: dir}, mcptest("m"))
	waitReady(t, h, "m")
	before := toolsOf(h, "m")
	for _, tl := range h.Tools() {
		if !tl.Available {
			t.Errorf("%s of a ready server is not available", tl.Name)
		}
	}

	// The same server now never finishes its handshake: its tools are
	// still listed, as unavailable, from the journal.
	h = reopen(t, h, dir, mcpvisor.Options{}, mcptest("m", "-hang-init"))
	if st := status(t, h, "m"); st.State == mcpvisor.StateReady {
		t.Fatalf("server ready though it never answers initialize")
	}
	if diff := cmp.Diff(before, toolsOf(h, "m")); diff != "" {
		t.Errorf("restored catalog (-want +got):\n%s", diff)
	}
	for _, tl := range h.Tools() {
		if tl.Available {
			t.Errorf("%s listed as available before its server is ready", tl.Name)
		}
		if tl.Name == "mcp__m__echo" && (tl.Destructive || tl.Annotations == nil || len(tl.InputSchema) == 0) {
			t.Errorf("restored echo lost its fields: %+v", tl)
		}
	}
}

func TestEventsArePendingUntilAcked(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h := openHost(t, mcpvisor.Options{DataDir: dir}, mcptest("m"))
	sub, cancelSub := context.WithCancel(ctx)
	defer cancelSub()
	live := h.Journal().Subscribe(sub, mcpvisor.EventFilter{Server: "m"})
	call(t, h, "mcp__m__notify", `{}`)
	call(t, h, "mcp__m__notify", `{}`)

	var got []mcpvisor.JournalEvent
	for len(got) < 2 {
		select {
		case ev := <-live:
			got = append(got, ev)
		case <-time.After(30 * time.Second):
			t.Fatalf("subscription delivered %d of 2 events", len(got))
		}
	}
	for _, ev := range got {
		if ev.Method != "event/test" || string(ev.Params) != `{"n":1}` || ev.Status != mcpvisor.EventPending || ev.Server != "m" {
			t.Errorf("event %+v", ev)
		}
	}
	if got[1].Seq <= got[0].Seq {
		t.Errorf("seqs %d then %d", got[0].Seq, got[1].Seq)
	}
	// notifications/message went to the log file, not the journal.
	all, err := h.Journal().Events(mcpvisor.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Errorf("journal holds %d events, want 2 (log records are not events): %+v", len(all), all)
	}

	if err := h.Journal().Ack(ctx, got[0].Seq, 999999); !errors.Is(err, mcpvisor.ErrUnknownEvent) || !strings.Contains(err.Error(), "999999") {
		t.Errorf("Ack with an unknown id = %v, want ErrUnknownEvent naming it", err)
	}
	h = reopen(t, h, dir, mcpvisor.Options{}, mcptest("m"))
	pending, err := h.Journal().Events(mcpvisor.EventFilter{Status: mcpvisor.EventPending})
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Seq != got[1].Seq {
		t.Fatalf("pending after restart = %+v, want only seq %d", pending, got[1].Seq)
	}
	done, _ := h.Journal().Events(mcpvisor.EventFilter{Status: mcpvisor.EventProcessed})
	if len(done) != 1 || done[0].Seq != got[0].Seq || done[0].ProcessedAt.IsZero() {
		t.Errorf("processed after restart = %+v", done)
	}
	call(t, h, "mcp__m__notify", `{}`)
	waitEvents(t, h, mcpvisor.EventFilter{After: got[1].Seq}, 1)
	next, _ := h.Journal().Events(mcpvisor.EventFilter{After: got[1].Seq})
	if next[0].Seq <= got[1].Seq {
		t.Errorf("new event seq %d after restart is not above %d", next[0].Seq, got[1].Seq)
	}
}

// waitEvents waits, on the journal's subscription, until f matches n
// events, and returns them.
func waitEvents(t *testing.T, h *mcpvisor.Host, f mcpvisor.EventFilter, n int) []mcpvisor.JournalEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var seen []mcpvisor.JournalEvent
	for ev := range h.Journal().Subscribe(ctx, f) {
		if seen = append(seen, ev); len(seen) >= n {
			return seen
		}
	}
	t.Fatalf("only %d of %d events arrived", len(seen), n)
	return nil
}

func TestGrantsSessionsAndStackFrames(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	notes := mcpvisor.ServerConfig{Name: "notes", Command: bin.notes, Enabled: true, Description: "Arithmetic | notes"}
	h := openHost(t, mcpvisor.Options{DataDir: dir}, notes, mcptest("m"))
	waitReady(t, h)

	root := h.Session("s1", "")
	if got := toolNames(root.Tools()); !slices.Equal(got, []string{mcpvisor.ToolActivate}) {
		t.Errorf("a new session sees %v, want only activate_tools", got)
	}
	if _, err := root.Call(ctx, "mcp__notes__add", json.RawMessage(`{"a":1,"b":2}`)); !errors.Is(err, mcpvisor.ErrNotGranted) {
		t.Errorf("call before activation = %v, want ErrNotGranted", err)
	}
	if err := root.Activate(ctx, "notes", "nope"); !errors.Is(err, mcpvisor.ErrUnknownGroup) {
		t.Errorf("Activate(unknown) = %v, want ErrUnknownGroup", err)
	}
	if len(root.Groups()) != 0 {
		t.Errorf("a failed Activate granted %v", root.Groups())
	}
	beforeGrant := time.Now()
	if err := root.Activate(ctx, "notes", mcpvisor.ConfigGroup); err != nil {
		t.Fatal(err)
	}
	afterGrant := time.Now()
	if res, err := root.Call(ctx, "mcp__notes__add", json.RawMessage(`{"a":1,"b":2}`)); err != nil || res.Wire() != "3" {
		t.Errorf("granted call = %v, %v", res, err)
	}
	frame := h.Session("s1", "f1")
	if got := serverTools(frame.Tools()); len(got) != 0 {
		t.Errorf("a sub-agent frame starts with %v, want no server tools", toolNames(got))
	}
	if err := frame.Activate(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if got := serversOf(frame.Tools()); !slices.Equal(got, []string{"m"}) {
		t.Errorf("frame sees servers %v, want [m]", got)
	}
	other := h.Session("s2", "")
	if got := serverTools(other.Tools()); len(got) != 0 {
		t.Errorf("another session sees %v", toolNames(got))
	}
	if block := other.Catalog(); !strings.Contains(block, "| `notes` | Arithmetic \\| notes |") {
		t.Errorf("catalog block of a session with no grants lacks notes and its description:\n%s", block)
	}
	block := root.Catalog()
	for _, want := range []string{"## MCP servers", "| `m` |", "**Active**", "- `notes`"} {
		if !strings.Contains(block, want) {
			t.Errorf("catalog block lacks %q:\n%s", want, block)
		}
	}
	if strings.Contains(block, "| `notes` |") {
		t.Errorf("an active server is listed as available:\n%s", block)
	}

	// Grants survive a restart, session and frame alike.
	h = reopen(t, h, dir, mcpvisor.Options{}, notes, mcptest("m"))
	root, frame = h.Session("s1", ""), h.Session("s1", "f1")
	if diff := cmp.Diff([]string{"config", "notes"}, root.Groups()); diff != "" {
		t.Errorf("session grants after restart (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"m"}, frame.Groups()); diff != "" {
		t.Errorf("frame grants after restart (-want +got):\n%s", diff)
	}
	// The frame ends: its grants go, the session's stay.
	beforeEnd := time.Now()
	if err := frame.End(ctx); err != nil {
		t.Fatal(err)
	}
	if len(frame.Groups()) != 0 || len(root.Groups()) != 2 {
		t.Errorf("after the frame ended: frame %v, session %v", frame.Groups(), root.Groups())
	}
	h = reopen(t, h, dir, mcpvisor.Options{}, notes, mcptest("m"))
	if g := h.Session("s1", "f1").Groups(); len(g) != 0 {
		t.Errorf("an ended frame's grants came back after restart: %v", g)
	}

	// Who could call mcp__m__echo, and when.
	j := h.Journal()
	at := func(tm time.Time) []mcpvisor.Scope {
		s, err := j.WhoHadAccess("mcp__m__echo", tm)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := at(beforeEnd); !slices.Equal(s, []mcpvisor.Scope{{Session: "s1", Stack: "f1"}}) {
		t.Errorf("access to m before the frame ended = %v", s)
	}
	if s := at(time.Now()); len(s) != 0 {
		t.Errorf("access to m after the frame ended = %v", s)
	}
	if s, _ := j.WhoHadAccess("mcp__notes__add", beforeGrant.Add(-time.Millisecond)); len(s) != 0 {
		t.Errorf("access to notes before the grant = %v", s)
	}
	if s, _ := j.WhoHadAccess("mcp__notes__add", afterGrant); !slices.Equal(s, []mcpvisor.Scope{{Session: "s1"}}) {
		t.Errorf("access to notes after the grant = %v", s)
	}

	// Ending the session drops every grant in it.
	if err := h.Session("s1", "").End(ctx); err != nil {
		t.Fatal(err)
	}
	if g := h.Session("s1", "").Groups(); len(g) != 0 {
		t.Errorf("session grants after End: %v", g)
	}
}

// serverTools drops the host's own tools (activate_tools, the config
// group's), which every session lists.
func serverTools(tools []mcpvisor.Tool) []mcpvisor.Tool {
	return slices.DeleteFunc(tools, func(t mcpvisor.Tool) bool { return mcpvisor.IsHostTool(t.Name) })
}

func serversOf(tools []mcpvisor.Tool) []string {
	var out []string
	for _, t := range serverTools(tools) {
		if !slices.Contains(out, t.Server) {
			out = append(out, t.Server)
		}
	}
	return out
}

func TestHistoryOfTransitionsAndCalls(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{DataDir: dir, OnEvent: onEvent}, mcptest("m"))
	waitReady(t, h, "m")
	call(t, h, "mcp__m__stderr", `{"lines":3}`)
	call(t, h, "mcp__m__echo", `{"x":1}`)
	if err := h.Session("s", "").Activate(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Session("s", "").Call(ctx, "mcp__m__crash", json.RawMessage(`{"code":7}`)); !errors.Is(err, mcpvisor.ErrConnectionLost) {
		t.Fatalf("crash call = %v", err)
	}
	waitState(t, events, "m", mcpvisor.StateBackoff)
	waitState(t, events, "m", mcpvisor.StateReady)
	h = reopen(t, h, dir, mcpvisor.Options{})

	j := h.Journal()
	life, err := j.History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryLifecycle, Server: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	var exit *mcpvisor.HistoryRecord
	for i, r := range life {
		seq = append(seq, r.Transition)
		if r.Transition == "exited" && exit == nil {
			exit = &life[i]
		}
	}
	want := []string{"spawned", "ready", "exited", "backoff", "spawned", "ready", "stopped", "unregistered"}
	if diff := cmp.Diff(want, seq); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if exit == nil || !strings.Contains(exit.Detail, "7") || exit.PID == 0 || len(exit.Stderr) == 0 {
		t.Errorf("exit record %+v: want the status 7, the pid and the last stderr lines", exit)
	}
	calls, err := j.History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range calls {
		got = append(got, fmt.Sprintf("%s %s %s", r.Scope.Session, r.Tool, r.Outcome))
		if r.Outcome == "ok" && (r.ResultSize == 0 || r.Duration <= 0) {
			t.Errorf("call record %+v lacks its size or duration", r)
		}
		if len(r.Arguments) != 0 || len(r.Result) != 0 {
			t.Errorf("call payloads kept by default: %+v", r)
		}
	}
	want = []string{" mcp__m__stderr ok", " mcp__m__echo ok", "s mcp__m__crash error"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestSecondHostOnTheSameDataDir(t *testing.T) {
	dir := t.TempDir()
	openHost(t, mcpvisor.Options{DataDir: dir})
	_, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: dir})
	if !errors.Is(err, mcpvisor.ErrJournalLocked) || !strings.Contains(err.Error(), filepath.Join(dir, "journal")) {
		t.Fatalf("second Open = %v, want ErrJournalLocked naming %s", err, filepath.Join(dir, "journal"))
	}
	if _, err := mcpvisor.OpenJournal(dir, mcpvisor.JournalOptions{}, nil); !errors.Is(err, mcpvisor.ErrJournalLocked) {
		t.Fatalf("OpenJournal on a running host's dir = %v, want ErrJournalLocked", err)
	}
}

// floodChild marks the process TestNotificationFloodIsBounded runs in.
const floodChild = "MCPVISOR_TEST_FLOOD_CHILD"

// A server flooding notifications costs the host bounded memory, and the
// other servers keep answering. What overflows the journal's queue is
// counted and journaled, never held.
//
// It runs in a process of its own: the peak is of the heap of a process
// that ran nothing else, whatever tests ran before it in this one (three
// cluster members and their gRPC had it measure 2 GiB here, against 180
// MiB alone, with nothing of theirs left running).
func TestNotificationFloodIsBounded(t *testing.T) {
	if os.Getenv(floodChild) == "" {
		args := []string{"-test.run=^TestNotificationFloodIsBounded$", "-test.count=1", "-test.v"}
		if d, ok := t.Deadline(); ok {
			args = append(args, "-test.timeout="+time.Until(d).String())
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), floodChild+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in its own process:\n%s", out)
		if err != nil {
			t.Fatalf("the flood test in its own process: %v", err)
		}
		return
	}
	const n = 1_000_000
	h := openHost(t, mcpvisor.Options{}, mcptest("flood"), mcptest("calm"))
	waitReady(t, h)

	var peak uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		var ms runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	// The flood takes what the machine needs (over the default 2-minute
	// call timeout under -race on a loaded 2-core machine): the test is of
	// memory, not speed, so the call is bounded by the test's deadline.
	limit := 10 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = max(time.Until(d)-30*time.Second, time.Minute)
	}
	flooded := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		res, err := h.CallWith(ctx, "mcp__flood__flood", json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), mcpvisor.CallOptions{Timeout: limit})
		if err == nil && res.Wire() != fmt.Sprintf("flooded %d", n) {
			err = fmt.Errorf("flood answered %q", res.Wire())
		}
		flooded <- err
	}()
	calm := 0
	for done := false; !done; {
		select {
		case err := <-flooded:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		default:
			call(t, h, "mcp__calm__echo", `{}`)
			calm++
		}
	}
	// Everything the flood sent is journaled or counted as dropped (the
	// count may include the flood call's own history record).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var journaled, dropped, last uint64
	for ev := range h.Journal().Subscribe(ctx, mcpvisor.EventFilter{Server: "flood"}) {
		if ev.Seq <= last {
			t.Fatalf("event seq %d after %d", ev.Seq, last)
		}
		last = ev.Seq
		if ev.Method == mcpvisor.MethodEventsDrops {
			var p struct{ Dropped uint64 }
			if err := json.Unmarshal(ev.Params, &p); err != nil || p.Dropped == 0 {
				t.Fatalf("drop record %s: %v", ev.Params, err)
			}
			dropped += p.Dropped
		} else {
			journaled++
		}
		if journaled+dropped >= n {
			break
		}
	}
	if journaled > n || journaled+dropped < n {
		t.Fatalf("%d events sent; %d journaled and %d dropped", n, journaled, dropped)
	}
	close(stop)
	sampler.Wait()
	t.Logf("%d events: %d journaled, %d dropped; peak heap in use %d MiB; %d calls to the calm server meanwhile",
		n, journaled, dropped, peak>>20, calm)
	if calm == 0 {
		t.Error("the calm server answered no call during the flood")
	}
	const bound = 320 << 20 // measured ~170-180 MiB; the unbounded inbound queue of small frames reached 440-540
	if peak > bound {
		t.Errorf("peak heap in use %d MiB during a %d-event flood, want under %d MiB", peak>>20, n, bound>>20)
	}
}

// With Options.Only, the servers left unstarted are still in the registry:
// they can be disabled and unregistered, and the next host sees that.
func TestOnlyLeavesTheRestOfTheRegistry(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h := openHost(t, mcpvisor.Options{DataDir: dir}, mcptest("a"), mcptest("b"))
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = openHost(t, mcpvisor.Options{DataDir: dir, Only: []string{"a"}}, mcptest("a"), mcptest("b"))
	if diff := cmp.Diff([]string{"a:true"}, names(h.Status())); diff != "" {
		t.Errorf("started with Only (-want +got):\n%s", diff)
	}
	if err := h.SetEnabled(ctx, "b", false); err != nil {
		t.Errorf("SetEnabled of an unstarted server: %v", err)
	}
	h = reopen(t, h, dir, mcpvisor.Options{}, mcptest("a"), mcptest("b"))
	if diff := cmp.Diff([]string{"a:true", "b:false"}, names(h.Status())); diff != "" {
		t.Errorf("after disabling b under Only (-want +got):\n%s", diff)
	}
}

// A server registered through the API whose variable is gone at the next
// start does not stop the host: it is listed, disabled, and starts once
// the variable is back and it is enabled.
func TestRegistryRowThatNoLongerResolves(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	env := map[string]string{"MCPTEST_NAME": "dyn"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	h := openHost(t, mcpvisor.Options{DataDir: dir, LookupEnv: lookup})
	sc := mcptest("dyn")
	sc.Args = []string{"-name", "${MCPTEST_NAME}"}
	if err := h.Register(ctx, sc); err != nil {
		t.Fatal(err)
	}
	waitReady(t, h, "dyn")

	delete(env, "MCPTEST_NAME")
	h = reopen(t, h, dir, mcpvisor.Options{LookupEnv: lookup})
	if st := status(t, h, "dyn"); st.State != mcpvisor.StateDisabled {
		t.Fatalf("a row that no longer resolves: state %s, want disabled", st.State)
	}
	env["MCPTEST_NAME"] = "dyn"
	if err := h.SetEnabled(ctx, "dyn", true); err != nil {
		t.Fatal(err)
	}
	waitReady(t, h, "dyn")
}

// AllGroups in AlwaysOn: every server's tools for every session, a server
// registered later included; the config group stays something to ask for.
func TestAlwaysOnAllGroups(t *testing.T) {
	h := openHost(t, mcpvisor.Options{AlwaysOn: []string{mcpvisor.AllGroups}}, mcptest("a"))
	waitReady(t, h, "a")
	if err := h.Register(context.Background(), mcptest("late")); err != nil {
		t.Fatal(err)
	}
	waitReady(t, h, "late")
	s := h.Session("one-shot", "")
	names := map[string]bool{}
	for _, tool := range s.Tools() {
		names[tool.Name] = true
	}
	if !names["mcp__a__echo"] || !names["mcp__late__echo"] || names["register_mcp"] {
		t.Errorf("a fresh session's tools = %v; want every server's, and no host tools of the config group", names)
	}
	if _, err := s.Call(context.Background(), "mcp__late__echo", json.RawMessage(`{}`)); err != nil {
		t.Errorf("a call without activation: %v", err)
	}
}

// A server configured with "activate": true is in every session from the
// start; the others still need activation.
func TestServerActivate(t *testing.T) {
	on := mcptest("on")
	on.Activate = true
	h := openHost(t, mcpvisor.Options{}, on, mcptest("off"))
	waitReady(t, h, "on", "off")
	s := h.Session("one-shot", "")
	names := map[string]bool{}
	for _, tool := range s.Tools() {
		names[tool.Name] = true
	}
	if !names["mcp__on__echo"] || names["mcp__off__echo"] {
		t.Errorf("a fresh session's tools = %v; want the activated server's only", names)
	}
	if _, err := s.Call(context.Background(), "mcp__on__echo", json.RawMessage(`{}`)); err != nil {
		t.Errorf("a call without activation: %v", err)
	}
	if _, err := s.Call(context.Background(), "mcp__off__echo", json.RawMessage(`{}`)); err == nil {
		t.Error("a call to a server not activated succeeded")
	}

	cfg, err := mcpvisor.ParseConfig([]byte(`{"mcpServers":{"x":{"command":"true","activate":"yes"}}}`))
	if err == nil || !strings.Contains(err.Error(), `"activate"`) || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("activate as a string: %v, %+v; want an error naming the server and the field", err, cfg)
	}
	cfg, err = mcpvisor.ParseConfig([]byte(`{"mcpServers":{"x":{"command":"true","activate":true}}}`))
	if err != nil || !cfg.Servers[0].Activate {
		t.Errorf("activate true: %v, %+v", err, cfg)
	}
}
