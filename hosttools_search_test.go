package mcpvisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
)

type searchResult struct {
	Query string      `json:"query"`
	Tools []searchHit `json:"tools"`
}

// searchHit is one tool of a search_tools answer.
type searchHit struct {
	Name        string   `json:"name"`
	Server      string   `json:"server"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Active      bool     `json:"active"`
	Score       float64  `json:"score"`
	Matched     []string `json:"matched"`
	Synonyms    []string `json:"synonyms"`
	Semantic    bool     `json:"semantic"`
}

func searchTools(t *testing.T, s mcpvisor.Session, query string, limit int) searchResult {
	t.Helper()
	res := hostCall(t, s, mcpvisor.ToolSearch, map[string]any{"query": query, "limit": limit})
	if res.IsError || res.Type != mcpvisor.ResultJSON {
		t.Fatalf("search_tools %q: %s", query, res.Wire())
	}
	var v searchResult
	if err := json.Unmarshal(res.JSON, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func callErr(s mcpvisor.Session, tool string) error {
	_, err := s.Call(context.Background(), tool, json.RawMessage(`{}`))
	return err
}

// TestSearchToolsThenActivateOneTool is the model's path through a large
// catalog: search in words, activate the one tool found, call it, and be
// refused its siblings; the grant outlives a host restart and ends with
// the session.
func TestSearchToolsThenActivateOneTool(t *testing.T) {
	data := t.TempDir()
	opts := mcpvisor.Options{DataDir: data, SearchToolsOver: -1}
	h := openHost(t, opts, mcptest("a"), mcptest("b"))
	waitReady(t, h, "a", "b")
	s := h.Session("chat", "")

	if got := toolNames(s.Tools()); !slices.Equal(got, []string{mcpvisor.ToolActivate, mcpvisor.ToolSearch}) {
		t.Fatalf("a new session's tools: %v", got)
	}
	if c := s.Catalog(); !strings.Contains(c, "search_tools") {
		t.Errorf("catalog of a large host does not mention search_tools:\n%s", c)
	}

	found := searchTools(t, s, "which process id does the server run as", 3)
	if len(found.Tools) == 0 || !strings.HasSuffix(found.Tools[0].Name, "__pid") || found.Tools[0].Active {
		t.Fatalf("search for the process id: %+v", found.Tools)
	}
	// Each hit says why it was found: the query's words it has.
	if m := found.Tools[0].Matched; !slices.Contains(m, "process") || !slices.Contains(m, "id") {
		t.Errorf("the pid hit's matched words: %q", m)
	}
	if res := hostCall(t, s, mcpvisor.ToolSearch, map[string]any{"query": "which process id", "limit": 1}); !strings.Contains(res.Text, "(matched: ") {
		t.Errorf("search_tools' text does not say why: %s", res.Text)
	}
	for _, q := range []struct{ query, tool string }{
		{"exit the server with a code", "crash"},
		{"write lines to stderr", "stderr"},
		{"return a png image", "image"},
	} {
		got := searchTools(t, s, q.query, 5)
		if len(got.Tools) == 0 || !strings.HasSuffix(got.Tools[0].Name, "__"+q.tool) {
			t.Errorf("search %q: %+v, want %s first", q.query, got.Tools, q.tool)
		}
	}

	res := hostCall(t, s, mcpvisor.ToolActivate, map[string]any{"groups": []string{"mcp__a__pid"}})
	if res.IsError || !strings.Contains(res.Text, "Now callable: mcp__a__pid.") {
		t.Fatalf("activate one tool: %s", res.Wire())
	}
	want := []string{mcpvisor.ToolActivate, mcpvisor.ToolSearch, "mcp__a__pid"}
	if got := toolNames(s.Tools()); !slices.Equal(got, want) {
		t.Fatalf("tools after activating mcp__a__pid: %v, want %v", got, want)
	}
	if got := s.Servers(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Servers: %v", got)
	}
	if c := s.Catalog(); !strings.Contains(c, "`mcp__a__pid` (this tool only)") {
		t.Errorf("catalog does not list the tool grant:\n%s", c)
	}
	if res := hostCall(t, s, "mcp__a__pid", map[string]any{}); res.IsError {
		t.Fatalf("calling the granted tool: %s", res.Wire())
	}
	for _, sibling := range []string{"mcp__a__echo", "mcp__b__pid"} {
		if err := callErr(s, sibling); !errors.Is(err, mcpvisor.ErrNotGranted) {
			t.Errorf("%s without a grant: %v, want ErrNotGranted", sibling, err)
		}
	}
	again := searchTools(t, s, "process id", 10)
	for _, hit := range again.Tools {
		if active := hit.Name == "mcp__a__pid"; hit.Active != active {
			t.Errorf("after activation, %s active = %v", hit.Name, hit.Active)
		}
	}
	// Another session holds none of it.
	if err := callErr(h.Session("other", ""), "mcp__a__pid"); !errors.Is(err, mcpvisor.ErrNotGranted) {
		t.Errorf("another session: %v, want ErrNotGranted", err)
	}
	if res := hostCall(t, s, mcpvisor.ToolActivate, map[string]any{"groups": []string{"mcp__a__no_such_tool"}}); !res.IsError || !strings.Contains(res.Text, "mcp__a__no_such_tool") {
		t.Errorf("activating an unknown tool: %s", res.Wire())
	}
	if res := hostCall(t, s, mcpvisor.ToolActivate, map[string]any{"groups": []string{mcpvisor.ToolRegister}}); !res.IsError {
		t.Errorf("activating a config tool alone: %s, want an error (config is granted as a group)", res.Wire())
	}

	// The grant is journaled: a new host over the same data keeps it.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = openHost(t, opts, mcptest("a"), mcptest("b"))
	waitReady(t, h, "a", "b")
	s = h.Session("chat", "")
	if got := toolNames(s.Tools()); !slices.Equal(got, want) {
		t.Fatalf("tools after a restart: %v, want %v", got, want)
	}
	if res := hostCall(t, s, "mcp__a__pid", map[string]any{}); res.IsError {
		t.Fatalf("calling the granted tool after a restart: %s", res.Wire())
	}
	if err := callErr(s, "mcp__a__echo"); !errors.Is(err, mcpvisor.ErrNotGranted) {
		t.Errorf("sibling after a restart: %v, want ErrNotGranted", err)
	}

	// Revoked as group grants are: the session ends.
	if err := s.End(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(s.Tools()); !slices.Equal(got, []string{mcpvisor.ToolActivate, mcpvisor.ToolSearch}) {
		t.Errorf("tools after End: %v", got)
	}
	if err := callErr(s, "mcp__a__pid"); !errors.Is(err, mcpvisor.ErrNotGranted) {
		t.Errorf("after End: %v, want ErrNotGranted", err)
	}
}

// TestSearchToolsListedWhenLarge: a small catalog shows activate_tools
// alone; past DefaultSearchToolsOver tools, search_tools too, and the
// catalog block says to search.
func TestSearchToolsListedWhenLarge(t *testing.T) {
	small := openHost(t, mcpvisor.Options{}, mcptest("a"))
	waitReady(t, small, "a")
	s := small.Session("chat", "")
	if got := toolNames(s.Tools()); !slices.Equal(got, []string{mcpvisor.ToolActivate}) {
		t.Errorf("small host: %v, want only activate_tools", got)
	}
	if strings.Contains(s.Catalog(), "search_tools") {
		t.Errorf("small host's catalog mentions search_tools:\n%s", s.Catalog())
	}
	// Not listed, but it answers.
	if got := searchTools(t, s, "process id", 1); len(got.Tools) != 1 || got.Tools[0].Name != "mcp__a__pid" {
		t.Errorf("search on a small host: %+v", got.Tools)
	}

	large := openHost(t, mcpvisor.Options{}, mcptest("a", "-tools", "50"))
	waitReady(t, large, "a")
	s = large.Session("chat", "")
	if got := toolNames(s.Tools()); !slices.Equal(got, []string{mcpvisor.ToolActivate, mcpvisor.ToolSearch}) {
		t.Errorf("large host: %v, want activate_tools and search_tools", got)
	}
	if !strings.Contains(s.Catalog(), "search_tools") {
		t.Errorf("large host's catalog does not mention search_tools:\n%s", s.Catalog())
	}
	// The config group still adds its tools after both.
	if err := s.Activate(context.Background(), mcpvisor.ConfigGroup); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(s.Tools()); len(got) != 6 || got[1] != mcpvisor.ToolSearch || got[2] != mcpvisor.ToolRegister {
		t.Errorf("with config: %v", got)
	}
}

func TestSearchToolsArguments(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcptest("a"))
	waitReady(t, h, "a")
	s := h.Session("chat", "")
	for _, args := range []map[string]any{{}, {"query": "  "}, {"query": "x", "limit": 0}, {"query": "x", "limit": 51}, {"query": "x", "other": 1}} {
		if res := hostCall(t, s, mcpvisor.ToolSearch, args); !res.IsError {
			t.Errorf("search_tools %v: %s, want a tool error", args, res.Wire())
		}
	}
	if got := searchTools(t, s, "zebra quantum", 5); len(got.Tools) != 0 {
		t.Errorf("no match: %+v", got.Tools)
	}
}
