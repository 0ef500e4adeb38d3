package mcpvisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/peers"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Servers with "prefix": false, and servers with a pinned protocolVersion,
// as real subprocesses.

func unprefixed(sc mcpvisor.ServerConfig) mcpvisor.ServerConfig {
	off := false
	sc.Prefix = &off
	return sc
}

// pidOf calls a pid tool and returns the pid it answers.
func pidOf(t *testing.T, res *mcpvisor.Result) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(res.Text))
	if err != nil || res.IsError {
		t.Fatalf("pid tool answered %q (error %v)", res.Text, res.IsError)
	}
	return pid
}

func TestUnprefixedServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := openHost(t, mcpvisor.Options{DataDir: dir}, unprefixed(mcptest("m")), mcptest("n"))
	waitReady(t, h)
	tools := toolNames(h.Tools())
	for _, want := range []string{"echo", "pid", "mcp__n__echo", "mcp__n__pid"} {
		if !slices.Contains(tools, want) {
			t.Errorf("Tools() %v lack %s", tools, want)
		}
	}
	for _, name := range tools {
		if strings.HasPrefix(name, "mcp__m__") {
			t.Errorf("Tools() lists %s: m's tools go by their own names", name)
		}
	}
	for _, tool := range h.Tools() {
		if tool.Name == "echo" && (tool.Server != "m" || tool.Tool != "echo" || tool.MCP().Name != "echo") {
			t.Errorf("echo: %+v, MCP name %q; want server m, tool echo", tool, tool.MCP().Name)
		}
	}

	// A bare name routes to m; the namespaced name still does.
	mPID := status(t, h, "m").PID
	if got := pidOf(t, call(t, h, "pid", `{}`)); got != mPID {
		t.Errorf("pid by its own name answered %d, want m's %d", got, mPID)
	}
	if got := pidOf(t, call(t, h, "mcp__m__pid", `{}`)); got != mPID {
		t.Errorf("mcp__m__pid answered %d, want m's %d", got, mPID)
	}
	if got := pidOf(t, call(t, h, "mcp__n__pid", `{}`)); got != status(t, h, "n").PID {
		t.Errorf("mcp__n__pid answered %d, want n's", got)
	}
	if res := call(t, h, "echo", `{"x":1}`); res.Wire() != `{"x":1}` {
		t.Errorf("echo = %q", res.Wire())
	}
	ctx := modernCtx(t)
	if _, err := h.Call(ctx, "nope", nil); !errors.Is(err, mcpvisor.ErrUnknownTool) {
		t.Errorf("Call(nope) = %v, want ErrUnknownTool", err)
	}
	for _, tt := range []struct{ name, server, tool string }{{"pid", "m", "pid"}, {"mcp__m__pid", "m", "pid"}, {"mcp__n__echo", "n", "echo"}} {
		if s, tool, ok := h.ResolveTool(tt.name); !ok || s != tt.server || tool != tt.tool {
			t.Errorf("ResolveTool(%q) = %q, %q, %v; want %q, %q", tt.name, s, tool, ok, tt.server, tt.tool)
		}
	}
	for _, name := range []string{"nope", "activate_tools", "mcp__zz__echo"} {
		if s, tool, ok := h.ResolveTool(name); ok {
			t.Errorf("ResolveTool(%q) = %q, %q; want not found", name, s, tool)
		}
	}

	// Sessions: the grant is the server's group, whatever the name.
	s := h.Session("chat", "")
	if _, err := s.Call(ctx, "pid", nil); !errors.Is(err, mcpvisor.ErrNotGranted) || !strings.Contains(err.Error(), `"m"`) {
		t.Errorf("Session.Call(pid) before activation = %v, want ErrNotGranted naming m", err)
	}
	if err := s.Activate(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(s.Tools()); !slices.Contains(got, "pid") || slices.Contains(got, "mcp__m__pid") || slices.Contains(got, "mcp__n__pid") {
		t.Errorf("Session.Tools() = %v, want m's tools by their own names and none of n's", got)
	}
	if got := pidOf(t, mustSessionCall(t, s, "pid")); got != mPID {
		t.Errorf("Session.Call(pid) answered %d, want m's %d", got, mPID)
	}
	if !strings.Contains(s.Catalog(), "`m` (tools callable by their own names)") {
		t.Errorf("Catalog does not say m's tools go by their own names:\n%s", s.Catalog())
	}

	// The history keeps the namespaced name (read once the journal has
	// committed everything, at Close).
	h = reopen(t, h, dir, mcpvisor.Options{})
	calls, err := h.Journal().History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall})
	if err != nil {
		t.Fatal(err)
	}
	pids := 0
	for _, r := range calls {
		switch r.Tool {
		case "pid", "echo":
			t.Errorf("history record under the bare name: %+v", r)
		case "mcp__m__pid":
			pids++
			if r.Server != "m" {
				t.Errorf("history record %+v: server %q, want m", r, r.Server)
			}
		}
	}
	if pids < 3 {
		t.Errorf("%d history records of mcp__m__pid, want the 3 calls by either name at least", pids)
	}
}

func mustSessionCall(t *testing.T, s mcpvisor.Session, tool string) *mcpvisor.Result {
	t.Helper()
	res, err := s.Call(modernCtx(t), tool, nil)
	if err != nil {
		t.Fatalf("Session.Call(%s): %v", tool, err)
	}
	return res
}

// Two unprefixed servers with the same tools: found when they list them,
// the later one's are hidden and reported; once the tools are known,
// registering, enabling and opening the host with such servers are refused.
func TestUnprefixedCollision(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	dir := t.TempDir()
	opts := mcpvisor.Options{DataDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	a, b := unprefixed(mcptest("a")), unprefixed(mcptest("b"))
	h := openHost(t, opts, a, b)
	waitReady(t, h)
	waitStatus(t, h, "b's collision warnings", func() bool { return len(status(t, h, "b").Warnings) > 0 })

	const warning = `tool "echo" is hidden: server "a", registered earlier, exposes a tool of that name without prefix too; call this one as mcp__b__echo`
	if w := status(t, h, "b").Warnings; !slices.Contains(w, warning) {
		t.Errorf("b's warnings %q lack %q", w, warning)
	}
	if w := status(t, h, "a").Warnings; len(w) != 0 {
		t.Errorf("a's warnings %q, want none", w)
	}
	if !strings.Contains(logs.String(), strconv.Quote(warning)[1:len(strconv.Quote(warning))-1]) {
		t.Errorf("the host's log lacks the collision warning:\n%s", logs.String())
	}
	tools := h.Tools()
	for _, tool := range tools {
		if tool.Server == "b" {
			t.Errorf("b's tool %s is listed: all of b's names are a's", tool.Name)
		}
	}
	if n := len(tools); n != status(t, h, "a").Tools {
		t.Errorf("%d tools listed, want a's %d", n, status(t, h, "a").Tools)
	}
	if got := pidOf(t, call(t, h, "pid", `{}`)); got != status(t, h, "a").PID {
		t.Errorf("pid answered %d, want a's", got)
	}
	if got := pidOf(t, call(t, h, "mcp__b__pid", `{}`)); got != status(t, h, "b").PID {
		t.Errorf("mcp__b__pid answered %d, want b's (hidden, still callable)", got)
	}

	// Now both catalogs are known.
	ctx := modernCtx(t)
	const refused = `server "b": tool "echo" is also exposed by its own name by server "a"`
	b2 := b
	b2.Description = "changed"
	if err := h.Register(ctx, b2); !errors.Is(err, mcpvisor.ErrNameCollision) || !strings.Contains(err.Error(), refused) {
		t.Errorf("Register(b) = %v, want ErrNameCollision saying %q", err, refused)
	}
	if err := h.SetEnabled(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, h, "b's tools to be exposed", func() bool {
		_, _, ok := h.ResolveTool("echo")
		return ok && len(status(t, h, "b").Warnings) == 0
	})
	if s, _, _ := h.ResolveTool("echo"); s != "b" {
		t.Errorf("echo resolves to %q with a disabled, want b", s)
	}
	err := h.SetEnabled(ctx, "a", true)
	if !errors.Is(err, mcpvisor.ErrNameCollision) || !strings.Contains(err.Error(), `server "a": tool "echo" is also exposed by its own name by server "b"`) {
		t.Errorf("SetEnabled(a, true) = %v, want ErrNameCollision naming a, b and echo", err)
	}
	if st := status(t, h, "a"); st.Enabled {
		t.Errorf("a is enabled after a refused SetEnabled")
	}
	if err := h.SetEnabled(ctx, "b", false); err != nil {
		t.Fatal(err)
	}
	if err := h.SetEnabled(ctx, "a", true); err != nil {
		t.Fatalf("SetEnabled(a, true) with b disabled: %v", err)
	}
	waitReady(t, h, "a")
	// A prefixed server is no collision.
	if err := h.Register(ctx, mcptest("c")); err != nil {
		t.Errorf("Register(c): %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	// Both enabled in the file, with their tools known: Open refuses. (b's
	// entry changes, so the file's enabled wins over SetEnabled's.)
	b.Description = "edited"
	opts.Config = &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{a, b}}
	h2, err := mcpvisor.Open(context.Background(), opts)
	if err == nil {
		h2.Close()
		t.Fatal("Open with two unprefixed servers exposing the same names succeeded")
	}
	if !errors.Is(err, mcpvisor.ErrNameCollision) || !strings.Contains(err.Error(), refused) {
		t.Errorf("Open = %v, want ErrNameCollision saying %q", err, refused)
	}
}

// Prompts of unprefixed servers keep their own names; a name two of them
// list stays the first one's.
func TestUnprefixedPrompts(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	h := modernOpen(t, mcpvisor.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		unprefixed(modernStdio(t, "g1", "modern")), unprefixed(modernStdio(t, "g2", "modern")), modernStdio(t, "g3", "modern"))
	ctx := modernCtx(t)
	for _, server := range []string{"g1", "g2", "g3"} {
		if ps, err := h.Prompts(ctx, server); err != nil || len(ps) != 2 || ps[0].Name != "greet" || ps[1].Name != "topic" {
			t.Fatalf("Prompts(%s) = %+v, %v; want greet and topic", server, ps, err)
		}
	}
	for _, tt := range []struct{ server, want string }{{"g1", "greet"}, {"g2", "mcp__g2__greet"}, {"g3", "mcp__g3__greet"}} {
		if got := h.PromptName(tt.server, "greet"); got != tt.want {
			t.Errorf("PromptName(%s, greet) = %q, want %q", tt.server, got, tt.want)
		}
	}
	for _, tt := range []struct{ name, server, prompt string }{
		{"greet", "g1", "greet"}, {"mcp__g1__greet", "g1", "greet"}, {"mcp__g2__greet", "g2", "greet"}, {"mcp__g3__greet", "g3", "greet"},
	} {
		if s, p, ok := h.ResolvePrompt(tt.name); !ok || s != tt.server || p != tt.prompt {
			t.Errorf("ResolvePrompt(%q) = %q, %q, %v; want %q, %q", tt.name, s, p, ok, tt.server, tt.prompt)
		}
	}
	for _, name := range []string{"nope", "mcp__zz__greet"} {
		if s, p, ok := h.ResolvePrompt(name); ok {
			t.Errorf("ResolvePrompt(%q) = %q, %q; want not found", name, s, p)
		}
	}
	if !strings.Contains(logs.String(), `prompt \"greet\" is exposed without prefix by servers \"g1\" and \"g2\"`) {
		t.Errorf("the host's log lacks the prompt collision naming g1 and g2:\n%s", logs.String())
	}
	server, prompt, _ := h.ResolvePrompt("greet")
	res, err := h.GetPrompt(ctx, server, prompt, map[string]string{"name": "Ada"})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.Text != "Hello, Ada!" {
		t.Errorf("GetPrompt(greet) = %+v, %v", res, err)
	}
}

// recordedStdio runs the go-sdk peer over stdio behind tee, which keeps
// every frame the host sends it in the returned file.
func recordedStdio(t *testing.T, name, era, version string) (mcpvisor.ServerConfig, string) {
	bin, argv := peers.GoSDK(t, era)
	wire := filepath.Join(t.TempDir(), name+".in")
	args := append([]string{"-c", `tee "$0" | "$@"`, wire, bin}, argv...)
	sc := mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: "/bin/sh", Args: args, Enabled: true, ProtocolVersion: version}
	return sc, wire
}

// sentMethods lists the methods of the frames in a recorded stdin, and the
// protocolVersion initialize asked for.
func sentMethods(t *testing.T, wire string) (methods []string, initVersion string) {
	t.Helper()
	data, err := os.ReadFile(wire)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m struct {
			Method string                    `json:"method"`
			Params protocol.InitializeParams `json:"params"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("recorded frame %q: %v", line, err)
		}
		methods = append(methods, m.Method)
		if m.Method == protocol.MethodInitialize {
			initVersion = m.Params.ProtocolVersion
		}
	}
	return methods, initVersion
}

// A pin decides the era of a dual-era server, which detection would find
// modern: the server never sees server/discover under a legacy pin, nor
// initialize under a modern one.
func TestProtocolVersionPin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pin, want   string
		sent, unset string // a method the server must receive, and one it must not
	}{
		{"", modernVersion, protocol.MethodServerDiscover, protocol.MethodInitialize}, // control: detection
		{"2025-06-18", "2025-06-18", protocol.MethodInitialize, protocol.MethodServerDiscover},
		{"2025-11-25", "2025-11-25", protocol.MethodInitialize, protocol.MethodServerDiscover},
		{modernVersion, modernVersion, protocol.MethodServerDiscover, protocol.MethodInitialize},
	}
	for _, tt := range tests {
		t.Run("pin="+tt.pin, func(t *testing.T) {
			t.Parallel()
			sc, wire := recordedStdio(t, "g", "dual", tt.pin)
			h := modernOpen(t, mcpvisor.Options{}, sc)
			if st := status(t, h, "g"); st.ProtocolVersion != tt.want {
				t.Errorf("protocol %q, want %q", st.ProtocolVersion, tt.want)
			}
			if res := modernCall(t, h, "mcp__g__echo", `{"text":"hi"}`, mcpvisor.CallOptions{}); res.Text != "hi" {
				t.Errorf("echo = %q", res.Text)
			}
			methods, initVersion := sentMethods(t, wire)
			if !slices.Contains(methods, tt.sent) || slices.Contains(methods, tt.unset) {
				t.Errorf("the server received %v; want %s and no %s", methods, tt.sent, tt.unset)
			}
			if tt.sent == protocol.MethodInitialize && initVersion != tt.pin {
				t.Errorf("initialize asked for %q, want the pinned %q", initVersion, tt.pin)
			}
		})
	}
	t.Run("modern pin on a legacy server", func(t *testing.T) {
		t.Parallel()
		sc := mcptest("old")
		sc.ProtocolVersion = modernVersion
		h := openHost(t, mcpvisor.Options{}, sc)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := h.WaitReady(ctx, "old")
		if err == nil {
			t.Fatal("a legacy server pinned to the modern revision became ready")
		}
		st := status(t, h, "old")
		if st.State != mcpvisor.StateFailed || !strings.Contains(st.LastError, "protocolVersion 2026-07-28 is pinned, so there is no fallback to initialize") {
			t.Errorf("state %s (%s), want failed saying the pin allows no fallback", st.State, st.LastError)
		}
	})
	t.Run("bad pin", func(t *testing.T) {
		t.Parallel()
		sc := mcptest("x")
		sc.ProtocolVersion = "2025-13-01"
		_, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: t.TempDir(), Config: &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{sc}}})
		want := `config: server "x": field "protocolVersion": unknown protocol version "2025-13-01"`
		if !errors.Is(err, mcpvisor.ErrConfig) || err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Open = %v, want %q…", err, want)
		}
	})
}
