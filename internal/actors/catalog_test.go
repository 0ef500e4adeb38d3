package actors

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/protocol"
)

func tools(names ...string) []protocol.Tool {
	out := make([]protocol.Tool, len(names))
	for i, n := range names {
		out[i] = protocol.Tool{Name: n, InputSchema: []byte(`{"type":"object"}`)}
	}
	return out
}

func TestBuildCatalogSelection(t *testing.T) {
	tests := []struct {
		name    string
		spec    ServerSpec
		listed  []string
		known   []string
		want    []string
		warning string
	}{
		{name: "all", listed: []string{"a", "b", "c"}, want: []string{"a", "b", "c"}},
		{name: "include", spec: ServerSpec{IncludeTools: []string{"c", "a", "zz"}}, listed: []string{"a", "b", "c"}, want: []string{"a", "c"}},
		{name: "exclude", spec: ServerSpec{ExcludeTools: []string{"b"}}, listed: []string{"a", "b", "c"}, want: []string{"a", "c"}},
		{name: "include and exclude", spec: ServerSpec{IncludeTools: []string{"a", "b"}, ExcludeTools: []string{"b"}}, listed: []string{"a", "b", "c"}, want: []string{"a"}},
		{name: "max first listing keeps server order", spec: ServerSpec{MaxTools: 2}, listed: []string{"c", "a", "b"}, want: []string{"c", "a"}, warning: "maxTools 2: 1 tool(s) left out"},
		{
			// A server that grows a tool sorting first must not push out an
			// established one (seed 002, smaller notes).
			name: "max keeps known tools before new ones", spec: ServerSpec{MaxTools: 2},
			listed: []string{"aaa_new", "c", "a", "b"}, known: []string{"c", "a"}, want: []string{"c", "a"},
		},
		{
			name: "max fills freed places with new tools", spec: ServerSpec{MaxTools: 3},
			listed: []string{"aaa_new", "a", "b", "d"}, known: []string{"c", "a"}, want: []string{"a", "aaa_new", "b"},
		},
		{name: "max not reached", spec: ServerSpec{MaxTools: 5}, listed: []string{"a", "b"}, want: []string{"a", "b"}},
		{name: "duplicates keep the first", listed: []string{"a", "b", "a"}, want: []string{"a", "b"}, warning: `tool "a" listed twice`},
		{name: "nameless ignored", listed: []string{"", "a"}, want: []string{"a"}, warning: "a tool with no name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = "srv"
			c := buildCatalog(&tt.spec, tools(tt.listed...), tt.known, false)
			if diff := cmp.Diff(tt.want, c.names()); diff != "" {
				t.Errorf("selection (-want +got):\n%s", diff)
			}
			if tt.warning != "" && !strings.Contains(strings.Join(c.warnings, "\n"), tt.warning) {
				t.Errorf("warnings %q do not mention %q", c.warnings, tt.warning)
			}
			for _, tool := range c.tools {
				if tool.Name != ToolName("srv", tool.Tool) {
					t.Errorf("tool %q namespaced as %q", tool.Tool, tool.Name)
				}
				if got, ok := c.lookup(tool.Tool); !ok || got.Name != tool.Name {
					t.Errorf("lookup(%q) = %v, %v", tool.Tool, got, ok)
				}
			}
		})
	}
}

func TestBuildCatalogLongNameIsReportedNotTruncated(t *testing.T) {
	long := strings.Repeat("x", 70)
	c := buildCatalog(&ServerSpec{Name: "srv"}, tools(long), nil, false)
	if got := c.tools[0].Name; got != "mcp__srv__"+long {
		t.Fatalf("name %q was altered", got)
	}
	if len(c.warnings) != 1 || !strings.Contains(c.warnings[0], "over the 64") {
		t.Fatalf("warnings = %q, want one about the 64-character limit", c.warnings)
	}
}

func TestBuildCatalogDestructive(t *testing.T) {
	yes, no := true, false
	listed := []protocol.Tool{
		{Name: "none"},
		{Name: "ro", Annotations: &protocol.ToolAnnotations{ReadOnlyHint: &yes}},
		{Name: "rw-safe", Annotations: &protocol.ToolAnnotations{ReadOnlyHint: &no, DestructiveHint: &no}},
		{Name: "rw", Annotations: &protocol.ToolAnnotations{ReadOnlyHint: &no}},
	}
	c := buildCatalog(&ServerSpec{Name: "s"}, listed, nil, false)
	got := map[string]bool{}
	for _, tl := range c.tools {
		got[tl.Tool] = tl.Destructive
	}
	want := map[string]bool{"none": true, "ro": false, "rw-safe": false, "rw": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("destructive (-want +got):\n%s", diff)
	}
}

func TestCapDescription(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{strings.Repeat("a", 30), 20, strings.Repeat("a", 20-len(truncatedMark)) + truncatedMark},
		{strings.Repeat("é", 30), 22, strings.Repeat("é", 3) + truncatedMark}, // 7 bytes left: never splits a rune
		{strings.Repeat("a", 5000), -1, strings.Repeat("a", 5000)},
	}
	for _, tt := range tests {
		got := capDescription(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("capDescription(%d bytes, %d) = %q, want %q", len(tt.in), tt.max, got, tt.want)
		}
		if tt.max >= 0 && len(got) > tt.max && len(tt.in) > tt.max {
			t.Errorf("capDescription(%d bytes, %d) is %d bytes", len(tt.in), tt.max, len(got))
		}
	}
}

func TestSplitToolName(t *testing.T) {
	tests := []struct {
		in           string
		server, tool string
		ok           bool
	}{
		{"mcp__fs__read", "fs", "read", true},
		{"mcp__a__b__c", "a", "b__c", true}, // first "__" after the prefix
		{"mcp__my-srv__x.y", "my-srv", "x.y", true},
		{"mcp__fs__", "", "", false},
		{"mcp____read", "", "", false},
		{"fs__read", "", "", false},
		{"mcp__fs", "", "", false},
	}
	for _, tt := range tests {
		s, tl, ok := SplitToolName(tt.in)
		if s != tt.server || tl != tt.tool || ok != tt.ok {
			t.Errorf("SplitToolName(%q) = %q, %q, %v; want %q, %q, %v", tt.in, s, tl, ok, tt.server, tt.tool, tt.ok)
		}
	}
}

func TestValidateServerName(t *testing.T) {
	good := []string{"fs", "my-server", "a_b", "A1"}
	bad := []string{"", "a__b", "with space", "dot.ted", "slash/x", "ünï"}
	for _, n := range good {
		if err := ValidateServerName(n); err != nil {
			t.Errorf("ValidateServerName(%q) = %v, want nil", n, err)
		}
	}
	for _, n := range bad {
		if err := ValidateServerName(n); err == nil {
			t.Errorf("ValidateServerName(%q) = nil, want an error", n)
		}
	}
}

// Namespacing cannot collide: server names never contain "__", so the first
// "__" after the prefix always ends the server name.
func TestNamespacingDoesNotCollide(t *testing.T) {
	pairs := [][2]string{{"vik", "list_tasks"}, {"vik_list", "tasks"}, {"a", "b__c"}, {"a-b", "c"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		n := ToolName(p[0], p[1])
		if prev, ok := seen[n]; ok {
			t.Fatalf("%v and %v both map to %q", prev, p, n)
		}
		seen[n] = p
		s, tl, ok := SplitToolName(n)
		if !ok || s != p[0] || tl != p[1] {
			t.Errorf("round trip of %v gave %q, %q", p, s, tl)
		}
	}
}
