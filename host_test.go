package mcpvisor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/hosttest"
	"github.com/mcpvisor/mcpvisor/internal/testbin"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Binaries of the example servers, built once for the whole package.
var bin struct{ mcptest, notes, jobs string }

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{
		"github.com/mcpvisor/mcpvisor/examples/servers/mcptest": &bin.mcptest,
		"github.com/mcpvisor/mcpvisor/examples/servers/notes":   &bin.notes,
		"github.com/mcpvisor/mcpvisor/examples/servers/jobs":    &bin.jobs,
	})
}

var fastRestart = hosttest.FastRestart

// openHost opens a host of servers, closed when the test ends.
func openHost(t testing.TB, opts mcpvisor.Options, servers ...mcpvisor.ServerConfig) *mcpvisor.Host {
	t.Helper()
	return hosttest.Open(t, opts, servers...)
}

func mcptest(name string, args ...string) mcpvisor.ServerConfig {
	return mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: bin.mcptest, Args: append([]string{"-name", name}, args...), Enabled: true}
}

func waitReady(t *testing.T, h *mcpvisor.Host, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.WaitReady(ctx, names...); err != nil {
		t.Fatalf("WaitReady(%v): %v", names, err)
	}
}

func status(t testing.TB, h *mcpvisor.Host, name string) mcpvisor.ServerStatus {
	t.Helper()
	for _, st := range h.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no status for %q", name)
	return mcpvisor.ServerStatus{}
}

// waitState waits (on state events, not sleeps) until server reaches one of
// the states.
func waitState(t *testing.T, events <-chan mcpvisor.Event, server string, states ...mcpvisor.State) mcpvisor.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Kind != mcpvisor.EventState || ev.Server != server {
				continue
			}
			for _, s := range states {
				if ev.State == s {
					return ev
				}
			}
		case <-timeout:
			t.Fatalf("server %q never reached %v", server, states)
		}
	}
}

func eventSink() (func(mcpvisor.Event), chan mcpvisor.Event) {
	ch := make(chan mcpvisor.Event, 4096)
	return func(ev mcpvisor.Event) { ch <- ev }, ch
}

func call(t *testing.T, h *mcpvisor.Host, tool, args string) *mcpvisor.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.Call(ctx, tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Call(%s): %v", tool, err)
	}
	return res
}

func readLog(t *testing.T, dataDir, server string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "logs", server+".log"))
	if err != nil {
		t.Fatalf("server log: %v", err)
	}
	return string(b)
}

func TestCallNotesServer(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcpvisor.ServerConfig{Name: "notes", Command: bin.notes, Enabled: true})
	waitReady(t, h)

	res := call(t, h, "mcp__notes__add", `{"a":2,"b":40}`)
	if res.Type != mcpvisor.ResultString || res.IsError || strings.TrimSpace(res.Wire()) != "42" {
		t.Errorf("add = %+v (wire %q), want string 42", res, res.Wire())
	}
	res = call(t, h, "mcp__notes__divide", `{"a":1,"b":0}`)
	if !res.IsError {
		t.Errorf("divide by zero: IsError = false, want a tool error; wire %q", res.Wire())
	}
	call(t, h, "mcp__notes__note_put", `{"key":"k","text":"hello"}`)
	res = call(t, h, "mcp__notes__note_list", `{}`)
	if res.Type != mcpvisor.ResultJSON || !strings.Contains(res.Wire(), "hello") && !strings.Contains(res.Wire(), `"k"`) {
		t.Errorf("note_list = type %s wire %q, want JSON naming the note", res.Type, res.Wire())
	}
	var tools []string
	destructive := map[string]bool{}
	for _, tl := range h.Tools() {
		tools = append(tools, tl.Name)
		destructive[tl.Tool] = tl.Destructive
	}
	if !strings.Contains(strings.Join(tools, ","), "mcp__notes__add") {
		t.Errorf("Tools() = %v, want mcp__notes__add", tools)
	}
	if destructive["add"] || !destructive["note_delete"] {
		t.Errorf("destructive flags: add=%v note_delete=%v, want false, true", destructive["add"], destructive["note_delete"])
	}
	st := status(t, h, "notes")
	if st.State != mcpvisor.StateReady || st.PID == 0 || st.ProtocolVersion != protocol.ProtocolVersion || st.ServerInfo.Name == "" {
		t.Errorf("status = %+v", st)
	}
}

func TestUnknownToolAndServer(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcptest("a"))
	waitReady(t, h)
	ctx := context.Background()
	for _, tc := range []struct {
		tool string
		want error
	}{
		{"mcp__a__nope", mcpvisor.ErrUnknownTool},
		{"mcp__zz__echo", mcpvisor.ErrUnknownServer},
		{"echo", mcpvisor.ErrUnknownTool},
	} {
		if _, err := h.Call(ctx, tc.tool, nil); !errors.Is(err, tc.want) {
			t.Errorf("Call(%s) = %v, want %v", tc.tool, err, tc.want)
		}
	}
}

func TestNegotiation(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		state    mcpvisor.State
		version  string
		errorHas string
	}{
		{name: "current", state: mcpvisor.StateReady, version: "2025-11-25"},
		{name: "older", args: []string{"-version", "2025-06-18"}, state: mcpvisor.StateReady, version: "2025-06-18"},
		{name: "oldest", args: []string{"-version", "2024-11-05"}, state: mcpvisor.StateReady, version: "2024-11-05"},
		{name: "unknown", args: []string{"-version", "1999-01-01"}, state: mcpvisor.StateFailed, errorHas: "1999-01-01"},
		{name: "missing", args: []string{"-no-version"}, state: mcpvisor.StateFailed, errorHas: "protocolVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEvent, events := eventSink()
			h := openHost(t, mcpvisor.Options{OnEvent: onEvent}, mcptest("s", tt.args...))
			waitState(t, events, "s", mcpvisor.StateReady, mcpvisor.StateFailed)
			st := status(t, h, "s")
			if st.State != tt.state {
				t.Fatalf("state %s (%s), want %s", st.State, st.LastError, tt.state)
			}
			if tt.version != "" && st.ProtocolVersion != tt.version {
				t.Errorf("negotiated %q, want %q", st.ProtocolVersion, tt.version)
			}
			if tt.errorHas != "" && !strings.Contains(st.LastError, tt.errorHas) {
				t.Errorf("last error %q does not mention %q", st.LastError, tt.errorHas)
			}
			if tt.state == mcpvisor.StateFailed && st.Restarts != 0 {
				t.Errorf("a version refusal restarted %d times; it cannot change by restarting", st.Restarts)
			}
		})
	}
}

func TestPagination(t *testing.T) {
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent},
		mcptest("paged", "-tools", "120", "-page", "7"),
		mcptest("endless", "-page", "3", "-endless-cursor"),
	)
	waitReady(t, h)
	_ = events
	count := map[string]int{}
	for _, tl := range h.Tools() {
		count[tl.Server]++
	}
	base := count["endless"] // the built-in tools, without extras
	if st := status(t, h, "paged"); st.Tools != count["paged"] || count["paged"] < 120 {
		t.Errorf("paged: %d tools listed (status %d), want every page (>= 120)", count["paged"], st.Tools)
	}
	if _, err := h.Call(context.Background(), "mcp__paged__t0119", nil); err != nil {
		t.Errorf("a tool from the last page is not callable: %v", err)
	}
	st := status(t, h, "endless")
	if st.State != mcpvisor.StateReady || !strings.Contains(strings.Join(st.Warnings, "\n"), "50 pages") {
		t.Errorf("endless cursor: state %s, warnings %q; want ready with a 50-page warning", st.State, st.Warnings)
	}
	if base == 0 {
		t.Errorf("endless cursor: no tools kept")
	}
}

// One server that accepts calls and never answers must not slow anyone else.
func TestHungServerIsIsolated(t *testing.T) {
	hung := mcptest("hung", "-hang-calls")
	hung.Timeout = mcpvisor.Duration(time.Hour)
	dataDir := t.TempDir()
	h := openHost(t, mcpvisor.Options{DataDir: dataDir}, hung, mcptest("ok"))
	waitReady(t, h)

	ctx, cancel := context.WithCancel(context.Background())
	hungDone := make(chan error, 1)
	go func() {
		_, err := h.Call(ctx, "mcp__hung__echo", json.RawMessage(`{"x":1}`))
		hungDone <- err
	}()
	// While that call hangs, the healthy server answers, and status and the
	// tool list answer.
	for i := range 200 {
		res := call(t, h, "mcp__ok__echo", fmt.Sprintf(`{"i":%d}`, i))
		if !strings.Contains(res.Wire(), strconv.Itoa(i)) {
			t.Fatalf("echo %d = %q", i, res.Wire())
		}
		if len(h.Status()) != 2 || len(h.Tools()) == 0 {
			t.Fatal("status or tools incomplete while a server hangs")
		}
	}
	select {
	case err := <-hungDone:
		t.Fatalf("hung call returned early: %v", err)
	default:
	}
	cancel()
	if err := <-hungDone; !errors.Is(err, mcpvisor.ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("hung call after cancel = %v, want ErrCancelled wrapping context.Canceled", err)
	}
	// The server was told: mcptest logs notifications/cancelled to stderr.
	waitLog(t, dataDir, "hung", "cancelled")

	// A call with a short timeout fails with ErrTimeout.
	short := mcptest("hung2", "-hang-calls")
	short.Timeout = mcpvisor.Duration(50 * time.Millisecond)
	if err := h.Register(context.Background(), short); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Call(context.Background(), "mcp__hung2__echo", nil); !errors.Is(err, mcpvisor.ErrTimeout) {
		t.Fatalf("call to a hung server = %v, want ErrTimeout", err)
	}
}

// waitLog polls a server log until it contains want; the log is written by
// a goroutine of the host, so a few retries are expected.
func waitLog(t *testing.T, dataDir, server, want string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dataDir, "logs", server+".log"))
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("log of %q never contained %q; it holds:\n%s", server, want, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestServerThatStopsReading(t *testing.T) {
	deaf := mcptest("deaf", "-stop-reading-after-list")
	deaf.Timeout = mcpvisor.Duration(100 * time.Millisecond)
	h := openHost(t, mcpvisor.Options{}, deaf, mcptest("ok"))
	waitReady(t, h)
	big := `{"pad":"` + strings.Repeat("x", 256<<10) + `"}`
	var err error
	for i := 0; i < 400 && !errors.Is(err, mcpvisor.ErrNotReading); i++ {
		_, err = h.Call(context.Background(), "mcp__deaf__echo", json.RawMessage(big))
		if err == nil {
			t.Fatal("a server that reads nothing answered")
		}
		// Healthy neighbours are unaffected.
		call(t, h, "mcp__ok__echo", `{}`)
	}
	if !errors.Is(err, mcpvisor.ErrNotReading) {
		t.Fatalf("calls to a server that stopped reading end with %v, want ErrNotReading", err)
	}
}

func TestOversizedFrameIsBounded(t *testing.T) {
	const limit = 1 << 20
	const flood = 192 << 20 // a 192 MiB line: long, and below the 256 MiB a line may run before it counts as endless
	h := openHost(t, mcpvisor.Options{MaxFrame: limit}, mcptest("flood", "-flood-bytes", strconv.Itoa(flood)))
	waitReady(t, h)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := h.Call(context.Background(), "mcp__flood__echo", json.RawMessage(`{}`))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, mcpvisor.ErrFrameTooLarge) {
		t.Fatalf("call answered by a %d-byte frame = %v, want ErrFrameTooLarge", flood, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("reading a %d MiB frame allocated %d MiB; the limit is %d MiB", flood>>20, grew>>20, limit>>20)
	}
	// The server keeps working after the rejected frame.
	if res := call(t, h, "mcp__flood__echo", `{"after":true}`); !strings.Contains(res.Wire(), "after") {
		t.Errorf("echo after the flood = %q", res.Wire())
	}
}

// A server→client request that arrives before the response is answered and
// never taken for the response (seed 002, finding 3).
func TestServerRequestBeforeResponse(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcptest("asker"))
	waitReady(t, h)
	res := call(t, h, "mcp__asker__ask_then_answer", `{}`)
	wire := res.Wire()
	if res.IsError || wire == "" {
		t.Fatalf("ask_then_answer = %+v", res)
	}
	if !strings.Contains(wire, "{}") || !strings.Contains(wire, "-32601") {
		t.Errorf("ask_then_answer = %q; want the ping answered {} and roots/list answered -32601", wire)
	}
}

func TestBannerLinesAreSkipped(t *testing.T) {
	dataDir := t.TempDir()
	h := openHost(t, mcpvisor.Options{DataDir: dataDir}, mcptest("banner", "-banner", "3"))
	waitReady(t, h)
	call(t, h, "mcp__banner__echo", `{}`)
	if st := status(t, h, "banner"); st.BannerLines != 3 {
		t.Errorf("BannerLines = %d, want 3", st.BannerLines)
	}
	waitLog(t, dataDir, "banner", "non-JSON-RPC line skipped")
}

func TestCrashMidCallFailsFastAndRestarts(t *testing.T) {
	onEvent, events := eventSink()
	dataDir := t.TempDir()
	crashy := mcptest("crashy")
	crashy.Timeout = mcpvisor.Duration(time.Hour) // the failure must not come from a timeout
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent, DataDir: dataDir}, crashy)
	waitState(t, events, "crashy", mcpvisor.StateReady)

	// Several calls in flight when the process dies: all fail at once.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 3 {
		wg.Go(func() {
			_, err := h.Call(context.Background(), "mcp__crashy__slow", json.RawMessage(`{"ms":600000,"started":true}`))
			errs <- err
		})
	}
	// The crash goes out only once the server runs all three slow calls.
	for started := 0; started < 3; {
		select {
		case ev := <-events:
			if ev.Kind == mcpvisor.EventNotification && ev.Method == "event/started" {
				started++
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d slow calls started", started)
		}
	}
	wg.Go(func() {
		_, err := h.Call(context.Background(), "mcp__crashy__crash", json.RawMessage(`{"code":7}`))
		errs <- err
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, mcpvisor.ErrConnectionLost) || !strings.Contains(err.Error(), "exit status 7") || !strings.Contains(err.Error(), "crashy") {
			t.Errorf("pending call = %v; want ErrConnectionLost naming the server and exit status 7", err)
		}
	}
	waitState(t, events, "crashy", mcpvisor.StateBackoff)
	waitState(t, events, "crashy", mcpvisor.StateReady)
	if st := status(t, h, "crashy"); st.Restarts != 1 {
		t.Errorf("restarts = %d, want 1", st.Restarts)
	}
	call(t, h, "mcp__crashy__echo", `{}`)
	log := readLog(t, dataDir, "crashy")
	for _, want := range []string{"[lifecycle] spawned pid", "[lifecycle] ready in", "[lifecycle] exited: exit status 7", "[lifecycle] backoff", "[lifecycle] restart"} {
		if !strings.Contains(log, want) {
			t.Errorf("server log lacks %q:\n%s", want, log)
		}
	}
}

// Backoff grows while the server keeps failing, then starts again from the
// initial interval once the server stayed up for StableAfter.
func TestBackoffGrowsThenResets(t *testing.T) {
	onEvent, events := eventSink()
	policy := mcpvisor.RestartPolicy{
		InitialInterval:     10 * time.Millisecond,
		MaxInterval:         80 * time.Millisecond,
		Multiplier:          2,
		RandomizationFactor: -1,
		StableAfter:         150 * time.Millisecond,
		MaxRestarts:         1000,
		Window:              time.Minute,
	}
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent, Restart: policy}, mcptest("dies", "-exit-at-start", "1"))
	var delays []time.Duration
	for len(delays) < 5 {
		waitState(t, events, "dies", mcpvisor.StateBackoff)
		st := status(t, h, "dies")
		if st.State == mcpvisor.StateBackoff {
			delays = append(delays, st.NextRetry.Sub(st.Since))
		}
	}
	for i := 1; i < len(delays); i++ {
		if delays[i] < delays[i-1] && delays[i] < policy.MaxInterval-5*time.Millisecond {
			t.Errorf("backoff shrank while failing: %v", delays)
		}
	}
	if delays[len(delays)-1] < 4*policy.InitialInterval {
		t.Errorf("backoff did not grow: %v", delays)
	}

	// Replace it with a server that stays ready beyond StableAfter, then dies.
	if err := h.Register(context.Background(), mcptest("dies", "-crash-after-ms", "400")); err != nil {
		t.Fatal(err)
	}
	waitState(t, events, "dies", mcpvisor.StateReady)
	waitState(t, events, "dies", mcpvisor.StateBackoff)
	st := status(t, h, "dies")
	if d := st.NextRetry.Sub(st.Since); d > 2*policy.InitialInterval {
		t.Errorf("after %s of readiness the backoff is %v, want it reset to about %v", 400*time.Millisecond, d, policy.InitialInterval)
	}
}

func TestRestartIntensityThenReenable(t *testing.T) {
	onEvent, events := eventSink()
	policy := fastRestart
	policy.InitialInterval, policy.MaxInterval = time.Millisecond, 5*time.Millisecond
	policy.MaxRestarts, policy.Window = 3, time.Minute
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent, Restart: policy}, mcptest("storm", "-exit-at-start", "2"))
	ev := waitState(t, events, "storm", mcpvisor.StateFailed)
	if !strings.Contains(ev.Err, "gave up") {
		t.Errorf("failed state error %q does not say it gave up", ev.Err)
	}
	st := status(t, h, "storm")
	if st.Restarts != 3 {
		t.Errorf("restarts = %d, want 3 (the intensity limit)", st.Restarts)
	}
	if _, err := h.Call(context.Background(), "mcp__storm__echo", nil); !errors.Is(err, mcpvisor.ErrUnavailable) {
		t.Errorf("call to a failed server = %v, want ErrUnavailable", err)
	}
	// Re-enabling starts it again with a fresh history.
	if err := h.SetEnabled(context.Background(), "storm", true); err != nil {
		t.Fatal(err)
	}
	waitState(t, events, "storm", mcpvisor.StateStarting)
	waitState(t, events, "storm", mcpvisor.StateFailed)
}

func TestCallToRestartingServerSaysWhenToRetry(t *testing.T) {
	onEvent, events := eventSink()
	policy := fastRestart
	policy.InitialInterval, policy.MaxInterval = time.Hour, time.Hour
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent, Restart: policy}, mcptest("once", "-exit-at-start", "1"))
	waitState(t, events, "once", mcpvisor.StateBackoff)
	_, err := h.Call(context.Background(), "mcp__once__echo", nil)
	var ue *mcpvisor.UnavailableError
	if !errors.As(err, &ue) || ue.RetryAfter <= 0 || !strings.Contains(err.Error(), "retry after") {
		t.Fatalf("call during backoff = %v, want an UnavailableError with RetryAfter", err)
	}
}

func TestStartupTimeout(t *testing.T) {
	onEvent, events := eventSink()
	slow := mcptest("mute", "-hang-init")
	slow.StartupTimeout = mcpvisor.Duration(100 * time.Millisecond)
	dataDir := t.TempDir()
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent, DataDir: dataDir}, slow, mcptest("fine"))
	// The other server does not wait for the mute one.
	waitReady(t, h, "fine")
	ev := waitState(t, events, "mute", mcpvisor.StateBackoff)
	if !strings.Contains(ev.Err, "startup timeout") {
		t.Errorf("error %q does not say startup timeout", ev.Err)
	}
	waitLog(t, dataDir, "mute", "[lifecycle] startup timeout")
}

func TestRegisterUnregisterSetEnabledLive(t *testing.T) {
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent})
	ctx := context.Background()
	if err := h.Register(ctx, mcptest("live")); err != nil {
		t.Fatal(err)
	}
	// Usable at once: the call waits for the handshake.
	res := call(t, h, "mcp__live__pid", `{}`)
	pid, err := strconv.Atoi(strings.TrimSpace(res.Wire()))
	if err != nil {
		t.Fatalf("pid = %q", res.Wire())
	}

	if err := h.SetEnabled(ctx, "live", false); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("pid %d still running after SetEnabled(false) returned", pid)
	}
	if st := status(t, h, "live"); st.State != mcpvisor.StateDisabled || st.Enabled {
		t.Errorf("after disable: %+v", st)
	}
	if len(h.Tools()) != 0 {
		t.Errorf("a disabled server's tools are listed: %v", h.Tools())
	}
	if _, err := h.Call(ctx, "mcp__live__echo", nil); !errors.Is(err, mcpvisor.ErrUnavailable) {
		t.Errorf("call to a disabled server = %v, want ErrUnavailable", err)
	}

	if err := h.SetEnabled(ctx, "live", true); err != nil {
		t.Fatal(err)
	}
	res = call(t, h, "mcp__live__pid", `{}`)
	pid2, _ := strconv.Atoi(strings.TrimSpace(res.Wire()))
	if pid2 == pid || pid2 == 0 {
		t.Errorf("re-enabled server pid %d (was %d)", pid2, pid)
	}

	if err := h.Unregister(ctx, "live"); err != nil {
		t.Fatal(err)
	}
	if alive(pid2) {
		t.Errorf("pid %d still running after Unregister returned", pid2)
	}
	if _, err := h.Call(ctx, "mcp__live__echo", nil); !errors.Is(err, mcpvisor.ErrUnknownServer) {
		t.Errorf("call after Unregister = %v, want ErrUnknownServer", err)
	}
	if err := h.Unregister(ctx, "live"); !errors.Is(err, mcpvisor.ErrUnknownServer) {
		t.Errorf("second Unregister = %v, want ErrUnknownServer", err)
	}
	if err := h.Register(ctx, mcpvisor.ServerConfig{Name: "bad__name", Command: "x", Enabled: true}); err == nil {
		t.Error("Register accepted a server name with __")
	}
	_ = events
}

// alive reports whether pid is a running process (a zombie counts as gone:
// PID 1 in a container may never reap orphans).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}

func TestNoProcessOutlivesClose(t *testing.T) {
	dataDir := t.TempDir()
	wrapped := mcpvisor.ServerConfig{Name: "wrapped", Command: "sh", Args: []string{"-c", bin.mcptest + " -name wrapped -grandchild"}, Enabled: true}
	stubborn := mcptest("stubborn", "-ignore-sigterm")
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{
		Config:    &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{wrapped, stubborn}},
		DataDir:   dataDir,
		Logger:    slog.New(slog.DiscardHandler),
		StopGrace: 200 * time.Millisecond, TermGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, h)
	var pids []int
	pids = append(pids, status(t, h, "wrapped").PID, status(t, h, "stubborn").PID)
	res := call(t, h, "mcp__wrapped__spawn_grandchild", `{}`)
	gc, _ := strconv.Atoi(strings.TrimSpace(res.Wire()))
	pids = append(pids, gc)
	// The grandchild started at the wrapper's startup, from its stderr line.
	log := waitLog(t, dataDir, "wrapped", "grandchild pid")
	_, after, _ := strings.Cut(log, "grandchild pid ")
	if n, err := strconv.Atoi(strings.Fields(after)[0]); err == nil {
		pids = append(pids, n)
	}
	for _, p := range pids {
		if p == 0 || !alive(p) {
			t.Fatalf("pid %d not running before Close (pids %v)", p, pids)
		}
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, p := range pids {
		if alive(p) {
			t.Errorf("pid %d still running after Close", p)
		}
	}
	if err := h.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestStderrAndNotificationsReachTheServerLog(t *testing.T) {
	dataDir := t.TempDir()
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{DataDir: dataDir, OnEvent: onEvent}, mcptest("chatty", "-stderr-chatter", "5"))
	waitReady(t, h)
	call(t, h, "mcp__chatty__notify", `{}`)
	log := waitLog(t, dataDir, "chatty", "[warning]")
	if !strings.Contains(log, "[stderr]") {
		t.Errorf("no [stderr] lines in:\n%s", log)
	}
	for {
		ev := <-events
		// The log message reaches observers too, through the server's
		// actor; event/test comes from the reader. Either may come first.
		if ev.Kind == mcpvisor.EventNotification && ev.Method != "notifications/message" {
			if ev.Method != "event/test" || !strings.Contains(string(ev.Params), `"n":1`) {
				t.Errorf("event = %+v, want event/test {n:1}", ev)
			}
			break
		}
	}
}

func TestListChangedRefetchesKeepingKnownTools(t *testing.T) {
	// capped keeps two tools; after list_changed adds "extra", the two known
	// ones must stay, whatever position the server gives the new tool.
	capped := mcptest("capped")
	capped.IncludeTools = []string{"echo", "list_changed", "extra"}
	capped.MaxTools = 2
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent}, capped, mcptest("free"))
	waitReadyEvents(t, events, "capped", "free")
	if got := strings.Join(toolsOf(h, "capped"), ","); got != "echo,list_changed" {
		t.Fatalf("capped tools = %q", got)
	}
	n := len(toolsOf(h, "free"))
	call(t, h, "mcp__free__list_changed", `{}`)
	waitToolsEvent(t, events, "free")
	if got := len(toolsOf(h, "free")); got != n+1 {
		t.Fatalf("tools/list_changed: %d tools, want %d", got, n+1)
	}
	call(t, h, "mcp__free__extra", `{}`)

	call(t, h, "mcp__capped__list_changed", `{}`)
	waitToolsEvent(t, events, "capped")
	if got := strings.Join(toolsOf(h, "capped"), ","); got != "echo,list_changed" {
		t.Errorf("after list_changed capped tools = %q, want the known echo,list_changed", got)
	}
	if w := strings.Join(status(t, h, "capped").Warnings, ","); !strings.Contains(w, "left out") {
		t.Errorf("capped warnings %q do not say a tool was left out", w)
	}
}

// waitReadyEvents consumes events until every named server reported ready.
func waitReadyEvents(t *testing.T, events <-chan mcpvisor.Event, servers ...string) {
	t.Helper()
	left := map[string]bool{}
	for _, s := range servers {
		left[s] = true
	}
	timeout := time.After(30 * time.Second)
	for len(left) > 0 {
		select {
		case ev := <-events:
			if ev.Kind == mcpvisor.EventState && ev.State == mcpvisor.StateReady {
				delete(left, ev.Server)
			}
		case <-timeout:
			t.Fatalf("servers %v never became ready", left)
		}
	}
}

// waitToolsEvent waits for the next catalog change of server.
func waitToolsEvent(t *testing.T, events <-chan mcpvisor.Event, server string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Kind == mcpvisor.EventTools && ev.Server == server {
				return
			}
		case <-timeout:
			t.Fatalf("no tools event from %q", server)
		}
	}
}

func toolsOf(h *mcpvisor.Host, server string) []string {
	var out []string
	for _, t := range h.Tools() {
		if t.Server == server {
			out = append(out, t.Tool)
		}
	}
	return out
}

func TestIncludeExcludeAndDescriptionCap(t *testing.T) {
	inc := mcptest("inc", "-long-description", "20000") // over the default cap, 16 KiB
	inc.IncludeTools = []string{"echo", "pid"}
	exc := mcptest("exc")
	exc.ExcludeTools = []string{"crash"}
	h := openHost(t, mcpvisor.Options{}, inc, exc)
	waitReady(t, h)
	if got := strings.Join(toolsOf(h, "inc"), ","); got != "echo,pid" && got != "pid,echo" {
		t.Errorf("includeTools gave %q", got)
	}
	for _, tl := range h.Tools() {
		if tl.Server == "exc" && tl.Tool == "crash" {
			t.Error("excluded tool listed")
		}
		if tl.Server == "inc" && tl.Tool == "echo" && (len(tl.Description) > 16<<10 || !strings.HasSuffix(tl.Description, "[truncated]")) {
			t.Errorf("description of %d bytes not capped and marked", len(tl.Description))
		}
	}
	if _, err := h.Call(context.Background(), "mcp__exc__crash", nil); !errors.Is(err, mcpvisor.ErrUnknownTool) {
		t.Errorf("calling an excluded tool = %v, want ErrUnknownTool", err)
	}
}

func TestStructuredAndMediaResults(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcptest("m"))
	waitReady(t, h)
	res := call(t, h, "mcp__m__structured", `{}`)
	if res.Type != mcpvisor.ResultJSON || res.Wire() != `{"x":1}` {
		t.Errorf("structured = %s %q, want json {\"x\":1}", res.Type, res.Wire())
	}
	res = call(t, h, "mcp__m__image", `{}`)
	if len(res.Content) == 0 || res.Content[0].Type != "image" || !strings.Contains(res.Wire(), "image/png") {
		t.Errorf("image = %+v wire %q", res.Content, res.Wire())
	}
}

func TestNoGoroutineLeakAfterClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{
		Config:  &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{mcptest("a"), mcptest("b", "-hang-calls")}},
		DataDir: t.TempDir(),
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, h)
	call(t, h, "mcp__a__echo", `{}`)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, _ = h.Call(ctx, "mcp__b__echo", nil)
	cancel()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// A disabled server may reference variables this environment lacks: the
// host opens, lists it, and resolves it when it is enabled.
func TestDisabledServerWithUnsetVariable(t *testing.T) {
	env := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	later := mcpvisor.ServerConfig{Name: "later", Command: "${MCPTEST_BIN}", Args: []string{"-name", "later"}}
	h := openHost(t, mcpvisor.Options{LookupEnv: lookup}, later)
	if st := status(t, h, "later"); st.State != mcpvisor.StateDisabled {
		t.Fatalf("state %s, want disabled", st.State)
	}
	if err := h.SetEnabled(context.Background(), "later", true); err == nil || !strings.Contains(err.Error(), "MCPTEST_BIN") {
		t.Fatalf("enabling with the variable still unset = %v, want an error naming it", err)
	}
	env["MCPTEST_BIN"] = bin.mcptest
	if err := h.SetEnabled(context.Background(), "later", true); err != nil {
		t.Fatal(err)
	}
	call(t, h, "mcp__later__echo", `{}`)
}

// One server's unset ${VAR} is that server's problem: the file loads (a
// warning names the variable), the other server starts and answers, and
// the one that needs the variable is failed, never spawned, its status
// and a call to it naming the server, the field and the variable.
func TestUnsetVariableStopsOnlyItsServer(t *testing.T) {
	const unset = "MCPVISOR_TEST_SURELY_UNSET"
	if _, ok := os.LookupEnv(unset); ok {
		t.Fatalf("%s is set", unset)
	}
	cfg, err := mcpvisor.ParseConfig([]byte(`{"mcpServers": {
		"needs": {"command": ` + strconv.Quote(bin.mcptest) + `, "env": {"KEY": "${` + unset + `}"}},
		"fine": {"command": ` + strconv.Quote(bin.mcptest) + `}}}`))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	const why = `server "needs": field "env.KEY": variable ` + unset + ` is not set and has no default`
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], why) {
		t.Errorf("warnings %q, want one naming the variable", cfg.Warnings)
	}
	h := openHost(t, mcpvisor.Options{}, cfg.Servers...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.WaitSettled(ctx); err != nil {
		t.Fatalf("WaitSettled: %v", err)
	}
	if st := status(t, h, "fine"); st.State != mcpvisor.StateReady {
		t.Errorf("fine: %s (%s), want ready", st.State, st.LastError)
	}
	st := status(t, h, "needs")
	if st.State != mcpvisor.StateFailed || !st.Enabled || !strings.Contains(st.LastError, why) || st.PID != 0 || st.Restarts != 0 {
		t.Errorf("needs: %s enabled %v pid %d restarts %d (%q); want failed, enabled, never spawned, naming the variable",
			st.State, st.Enabled, st.PID, st.Restarts, st.LastError)
	}
	if res, err := h.Call(ctx, "mcp__fine__echo", json.RawMessage(`{"x":1}`)); err != nil || res.IsError {
		t.Errorf("call to fine: %v %+v", err, res)
	}
	_, err = h.Call(ctx, "mcp__needs__echo", nil)
	if !errors.Is(err, mcpvisor.ErrUnavailable) || !strings.Contains(err.Error(), why) {
		t.Errorf("call to needs: %v; want ErrUnavailable naming the variable", err)
	}
}
