package mcpvisor_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Tool names model APIs refuse, as a real stdio server lists them: each is
// exposed under a name models accept and called by it, and the server is
// called by its own.

// modelToolName is what model APIs accept as a tool name.
var modelToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// oddNames are tool names model APIs refuse: characters, length, and two
// that collide once mapped.
var oddNames = []string{"get weather", "files/read", "x.y", strings.Repeat("long", 25), "a.b", "a/b", "ünïcode"}

// oddServer is an mcptest server listing oddNames, and "x_y" (a real name
// a mapped one must not take).
func oddServer(name string) mcpvisor.ServerConfig {
	var args []string
	for _, n := range append(slices.Clone(oddNames), "x_y") {
		args = append(args, "-tool-name", n)
	}
	return mcptest(name, args...)
}

// exposedNames maps server's own tool names to the names h lists them by.
func exposedNames(h *mcpvisor.Host, server string) map[string]string {
	out := map[string]string{}
	for _, t := range h.Tools() {
		if t.Server == server {
			out[t.Tool] = t.Name
		}
	}
	return out
}

func TestToolNamesModelsAccept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := openHost(t, mcpvisor.Options{DataDir: dir}, oddServer("odd"), unprefixed(oddServer("bare")))
	waitReady(t, h)
	for _, server := range []string{"odd", "bare"} {
		names := exposedNames(h, server)
		seen := map[string]string{}
		for _, own := range append(slices.Clone(oddNames), "x_y") {
			name, ok := names[own]
			if !ok {
				t.Fatalf("%s: tool %q not listed: %v", server, own, names)
			}
			if !modelToolName.MatchString(name) {
				t.Errorf("%s: tool %q exposed as %q, which models refuse", server, own, name)
			}
			if other, dup := seen[name]; dup {
				t.Errorf("%s: %q and %q both exposed as %q", server, other, own, name)
			}
			seen[name] = own
			if s, tool, ok := h.ResolveTool(name); !ok || s != server || tool != own {
				t.Errorf("ResolveTool(%q) = %q, %q, %v; want %q, %q", name, s, tool, ok, server, own)
			}
			// The call reaches the server under its own name, by the exposed
			// name and by the namespaced own name alike.
			for _, by := range []string{name, mcpvisor.ToolName(server, own)} {
				if res := call(t, h, by, `{}`); res.Text != "called "+own {
					t.Errorf("Call(%q) answered %q, want the server called as %q", by, res.Text, own)
				}
			}
		}
		if names["x_y"] != map[string]string{"odd": "mcp__odd__x_y", "bare": "x_y"}[server] {
			t.Errorf("%s: the real x_y is exposed as %q", server, names["x_y"])
		}
	}
	first := exposedNames(h, "odd")
	if got := first["get weather"]; got != "mcp__odd__get_weather" {
		t.Errorf("get weather exposed as %q, want mcp__odd__get_weather", got)
	}
	if got := exposedNames(h, "bare")["files/read"]; got != "files_read" {
		t.Errorf("bare files/read exposed as %q, want files_read", got)
	}

	// The history keeps the own name, and the one the caller used.
	h = reopen(t, h, dir, mcpvisor.Options{}, oddServer("odd"), unprefixed(oddServer("bare")))
	calls, err := h.Journal().History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall, Tool: "mcp__odd__get weather"})
	if err != nil {
		t.Fatal(err)
	}
	byAlias := 0
	for _, r := range calls {
		if r.Tool != "mcp__odd__get weather" || r.Server != "odd" {
			t.Errorf("history record %+v: want tool mcp__odd__get weather of odd", r)
		}
		if r.CalledAs == "mcp__odd__get_weather" {
			byAlias++
		}
	}
	if len(calls) != 2 || byAlias != 1 {
		t.Errorf("history of get weather: %d records, %d by the exposed name; want 2 and 1: %+v", len(calls), byAlias, calls)
	}
	// A filter by the exposed name finds the calls made by it.
	if aliased, err := h.Journal().History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall, Tool: "mcp__odd__get_weather"}); err != nil || len(aliased) != 1 {
		t.Errorf("history by the exposed name: %d records, %v; want 1", len(aliased), err)
	}

	// Stable: the last known catalog after a restart, then the server's
	// own listing, give the same names.
	if got := exposedNames(h, "odd"); !mapsEqual(got, first) {
		t.Errorf("names after a restart %v, before %v", got, first)
	}
	waitReady(t, h)
	if got := exposedNames(h, "odd"); !mapsEqual(got, first) {
		t.Errorf("names once listed again %v, before %v", got, first)
	}
	// And on another host, with a journal of its own.
	other := openHost(t, mcpvisor.Options{}, oddServer("odd"))
	waitReady(t, other)
	if got := exposedNames(other, "odd"); !mapsEqual(got, first) {
		t.Errorf("names on another host %v, on the first %v", got, first)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The budget is the whole exposed name; tool filters name the server's
// own names.
func TestToolNameBudgetAndFilters(t *testing.T) {
	t.Parallel()
	sc := oddServer("odd")
	sc.IncludeTools = []string{"get weather", strings.Repeat("long", 25), "echo"}
	h := openHost(t, mcpvisor.Options{MaxToolName: 24}, sc)
	waitReady(t, h)
	names := exposedNames(h, "odd")
	if len(names) != 3 {
		t.Fatalf("tools %v, want the three included", names)
	}
	for own, name := range names {
		if len(name) > 24 || !modelToolName.MatchString(name) {
			t.Errorf("tool %q exposed as %q: over the budget of 24", own, name)
		}
		want := "called " + own
		if own == "echo" {
			want = "{}"
		}
		if res := call(t, h, name, `{}`); res.Text != want {
			t.Errorf("Call(%q) = %q, want %q", name, res.Text, want)
		}
	}
	if got := names["echo"]; got != "mcp__odd__echo" {
		t.Errorf("echo, within the budget, exposed as %q", got)
	}
}

// Prompts are named as tools are: over a server's last listing, mapped
// where their own names are not ones models accept.
func TestPromptNamesModelsAccept(t *testing.T) {
	t.Parallel()
	prompts := []string{"get weather", "a.b", "a/b", "plain"}
	f := &featureServer{caps: `{"prompts":{}}`, methods: map[string]func(json.RawMessage) any{
		"prompts/list": func(json.RawMessage) any {
			var list []any
			for _, p := range prompts {
				list = append(list, map[string]any{"name": p})
			}
			return map[string]any{"prompts": list}
		},
		"prompts/get": func(params json.RawMessage) any {
			var p protocol.GetPromptParams
			_ = json.Unmarshal(params, &p)
			return map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "got " + p.Name}}}}
		},
	}}
	url := startFeatureServer(t, f)
	h := openHost(t, mcpvisor.Options{}, httpServer("web", url), unprefixed(httpServer("bare", url)))
	ctx := featureCtx(t)
	for _, server := range []string{"web", "bare"} {
		if _, err := h.Prompts(ctx, server); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, own := range prompts {
			name := h.PromptName(server, own)
			if !modelToolName.MatchString(name) || seen[name] {
				t.Errorf("PromptName(%s, %q) = %q: refused by models, or taken", server, own, name)
			}
			seen[name] = true
			s, p, ok := h.ResolvePrompt(name)
			if !ok || s != server || p != own {
				t.Errorf("ResolvePrompt(%q) = %q, %q, %v; want %q, %q", name, s, p, ok, server, own)
				continue
			}
			res, err := h.GetPrompt(ctx, s, p, nil)
			if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.Text != "got "+own {
				t.Errorf("GetPrompt(%s, %q) = %+v, %v", s, p, res, err)
			}
		}
	}
	if got := h.PromptName("web", "get weather"); got != "mcp__web__get_weather" {
		t.Errorf("PromptName(web, get weather) = %q", got)
	}
	if got := h.PromptName("bare", "get weather"); got != "get_weather" {
		t.Errorf("PromptName(bare, get weather) = %q", got)
	}
	if s, p, ok := h.ResolvePrompt("mcp__web__get weather"); !ok || s != "web" || p != "get weather" {
		t.Errorf("the own name namespaced: ResolvePrompt = %q, %q, %v", s, p, ok)
	}
}
