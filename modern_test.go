package mcpvisor_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/mcphttptest"
	"github.com/mcpvisor/mcpvisor/internal/peers"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// These tests drive the 2026-07-28 ("modern") revision end to end: real
// go-sdk v1.8.0 servers (internal/peers/gosdk) as subprocesses over stdio
// and over Streamable HTTP on loopback, through the public Host API.

// modernVersion is the modern revision the host and the peers speak.
const modernVersion = "2026-07-28"

// modernTimeout bounds every wait of these tests; nothing sleeps.
const modernTimeout = 60 * time.Second

// modernTransports are the two ways to reach gosdkpeer; each returns the
// config of a server of its own named name.
var modernTransports = []struct {
	name   string
	server func(t *testing.T, name, era string, args ...string) mcpvisor.ServerConfig
}{
	{"stdio", modernStdio},
	{"http", modernHTTP},
}

func modernStdio(t *testing.T, name, era string, args ...string) mcpvisor.ServerConfig {
	bin, argv := peers.GoSDK(t, era, args...)
	return mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: bin, Args: argv, Enabled: true}
}

func modernHTTP(t *testing.T, name, era string, args ...string) mcpvisor.ServerConfig {
	return httpServer(name, peers.GoSDKHTTP(t, era, args...))
}

// forEachModernTransport runs test over stdio and over HTTP, in parallel.
func forEachModernTransport(t *testing.T, test func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig)) {
	for _, tr := range modernTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			test(t, func(name, era string, args ...string) mcpvisor.ServerConfig { return tr.server(t, name, era, args...) })
		})
	}
}

func modernCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), modernTimeout)
	t.Cleanup(cancel)
	return ctx
}

// modernCall calls tool with opts and fails the test on an error.
func modernCall(t *testing.T, h *mcpvisor.Host, tool, args string, opts mcpvisor.CallOptions) *mcpvisor.Result {
	t.Helper()
	res, err := h.CallWith(modernCtx(t), tool, json.RawMessage(args), opts)
	if err != nil {
		t.Fatalf("CallWith(%s, %s): %v", tool, args, err)
	}
	return res
}

// modernOpen opens a host with servers and waits until all are ready.
func modernOpen(t *testing.T, opts mcpvisor.Options, servers ...mcpvisor.ServerConfig) *mcpvisor.Host {
	t.Helper()
	h := openHost(t, opts, servers...)
	if err := h.WaitReady(modernCtx(t)); err != nil {
		for _, st := range h.Status() {
			t.Logf("status %s: %s %s", st.Name, st.State, st.LastError)
		}
		t.Fatalf("WaitReady: %v", err)
	}
	return h
}

// waitStatus waits, on Host.StatusChanged, until cond holds.
func waitStatus(t *testing.T, h *mcpvisor.Host, what string, cond func() bool) {
	t.Helper()
	ctx := modernCtx(t)
	for {
		changed := h.StatusChanged()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

// fieldNames is the field names of a form elicitation.
func fieldNames(req *mcpvisor.ElicitationRequest) string {
	var out []string
	for _, f := range req.Fields {
		out = append(out, f.Name)
	}
	return strings.Join(out, ",")
}

// elicitAnswers answers each field of a form with answers[field] and
// records the field names asked, in order.
type elicitAnswers struct {
	mu      sync.Mutex
	answers map[string]string
	asked   []string
	servers []string
	action  mcpvisor.ElicitationAction // zero: accept
}

func (e *elicitAnswers) handle(_ context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, fieldNames(req))
	e.servers = append(e.servers, req.Server)
	if e.action != "" && e.action != mcpvisor.ElicitAccept {
		return mcpvisor.ElicitationResponse{Action: e.action}, nil
	}
	content := map[string]any{}
	for _, f := range req.Fields {
		content[f.Name] = e.answers[f.Name]
	}
	return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: content}, nil
}

func (e *elicitAnswers) log() (asked, servers []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.asked), slices.Clone(e.servers)
}

// 1. Era detection, both ways, over both transports.

func TestModernEraDetection(t *testing.T) {
	t.Parallel()
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		for _, era := range []string{"modern", "dual"} {
			t.Run(era, func(t *testing.T) {
				t.Parallel()
				h := modernOpen(t, mcpvisor.Options{}, server("g", era))
				st := status(t, h, "g")
				if st.State != mcpvisor.StateReady || st.ProtocolVersion != modernVersion || st.ServerInfo.Name != "gosdkpeer" {
					t.Errorf("status: state %s, protocol %q, server %q; want ready, %s, gosdkpeer", st.State, st.ProtocolVersion, st.ServerInfo.Name, modernVersion)
				}
				if st.Capabilities.Tools == nil {
					t.Errorf("capabilities from server/discover lack tools: %+v", st.Capabilities)
				}
				for _, want := range []string{"echo", "add", "ask", "region"} {
					if !slices.Contains(toolsOf(h, "g"), want) {
						t.Errorf("tools %v lack %s", toolsOf(h, "g"), want)
					}
				}
				res := modernCall(t, h, "mcp__g__echo", `{"text":"hello, modern"}`, mcpvisor.CallOptions{})
				if res.IsError || res.Type != mcpvisor.ResultString || res.Text != "hello, modern" {
					t.Errorf("echo = %s %q (error %v), want string %q", res.Type, res.Text, res.IsError, "hello, modern")
				}
				res = modernCall(t, h, "mcp__g__add", `{"a":2,"b":40}`, mcpvisor.CallOptions{})
				if res.IsError || res.Type != mcpvisor.ResultJSON || res.Text != "2+40=42" {
					t.Errorf("add = %s %q (error %v), want json with text 2+40=42", res.Type, res.Text, res.IsError)
				}
				var sum struct{ Sum int64 }
				if err := json.Unmarshal(res.JSON, &sum); err != nil || sum.Sum != 42 {
					t.Errorf("add structuredContent %s, want {\"sum\":42}", res.JSON)
				}
			})
		}
	})
}

// A modern-only server refuses initialize: only server/discover gets it
// ready, so its log must show discover and no fallback.
func TestModernEraDetectionLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	modernOpen(t, mcpvisor.Options{DataDir: dir}, modernStdio(t, "g", "modern"))
	log := readLog(t, dir, "g")
	if !strings.Contains(log, "server/discover: protocol "+modernVersion) {
		t.Errorf("log does not say server/discover negotiated %s:\n%s", modernVersion, log)
	}
	if strings.Contains(log, "legacy") {
		t.Errorf("log mentions a legacy fallback for a modern-only server:\n%s", log)
	}
}

// A modern server that gives no answer within the 3 s the host waits for
// server/discover (npx fetching it on a first run) is still modern: the
// initialize sent then is refused, and server/discover's late answer
// decides. mcptest -slow-modern answers server/discover only once that
// initialize has arrived, so the test waits for the host, not a clock.
func TestModernEraSlowFirstAnswer(t *testing.T) {
	t.Parallel()
	h := modernOpen(t, mcpvisor.Options{}, mcptest("slow", "-slow-modern"))
	if st := status(t, h, "slow"); st.ProtocolVersion != modernVersion {
		t.Errorf("protocol %q, want %s: a slow modern server was taken for legacy", st.ProtocolVersion, modernVersion)
	}
	if res := modernCall(t, h, "mcp__slow__echo", `{"x":1}`, mcpvisor.CallOptions{}); res.IsError || res.Wire() != `{"x":1}` {
		t.Errorf("echo = %q (error %v)", res.Wire(), res.IsError)
	}
}

// Legacy servers still negotiate the initialize era.
func TestModernEraDetectionLegacy(t *testing.T) {
	t.Parallel()
	t.Run("stdio/notes", func(t *testing.T) {
		t.Parallel()
		h := modernOpen(t, mcpvisor.Options{}, mcpvisor.ServerConfig{Name: "notes", Command: bin.notes, Enabled: true})
		if st := status(t, h, "notes"); st.ProtocolVersion != protocol.ProtocolVersion || st.ServerInfo.Name != "notes" {
			t.Errorf("notes: protocol %q server %q, want %s notes", st.ProtocolVersion, st.ServerInfo.Name, protocol.ProtocolVersion)
		}
		if res := modernCall(t, h, "mcp__notes__add", `{"a":2,"b":40}`, mcpvisor.CallOptions{}); strings.TrimSpace(res.Wire()) != "42" {
			t.Errorf("notes add = %q, want 42", res.Wire())
		}
	})
	t.Run("stdio/mcptest", func(t *testing.T) {
		t.Parallel()
		h := modernOpen(t, mcpvisor.Options{}, mcptest("m"))
		if st := status(t, h, "m"); st.ProtocolVersion != protocol.ProtocolVersion {
			t.Errorf("mcptest: protocol %q, want %s", st.ProtocolVersion, protocol.ProtocolVersion)
		}
		if res := modernCall(t, h, "mcp__m__echo", `{"x":1}`, mcpvisor.CallOptions{}); res.IsError {
			t.Errorf("mcptest echo: tool error %q", res.Wire())
		}
	})
	t.Run("http/mcphttptest", func(t *testing.T) {
		t.Parallel()
		srv := mcphttptest.Start(t, &mcphttptest.Server{})
		h := modernOpen(t, mcpvisor.Options{}, httpServer("web", srv.URL))
		if st := status(t, h, "web"); st.ProtocolVersion != "2025-11-25" {
			t.Errorf("mcphttptest: protocol %q, want 2025-11-25", st.ProtocolVersion)
		}
		if res := modernCall(t, h, "mcp__web__echo", `{"x":1}`, mcpvisor.CallOptions{}); res.Wire() != `{"x":1}` {
			t.Errorf("mcphttptest echo = %q", res.Wire())
		}
	})
	// go-sdk with sessions serves only the legacy versions over HTTP: the
	// same dual-era peer must then be reached through initialize.
	t.Run("http/gosdk-stateful", func(t *testing.T) {
		t.Parallel()
		h := modernOpen(t, mcpvisor.Options{}, modernHTTP(t, "g", "dual", "-stateful"))
		if st := status(t, h, "g"); st.ProtocolVersion != "2025-11-25" {
			t.Errorf("stateful go-sdk: protocol %q, want 2025-11-25", st.ProtocolVersion)
		}
		if res := modernCall(t, h, "mcp__g__echo", `{"text":"hi"}`, mcpvisor.CallOptions{}); res.Text != "hi" {
			t.Errorf("stateful go-sdk echo = %q", res.Text)
		}
		// ask on a legacy session: the SDK sends elicitation/create requests.
		ans := &elicitAnswers{answers: map[string]string{"name": "Ada", "color": "red"}}
		h2 := modernOpen(t, mcpvisor.Options{Elicitation: ans.handle}, modernHTTP(t, "g2", "dual", "-stateful"))
		if res := modernCall(t, h2, "mcp__g2__ask", `{}`, mcpvisor.CallOptions{}); res.IsError || res.Text != "name=Ada color=red" {
			t.Errorf("legacy ask = %q (error %v), want name=Ada color=red", res.Text, res.IsError)
		}
	})
}

// @modelcontextprotocol/server-everything still works (skips when not
// installed).
func TestModernEraDetectionEverything(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		h := openEverything(t, mcpvisor.Options{}, server, "echo")
		st := status(t, h, everythingName)
		if !slices.Contains(protocol.SupportedVersions, st.ProtocolVersion) && !slices.Contains(protocol.ModernVersions, st.ProtocolVersion) {
			t.Errorf("server-everything negotiated %q", st.ProtocolVersion)
		}
		t.Logf("server-everything negotiated %s", st.ProtocolVersion)
		res := callEverything(t, h, "echo", `{"message":"hi"}`)
		if res.Text != "Echo: hi" {
			t.Errorf("echo = %q", res.Text)
		}
	})
}

// 2. Multi round-trip requests through Host.Call.

func TestModernMRTRAsk(t *testing.T) {
	t.Parallel()
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		ans := &elicitAnswers{answers: map[string]string{"name": "Ada", "color": "green"}}
		h := modernOpen(t, mcpvisor.Options{Elicitation: ans.handle}, server("g", "modern"))
		res := modernCall(t, h, "mcp__g__ask", `{}`, mcpvisor.CallOptions{})
		if res.IsError || res.Text != "name=Ada color=green" {
			t.Errorf("ask = %q (error %v), want %q", res.Text, res.IsError, "name=Ada color=green")
		}
		asked, servers := ans.log()
		if strings.Join(asked, ";") != "name;color" {
			t.Errorf("the handler was asked %q, want name then color, once each", asked)
		}
		if strings.Join(servers, ",") != "g,g" {
			t.Errorf("elicitations came from %v, want g twice", servers)
		}
		// The rounds are journaled as elicitations (names only).
		evs := waitEvents(t, h, mcpvisor.EventFilter{Server: "g", Method: mcpvisor.EventMethodElicitation}, 2)
		n := 0
		for _, ev := range evs {
			if ev.Method == mcpvisor.EventMethodElicitation {
				n++
				if strings.Contains(string(ev.Params), "Ada") || strings.Contains(string(ev.Params), "green") {
					t.Errorf("journal event holds an answer: %s", ev.Params)
				}
			}
		}
		if n != 2 {
			t.Errorf("%d elicitation events journaled, want 2", n)
		}
	})
}

// A call's own elicitation handler takes precedence over the host's.
func TestModernMRTRAskCallOptions(t *testing.T) {
	t.Parallel()
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		host := &elicitAnswers{answers: map[string]string{"name": "host", "color": "host"}}
		own := &elicitAnswers{answers: map[string]string{"name": "Grace", "color": "blue"}}
		h := modernOpen(t, mcpvisor.Options{Elicitation: host.handle}, server("g", "modern"))
		res := modernCall(t, h, "mcp__g__ask", `{}`, mcpvisor.CallOptions{Elicitation: own.handle})
		if res.IsError || res.Text != "name=Grace color=blue" {
			t.Errorf("ask = %q (error %v), want the call's own answers name=Grace color=blue", res.Text, res.IsError)
		}
		if asked, _ := own.log(); strings.Join(asked, ";") != "name;color" {
			t.Errorf("the call's handler was asked %q, want name;color", asked)
		}
		if asked, _ := host.log(); len(asked) != 0 {
			t.Errorf("the host's handler was asked %q, want nothing", asked)
		}
	})
}

func TestModernMRTRSample(t *testing.T) {
	t.Parallel()
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		var mu sync.Mutex
		var seen []string
		sampling := func(_ context.Context, server string, req *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
			mu.Lock()
			defer mu.Unlock()
			msg := ""
			if len(req.Messages) > 0 {
				msg = string(req.Messages[0].Content)
			}
			seen = append(seen, server+" "+msg)
			return &protocol.CreateMessageResult{Role: "assistant", Model: "test-model",
				Content: json.RawMessage(`{"type":"text","text":"hello from the model"}`)}, nil
		}
		h := modernOpen(t, mcpvisor.Options{Sampling: sampling}, server("g", "modern"))
		res := modernCall(t, h, "mcp__g__sample", `{}`, mcpvisor.CallOptions{})
		if res.IsError || res.Text != "hello from the model" {
			t.Errorf("sample = %q (error %v), want the model's text", res.Text, res.IsError)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 1 || !strings.HasPrefix(seen[0], "g ") || !strings.Contains(seen[0], "Say something.") {
			t.Errorf("sampling handler saw %q, want one request from g saying \"Say something.\"", seen)
		}
	})
}

func TestModernMRTRRoots(t *testing.T) {
	t.Parallel()
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		var mu sync.Mutex
		var asked []string
		roots := func(_ context.Context, server string) ([]protocol.Root, error) {
			mu.Lock()
			asked = append(asked, server)
			mu.Unlock()
			return []protocol.Root{{URI: "file:///tmp/a", Name: "a"}, {URI: "file:///tmp/b"}}, nil
		}
		h := modernOpen(t, mcpvisor.Options{Roots: roots}, server("g", "modern"))
		res := modernCall(t, h, "mcp__g__roots", `{}`, mcpvisor.CallOptions{})
		if res.IsError || res.Text != "file:///tmp/a,file:///tmp/b" {
			t.Errorf("roots = %q (error %v), want file:///tmp/a,file:///tmp/b", res.Text, res.IsError)
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(asked, ",") != "g" {
			t.Errorf("roots provider asked for %v, want g once", asked)
		}
	})
}

// Without the capability declared the modern server refuses: the
// per-request _meta carries the client's capabilities.
func TestModernMRTRCapabilityMissing(t *testing.T) {
	t.Parallel()
	h := modernOpen(t, mcpvisor.Options{}, modernStdio(t, "g", "modern"))
	_, err := h.Call(modernCtx(t), "mcp__g__ask", json.RawMessage(`{}`))
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != -32021 {
		t.Errorf("ask without elicitation declared: %v, want JSON-RPC error -32021", err)
	}
}

// 3. Parallel MRTR calls are isolated.

func TestModernMRTRParallel(t *testing.T) {
	t.Parallel()
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		// The host's handler only declares elicitation; it must never run.
		var hostAsked sync.Map
		hostHandler := func(_ context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
			hostAsked.Store(fieldNames(req), true)
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitDecline}, nil
		}
		h := modernOpen(t, mcpvisor.Options{Elicitation: hostHandler}, server("g", "modern"))
		const n = 8
		// Every call waits in its first round until all have reached it, so
		// the rounds of the eight calls interleave.
		var arrived sync.WaitGroup
		arrived.Add(n)
		all := make(chan struct{})
		go func() { arrived.Wait(); close(all) }()
		results := make([]string, n)
		errs := make([]error, n)
		asked := make([][]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var once sync.Once
				own := func(ctx context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
					asked[i] = append(asked[i], fieldNames(req))
					once.Do(arrived.Done)
					select {
					case <-all:
					case <-ctx.Done():
						return mcpvisor.ElicitationResponse{}, ctx.Err()
					}
					content := map[string]any{}
					for _, f := range req.Fields {
						content[f.Name] = fmt.Sprintf("%s-%d", f.Name, i)
					}
					return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: content}, nil
				}
				res, err := h.CallWith(modernCtx(t), "mcp__g__ask", json.RawMessage(`{}`), mcpvisor.CallOptions{Elicitation: own})
				if err != nil {
					errs[i] = err
					once.Do(arrived.Done)
					return
				}
				results[i] = res.Text
			}()
		}
		wg.Wait()
		for i := range n {
			want := fmt.Sprintf("name=name-%d color=color-%d", i, i)
			if errs[i] != nil || results[i] != want {
				t.Errorf("call %d = %q, %v; want %q", i, results[i], errs[i], want)
			}
			if strings.Join(asked[i], ";") != "name;color" {
				t.Errorf("call %d's handler was asked %q, want name;color", i, asked[i])
			}
		}
		hostAsked.Range(func(k, _ any) bool {
			t.Errorf("the host's handler was asked %q", k)
			return true
		})
	})
}

// 4. A declined elicitation.

func TestModernMRTRDecline(t *testing.T) {
	t.Parallel()
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		ans := &elicitAnswers{action: mcpvisor.ElicitDecline}
		h := modernOpen(t, mcpvisor.Options{Elicitation: ans.handle}, server("g", "modern"))
		res, err := h.Call(modernCtx(t), "mcp__g__ask", json.RawMessage(`{}`))
		// gosdkpeer answers a declined round with a tool error naming it.
		if err != nil {
			t.Fatalf("ask declined: %v, want the server's tool error", err)
		}
		if !res.IsError || res.Text != `ask: elicitation "name" answered "decline"` {
			t.Errorf("ask declined = %q (error %v), want the tool error %q", res.Text, res.IsError, `ask: elicitation "name" answered "decline"`)
		}
		if asked, _ := ans.log(); strings.Join(asked, ";") != "name" {
			t.Errorf("the handler was asked %q, want name once", asked)
		}
	})
}

// 5. Options.MaxInputRounds.

func TestModernMRTRMaxInputRounds(t *testing.T) {
	t.Parallel()
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		ans := &elicitAnswers{answers: map[string]string{"name": "Ada", "color": "green"}}
		h := modernOpen(t, mcpvisor.Options{Elicitation: ans.handle, MaxInputRounds: 1}, server("g", "modern"))
		res, err := h.Call(modernCtx(t), "mcp__g__ask", json.RawMessage(`{}`))
		if !errors.Is(err, mcpvisor.ErrInputRounds) {
			t.Errorf("ask with MaxInputRounds 1 = %+v, %v; want ErrInputRounds", res, err)
		}
		if asked, _ := ans.log(); strings.Join(asked, ";") != "name" {
			t.Errorf("the handler was asked %q, want only the first round (name)", asked)
		}
		// Two rounds are exactly what ask needs.
		ans2 := &elicitAnswers{answers: map[string]string{"name": "Ada", "color": "green"}}
		h2 := modernOpen(t, mcpvisor.Options{Elicitation: ans2.handle, MaxInputRounds: 2}, server("g2", "modern"))
		if res := modernCall(t, h2, "mcp__g2__ask", `{}`, mcpvisor.CallOptions{}); res.Text != "name=Ada color=green" {
			t.Errorf("ask with MaxInputRounds 2 = %q", res.Text)
		}
	})
}

// 6. SEP-2243 headers over HTTP.

func TestModernHTTPHeaders(t *testing.T) {
	t.Parallel()
	h := modernOpen(t, mcpvisor.Options{},
		modernHTTP(t, "web", "modern"),
		modernStdio(t, "pipe", "modern"))
	region := func(server, args string) string {
		t.Helper()
		res := modernCall(t, h, "mcp__"+server+"__region", args, mcpvisor.CallOptions{})
		if res.IsError {
			t.Errorf("region %s: tool error %q", args, res.Text)
		}
		return res.Text
	}
	if got := region("web", `{"region":"eu-west1","query":"q"}`); got != "region=eu-west1" {
		t.Errorf("region over HTTP = %q, want region=eu-west1", got)
	}
	// An absent argument sends no header (go-sdk would refuse a header
	// for an absent parameter with 400).
	if got := region("web", `{"query":"q"}`); got != "region=none" {
		t.Errorf("region without the argument = %q, want region=none", got)
	}
	// stdio has no headers.
	if got := region("pipe", `{"region":"eu-west1","query":"q"}`); got != "region=none" {
		t.Errorf("region over stdio = %q, want region=none", got)
	}
	// A non-ASCII value goes as =?base64?…?=. go-sdk checks it against the
	// body after decoding (a mismatch would be a 400 -32020), but hands the
	// handler the raw header (req.Extra.Header), so the tool echoes the
	// encoded form: decoding it must give the value back.
	for _, v := range []string{"zürich-1", " padded ", "=?base64?eA==?="} {
		args, _ := json.Marshal(map[string]string{"region": v, "query": "q"})
		got := region("web", string(args))
		enc, ok := strings.CutPrefix(got, "region=")
		if !ok {
			t.Errorf("region %q = %q", v, got)
			continue
		}
		want := "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		if enc != want {
			t.Errorf("region %q: the server saw Mcp-Param-Region %q, want %q", v, enc, want)
			continue
		}
		b64, _ := strings.CutSuffix(strings.TrimPrefix(enc, "=?base64?"), "?=")
		dec, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || string(dec) != v {
			t.Errorf("region %q: header %q decodes to %q (%v)", v, enc, dec, err)
		}
	}
}

// 7. ttlMs caching and list changes.

func TestModernTTL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	before := time.Now()
	h := modernOpen(t, mcpvisor.Options{DataDir: dir}, modernStdio(t, "g", "modern", "-ttl-ms", "2000"))
	after := time.Now()
	exp := status(t, h, "g").CatalogExpires
	if exp.IsZero() {
		t.Fatal("CatalogExpires not set for a tools/list with ttlMs 2000")
	}
	if exp.Before(before.Add(2*time.Second)) || exp.After(after.Add(2*time.Second)) {
		t.Errorf("CatalogExpires %v is not 2s after the listing (between %v and %v)", exp, before.Add(2*time.Second), after.Add(2*time.Second))
	}

	// add_tool: the server sends tools/list_changed on subscriptions/listen.
	exp0 := status(t, h, "g").CatalogExpires
	added := time.Now()
	if res := modernCall(t, h, "mcp__g__add_tool", `{"name":"late"}`, mcpvisor.CallOptions{}); res.IsError {
		t.Fatalf("add_tool: %q", res.Text)
	}
	waitStatus(t, h, "the tool late", func() bool { return slices.Contains(toolsOf(h, "g"), "late") })
	seen := time.Now()
	t.Logf("late listed %v after add_tool was sent, %v before the catalog's ttl ended", seen.Sub(added), exp0.Sub(seen))
	log := readLog(t, dir, "g")
	if !strings.Contains(log, "subscriptions/listen acknowledged") {
		t.Errorf("subscriptions/listen was never acknowledged:\n%s", log)
	}
	if !seen.Before(exp0) {
		// Only a ttl refetch could have brought it: list_changed was missed.
		t.Errorf("late listed at %v, not before the ttl ended (%v): tools/list_changed on subscriptions/listen did not refresh the catalog", seen, exp0)
	}
	if res := modernCall(t, h, "mcp__g__late", `{"text":"x"}`, mcpvisor.CallOptions{}); res.Text != "x" {
		t.Errorf("late = %q, want x", res.Text)
	}

	// The ttl refetch: once the catalog expires the host lists the tools
	// again, and CatalogExpires moves on.
	exp1 := status(t, h, "g").CatalogExpires
	waitStatus(t, h, "a ttl refetch", func() bool { return status(t, h, "g").CatalogExpires.After(exp1) })
	exp2 := status(t, h, "g").CatalogExpires
	if d := exp2.Sub(exp1); d < time.Second {
		t.Errorf("CatalogExpires moved from %v to %v, less than a ttl period", exp1, exp2)
	}
}

// 8. A hung modern server.

func TestModernHang(t *testing.T) {
	t.Parallel()
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		h := modernOpen(t, mcpvisor.Options{}, server("a", "modern"), server("b", "modern"))
		echo := func(s string) {
			t.Helper()
			if res := modernCall(t, h, "mcp__"+s+"__echo", `{"text":"`+s+`"}`, mcpvisor.CallOptions{}); res.Text != s {
				t.Errorf("echo on %s = %q", s, res.Text)
			}
		}
		start := time.Now()
		_, err := h.CallWith(modernCtx(t), "mcp__a__hang", json.RawMessage(`{}`), mcpvisor.CallOptions{Timeout: 200 * time.Millisecond})
		if !errors.Is(err, mcpvisor.ErrTimeout) {
			t.Errorf("hang with a 200ms timeout: %v, want ErrTimeout", err)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("hang timed out after %v", d)
		}
		echo("a")
		echo("b")

		// Now a hang that stays in flight while the others go on.
		base := h.PendingCalls()["a"]
		ctx, cancel := context.WithCancel(modernCtx(t))
		done := make(chan error, 1)
		go func() {
			_, err := h.CallWith(ctx, "mcp__a__hang", json.RawMessage(`{}`), mcpvisor.CallOptions{Timeout: time.Minute})
			done <- err
		}()
		for deadline := modernCtx(t); h.PendingCalls()["a"] <= base; {
			// Each turn is a real call; the loop ends once the hang is in
			// flight on a's connection.
			echo("a")
			if deadline.Err() != nil {
				t.Fatal("the hang never went out")
			}
		}
		echo("a")
		echo("b")
		select {
		case err := <-done:
			t.Fatalf("hang returned while it should hang: %v", err)
		default:
		}
		cancel()
		if err := <-done; !errors.Is(err, mcpvisor.ErrCancelled) && !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled hang: %v, want ErrCancelled", err)
		}
		echo("a")
		for _, s := range []string{"a", "b"} {
			if st := status(t, h, s); st.State != mcpvisor.StateReady || st.Restarts != 0 {
				t.Errorf("%s: state %s, %d restarts; want ready, never restarted", s, st.State, st.Restarts)
			}
		}
	})
}

// 9. Resources and prompts on a modern server.

func TestModernResourcesPrompts(t *testing.T) {
	t.Parallel()
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		h := modernOpen(t, mcpvisor.Options{}, server("g", "modern"))
		ctx := modernCtx(t)
		list, err := h.Resources(ctx, "g")
		if err != nil || len(list) != 1 || list[0].URI != "peer://static" {
			t.Errorf("Resources = %+v, %v; want peer://static", list, err)
		}
		contents, err := h.ReadResource(ctx, "g", "peer://static")
		if err != nil || len(contents) != 1 || contents[0].Text != "static" || contents[0].URI != "peer://static" {
			t.Errorf("ReadResource(peer://static) = %+v, %v; want text static", contents, err)
		}
		_, err = h.ReadResource(ctx, "g", "peer://missing")
		if !errors.Is(err, mcpvisor.ErrResourceNotFound) {
			t.Errorf("ReadResource(peer://missing) = %v, want ErrResourceNotFound", err)
		}
		prompts, err := h.Prompts(ctx, "g")
		if err != nil || len(prompts) != 2 || prompts[0].Name != "greet" || prompts[1].Name != "topic" {
			t.Errorf("Prompts = %+v, %v; want greet and topic", prompts, err)
		}
		p, err := h.GetPrompt(ctx, "g", "greet", map[string]string{"name": "Ada"})
		if err != nil {
			t.Fatalf("GetPrompt(greet): %v", err)
		}
		if len(p.Messages) != 1 || p.Messages[0].Role != "user" || p.Messages[0].Content.Text != "Hello, Ada!" {
			t.Errorf("GetPrompt(greet) = %+v, want one user message Hello, Ada!", p.Messages)
		}
	})
}

// More of the modern path: the corners of the rounds, restarts that change
// era, list changes over HTTP, and the legacy-origin cache.

// The time a person takes to answer is not the server's: each round has the
// call timeout of its own, and none runs while the handler answers.
func TestModernMRTRTimeoutStandsStill(t *testing.T) {
	t.Parallel()
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		const timeout = 300 * time.Millisecond
		slowPerson := func(ctx context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
			// The scenario itself, not synchronisation: a person who takes
			// twice the call timeout to answer each question.
			select {
			case <-time.After(2 * timeout):
			case <-ctx.Done():
				return mcpvisor.ElicitationResponse{}, ctx.Err()
			}
			content := map[string]any{}
			for _, f := range req.Fields {
				content[f.Name] = "slow-" + f.Name
			}
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: content}, nil
		}
		h := modernOpen(t, mcpvisor.Options{Elicitation: slowPerson}, server("g", "modern"))
		res := modernCall(t, h, "mcp__g__ask", `{}`, mcpvisor.CallOptions{Timeout: timeout})
		if res.Text != "name=slow-name color=slow-color" {
			t.Errorf("ask = %q, want name=slow-name color=slow-color", res.Text)
		}
	})
}

// The built-in inbox answers the rounds too.
func TestModernMRTRInbox(t *testing.T) {
	t.Parallel()
	h := modernOpen(t, mcpvisor.Options{Inbox: true}, modernStdio(t, "g", "modern"))
	done := make(chan *mcpvisor.Result, 1)
	errc := make(chan error, 1)
	go func() {
		res, err := h.Call(modernCtx(t), "mcp__g__ask", json.RawMessage(`{}`))
		if err != nil {
			errc <- err
			return
		}
		done <- res
	}()
	ctx := modernCtx(t)
	var asked []string
	for _, answer := range []string{"Inbox", "teal"} {
		var req mcpvisor.ElicitationRequest
		for {
			changed := h.ElicitationsChanged()
			if pending := h.Elicitations(); len(pending) > 0 {
				req = pending[0]
				break
			}
			select {
			case <-changed:
			case err := <-errc:
				t.Fatalf("ask: %v", err)
			case <-ctx.Done():
				t.Fatal("no elicitation reached the inbox")
			}
		}
		asked = append(asked, fieldNames(&req))
		if req.Server != "g" || len(req.Fields) != 1 {
			t.Fatalf("inbox elicitation %+v", req)
		}
		if err := h.ResolveElicitation(req.ID, mcpvisor.ElicitAccept, map[string]any{req.Fields[0].Name: answer}); err != nil {
			t.Fatalf("ResolveElicitation: %v", err)
		}
	}
	select {
	case res := <-done:
		if res.Text != "name=Inbox color=teal" {
			t.Errorf("ask = %q, want name=Inbox color=teal", res.Text)
		}
	case err := <-errc:
		t.Fatalf("ask: %v", err)
	case <-ctx.Done():
		t.Fatal("ask never returned")
	}
	if strings.Join(asked, ";") != "name;color" {
		t.Errorf("the inbox got %q, want name;color", asked)
	}
}

// A call's own sampler takes precedence over the host's; with CallSampling
// the host declares sampling for calls that bring their own.
func TestModernMRTRSampleCallOptions(t *testing.T) {
	t.Parallel()
	sampler := func(text string, n *int, mu *sync.Mutex) mcpvisor.SamplingHandler {
		return func(context.Context, string, *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
			mu.Lock()
			*n++
			mu.Unlock()
			b, _ := json.Marshal(map[string]string{"type": "text", "text": text})
			return &protocol.CreateMessageResult{Role: "assistant", Model: "m", Content: b}, nil
		}
	}
	forEachModernTransport(t, func(t *testing.T, server func(name, era string, args ...string) mcpvisor.ServerConfig) {
		var mu sync.Mutex
		var hostN, callN int
		h := modernOpen(t, mcpvisor.Options{Sampling: sampler("host", &hostN, &mu)}, server("g", "modern"))
		res := modernCall(t, h, "mcp__g__sample", `{}`, mcpvisor.CallOptions{Sampling: sampler("call", &callN, &mu)})
		if res.Text != "call" {
			t.Errorf("sample with a call's own sampler = %q, want call", res.Text)
		}
		h2 := modernOpen(t, mcpvisor.Options{CallSampling: true}, server("g2", "modern"))
		res = modernCall(t, h2, "mcp__g2__sample", `{}`, mcpvisor.CallOptions{Sampling: sampler("call", &callN, &mu)})
		if res.Text != "call" {
			t.Errorf("sample with CallSampling = %q, want call", res.Text)
		}
		mu.Lock()
		defer mu.Unlock()
		if hostN != 0 || callN != 2 {
			t.Errorf("host sampler ran %d times, call samplers %d; want 0 and 2", hostN, callN)
		}
	})
}

// A call's handler that passes hands the round on to the host's.
func TestModernMRTRElicitationPassed(t *testing.T) {
	t.Parallel()
	host := &elicitAnswers{answers: map[string]string{"name": "Host", "color": "grey"}}
	var passed []string
	var mu sync.Mutex
	own := func(_ context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		passed = append(passed, fieldNames(req))
		if fieldNames(req) == "color" {
			return mcpvisor.ElicitationResponse{}, mcpvisor.ErrElicitationPassed
		}
		return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: map[string]any{"name": "Own"}}, nil
	}
	h := modernOpen(t, mcpvisor.Options{Elicitation: host.handle}, modernStdio(t, "g", "modern"))
	res := modernCall(t, h, "mcp__g__ask", `{}`, mcpvisor.CallOptions{Elicitation: own})
	if res.Text != "name=Own color=grey" {
		t.Errorf("ask = %q, want name=Own color=grey", res.Text)
	}
	if asked, _ := host.log(); strings.Join(asked, ";") != "color" {
		t.Errorf("the host's handler was asked %q, want color only", asked)
	}
}

// The caller's context ends while a round is being answered: the call
// fails with ErrCancelled, as every cancelled call does, and no further
// round is asked.
func TestModernMRTRCancelled(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		tool string
		opts func(cancel context.CancelFunc) mcpvisor.Options
	}{
		{"elicitation", "ask", func(cancel context.CancelFunc) mcpvisor.Options {
			return mcpvisor.Options{Elicitation: func(ctx context.Context, _ *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
				cancel()
				<-ctx.Done()
				return mcpvisor.ElicitationResponse{}, ctx.Err()
			}}
		}},
		{"sampling", "sample", func(cancel context.CancelFunc) mcpvisor.Options {
			return mcpvisor.Options{Sampling: func(ctx context.Context, _ string, _ *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
				cancel()
				<-ctx.Done()
				return nil, ctx.Err()
			}}
		}},
		{"roots", "roots", func(cancel context.CancelFunc) mcpvisor.Options {
			return mcpvisor.Options{Roots: func(ctx context.Context, _ string) ([]protocol.Root, error) {
				cancel()
				<-ctx.Done()
				return nil, ctx.Err()
			}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(modernCtx(t))
			defer cancel()
			h := modernOpen(t, tc.opts(cancel), modernStdio(t, "g", "modern"))
			_, err := h.Call(ctx, "mcp__g__"+tc.tool, json.RawMessage(`{}`))
			if !errors.Is(err, mcpvisor.ErrCancelled) {
				t.Errorf("%s cancelled during its round: %v (context.Canceled: %v), want ErrCancelled", tc.tool, err, errors.Is(err, context.Canceled))
			}
			// The server is fine.
			if res := modernCall(t, h, "mcp__g__echo", `{"text":"still"}`, mcpvisor.CallOptions{}); res.Text != "still" {
				t.Errorf("echo after the cancel = %q", res.Text)
			}
		})
	}
}

// A modern stdio server that dies is restarted and probed again.
func TestModernRestart(t *testing.T) {
	t.Parallel()
	h := modernOpen(t, mcpvisor.Options{}, modernStdio(t, "g", "modern"))
	pid := status(t, h, "g").PID
	if pid == 0 {
		t.Fatal("no pid")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitNewIncarnation(t, h, "g", pid)
	st := status(t, h, "g")
	if st.PID == pid || st.ProtocolVersion != modernVersion || st.Restarts == 0 {
		t.Errorf("after the kill: pid %d (was %d), protocol %q, %d restarts", st.PID, pid, st.ProtocolVersion, st.Restarts)
	}
	if res := modernCall(t, h, "mcp__g__echo", `{"text":"back"}`, mcpvisor.CallOptions{}); res.Text != "back" {
		t.Errorf("echo after the restart = %q", res.Text)
	}
}

// waitNewIncarnation waits until server is ready again in a process other
// than pid.
func waitNewIncarnation(t *testing.T, h *mcpvisor.Host, server string, pid int) {
	t.Helper()
	waitStatus(t, h, server+" restarted", func() bool {
		st := status(t, h, server)
		return st.State == mcpvisor.StateReady && st.PID != 0 && st.PID != pid
	})
}

// eraSwitcher writes a script that runs first and, from its second start
// on, second: a server whose era changes across a restart.
func eraSwitcher(t *testing.T, first, second []string) mcpvisor.ServerConfig {
	dir := t.TempDir()
	quote := func(argv []string) string {
		var q []string
		for _, a := range argv {
			q = append(q, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
		}
		return strings.Join(q, " ")
	}
	marker := filepath.Join(dir, "started")
	script := "#!/bin/sh\nif [ -e '" + marker + "' ]; then exec " + quote(second) + "; fi\n: > '" + marker + "'\nexec " + quote(first) + "\n"
	path := filepath.Join(dir, "server.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return mcpvisor.ServerConfig{Name: "s", Type: "stdio", Command: path, Enabled: true}
}

// Legacy, then modern after a crash: the era is found again for each
// incarnation.
func TestModernRestartChangesEra(t *testing.T) {
	t.Parallel()
	gbin, gargs := peers.GoSDK(t, "modern")
	modern := append([]string{gbin}, gargs...)
	legacy := []string{bin.mcptest, "-name", "s"}

	t.Run("legacy-to-modern", func(t *testing.T) {
		t.Parallel()
		h := modernOpen(t, mcpvisor.Options{}, eraSwitcher(t, legacy, modern))
		st := status(t, h, "s")
		if st.ProtocolVersion != protocol.ProtocolVersion {
			t.Fatalf("first incarnation: protocol %q, want %s", st.ProtocolVersion, protocol.ProtocolVersion)
		}
		_, _ = h.Call(modernCtx(t), "mcp__s__crash", json.RawMessage(`{}`))
		waitNewIncarnation(t, h, "s", st.PID)
		if v := status(t, h, "s").ProtocolVersion; v != modernVersion {
			t.Errorf("second incarnation: protocol %q, want %s", v, modernVersion)
		}
		if res := modernCall(t, h, "mcp__s__add", `{"a":1,"b":2}`, mcpvisor.CallOptions{}); res.Text != "1+2=3" {
			t.Errorf("add on the modern incarnation = %q", res.Text)
		}
	})
	t.Run("modern-to-legacy", func(t *testing.T) {
		t.Parallel()
		h := modernOpen(t, mcpvisor.Options{}, eraSwitcher(t, modern, legacy))
		st := status(t, h, "s")
		if st.ProtocolVersion != modernVersion {
			t.Fatalf("first incarnation: protocol %q, want %s", st.ProtocolVersion, modernVersion)
		}
		if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitNewIncarnation(t, h, "s", st.PID)
		if v := status(t, h, "s").ProtocolVersion; v != protocol.ProtocolVersion {
			t.Errorf("second incarnation: protocol %q, want %s", v, protocol.ProtocolVersion)
		}
		if res := modernCall(t, h, "mcp__s__echo", `{"x":1}`, mcpvisor.CallOptions{}); res.IsError {
			t.Errorf("echo on the legacy incarnation: %q", res.Wire())
		}
	})
}

// tools/list_changed over HTTP: on subscriptions/listen, the stream of a
// stateless server; there is no ttl here, so nothing else could bring it.
func TestModernListChangedHTTP(t *testing.T) {
	t.Parallel()
	h := modernOpen(t, mcpvisor.Options{}, modernHTTP(t, "web", "modern"))
	if !status(t, h, "web").CatalogExpires.IsZero() {
		t.Errorf("CatalogExpires set without a ttl: %v", status(t, h, "web").CatalogExpires)
	}
	if res := modernCall(t, h, "mcp__web__add_tool", `{"name":"later"}`, mcpvisor.CallOptions{}); res.IsError {
		t.Fatalf("add_tool: %q", res.Text)
	}
	waitStatus(t, h, "the tool later", func() bool { return slices.Contains(toolsOf(h, "web"), "later") })
	if res := modernCall(t, h, "mcp__web__later", `{"text":"y"}`, mcpvisor.CallOptions{}); res.Text != "y" {
		t.Errorf("later = %q", res.Text)
	}
}

// The legacy verdict of one HTTP server must not decide the era of another
// endpoint that happens to share its origin (scheme://host:port).
func TestModernEraOriginCache(t *testing.T) {
	t.Parallel()
	legacySrv := mcphttptest.Start(t, &mcphttptest.Server{})
	modernURL := peers.GoSDKHTTP(t, "dual")
	proxy := func(target string) http.Handler {
		u, err := url.Parse(target)
		if err != nil {
			t.Fatal(err)
		}
		rp := &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(u)
				r.Out.URL.Path = u.Path
				r.Out.Host = u.Host
			},
			FlushInterval: -1,
		}
		return rp
	}
	mux := http.NewServeMux()
	mux.Handle("/legacy/mcp", proxy(legacySrv.URL))
	mux.Handle("/modern/mcp", proxy(modernURL))
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)

	h := modernOpen(t, mcpvisor.Options{}, httpServer("old", front.URL+"/legacy/mcp"))
	if v := status(t, h, "old").ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("legacy endpoint: protocol %q", v)
	}
	ctx := modernCtx(t)
	if err := h.Register(ctx, httpServer("new", front.URL+"/modern/mcp")); err != nil {
		t.Fatal(err)
	}
	if err := h.WaitReady(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if v := status(t, h, "new").ProtocolVersion; v != modernVersion {
		t.Errorf("a dual-era endpoint on the origin of a legacy one negotiated %q, want %s (never probed with server/discover)", v, modernVersion)
	}
	// Control: the same endpoint in a host that has seen no legacy server.
	h2 := modernOpen(t, mcpvisor.Options{}, httpServer("new", front.URL+"/modern/mcp"))
	if v := status(t, h2, "new").ProtocolVersion; v != modernVersion {
		t.Errorf("control: dual-era endpoint behind the proxy negotiated %q, want %s", v, modernVersion)
	}
}

// resources/read, prompts/get and forwarded requests pass the one request
// pipeline: the embedder's stages see them, the history keeps them, and a
// prompt's input rounds are the input stage's, answered by the host's
// handler.
func TestRequestPipelineSeesEveryMethod(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	observe := func(next mcpvisor.CallFunc) mcpvisor.CallFunc {
		return func(ctx context.Context, c *mcpvisor.Call) (*mcpvisor.Result, error) {
			res, err := next(ctx, c)
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s %s %q %v", c.Method, c.Server, c.Name, err == nil))
			mu.Unlock()
			return res, err
		}
	}
	ans := &elicitAnswers{answers: map[string]string{"topic": "go"}}
	dir := t.TempDir()
	h := modernOpen(t, mcpvisor.Options{DataDir: dir, Elicitation: ans.handle, CallMiddleware: []mcpvisor.CallMiddleware{observe}},
		modernStdio(t, "g", "modern"))
	ctx := modernCtx(t)

	if _, err := h.ReadResource(ctx, "g", "peer://static"); err != nil {
		t.Errorf("ReadResource: %v", err)
	}
	p, err := h.GetPrompt(ctx, "g", "topic", nil)
	if err != nil || len(p.Messages) == 0 || !strings.Contains(p.Messages[0].Content.Text, "go") {
		t.Errorf("GetPrompt(topic) = %+v, %v; want a prompt about the topic the handler gave", p, err)
	}
	if asked, _ := ans.log(); strings.Join(asked, ";") != "topic" {
		t.Errorf("the handler was asked %q, want topic once", asked)
	}
	raw, err := h.Forward(ctx, "g", protocol.MethodPromptsGet, json.RawMessage(`{"name":"greet","arguments":{"name":"Ada"}}`), mcpvisor.ForwardOptions{})
	if err != nil || !strings.Contains(string(raw), "Hello, Ada!") {
		t.Errorf("Forward(prompts/get greet) = %s, %v", raw, err)
	}
	if _, err := h.ReadResource(ctx, "g", "peer://missing"); !errors.Is(err, mcpvisor.ErrResourceNotFound) {
		t.Errorf("ReadResource(peer://missing) = %v, want ErrResourceNotFound", err)
	}

	mu.Lock()
	want := []string{
		`resources/read g "peer://static" true`,
		`prompts/get g "topic" true`,
		`prompts/get g "greet" true`,
		`resources/read g "peer://missing" false`,
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("requests seen by the middleware (-want +got):\n%s", diff)
	}
	mu.Unlock()

	// The history has each, by method and subject (read once the journal
	// has committed everything, at Close).
	h = reopen(t, h, dir, mcpvisor.Options{})
	recs, err := h.Journal().History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall, Server: "g"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Method+" "+r.Tool+" "+r.Outcome)
	}
	wantHist := []string{"resources/read peer://static ok", "prompts/get topic ok", "prompts/get greet ok", "resources/read peer://missing error"}
	if diff := cmp.Diff(wantHist, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}
