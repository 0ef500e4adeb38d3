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
		{name: "include names a tool the server lacks", spec: ServerSpec{IncludeTools: []string{"a", "nope"}}, listed: []string{"a", "b"},
			want: []string{"a"}, warning: `includeTools names "nope", which the server does not list`},
		{name: "include matches nothing", spec: ServerSpec{IncludeTools: []string{"nope"}}, listed: []string{"a", "b"},
			want: []string{}, warning: "includeTools matches none of the server's 2 tools: it exposes none"},
		{name: "exclude names a tool the server lacks", spec: ServerSpec{ExcludeTools: []string{"nope"}}, listed: []string{"a"},
			want: []string{"a"}, warning: `excludeTools names "nope", which the server does not list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = "srv"
			c := buildCatalog(&tt.spec, tools(tt.listed...), tt.known, false, DefaultMaxToolName, nil)
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

// Names model APIs would refuse are exposed mapped; both the mapped name
// and the server's own find the tool, and the own one is what the catalog
// (and so the journal) keeps.
func TestBuildCatalogMapsNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	c := buildCatalog(&ServerSpec{Name: "srv"}, tools("get weather", "ok", long), nil, false, DefaultMaxToolName, nil)
	if len(c.warnings) != 0 {
		t.Errorf("warnings %q, want none", c.warnings)
	}
	want := map[string]string{"get weather": "mcp__srv__get_weather", "ok": "mcp__srv__ok", long: c.naming.Namespaced(long)}
	for _, tool := range c.tools {
		if tool.Name != want[tool.Tool] || len(tool.Name) > DefaultMaxToolName || !SafeToolName(tool.Name) {
			t.Errorf("tool %q exposed as %q (%d bytes), want %q", tool.Tool, tool.Name, len(tool.Name), want[tool.Tool])
		}
		_, part, _ := SplitToolName(tool.Name)
		for _, by := range []string{part, tool.Tool} {
			if got, ok := c.resolve(by); !ok || got.Tool != tool.Tool {
				t.Errorf("resolve(%q) = %v, %v; want %q", by, got, ok, tool.Tool)
			}
		}
	}
	if _, ok := c.resolve("get_weathe"); ok {
		t.Error("resolve found a name no tool has")
	}

	// A server whose name leaves no room is warned about.
	server := strings.Repeat("s", 60)
	c = buildCatalog(&ServerSpec{Name: server}, tools("tool"), nil, false, DefaultMaxToolName, nil)
	if len(c.warnings) != 1 || !strings.Contains(c.warnings[0], "over the budget of 64") {
		t.Errorf("warnings = %q, want one about the budget", c.warnings)
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
	c := buildCatalog(&ServerSpec{Name: "s"}, listed, nil, false, DefaultMaxToolName, nil)
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

// The default cap leaves the longest description measured on real servers
// (7,011 bytes: firecrawl-mcp's firecrawl_monitor_create) whole, and never
// touches the descriptions inside inputSchema.
func TestDefaultMaxDescription(t *testing.T) {
	spec := ServerSpec{Name: "s"}.WithDefaults()
	desc := strings.Repeat("d", 7011)
	param := strings.Repeat("p", 20000)
	schema := `{"type":"object","properties":{"x":{"type":"string","description":"` + param + `"}}}`
	c := buildCatalog(&spec, []protocol.Tool{{Name: "t", Description: desc, InputSchema: []byte(schema)}}, nil, false, DefaultMaxToolName, nil)
	if got := c.tools[0].Description; got != desc {
		t.Errorf("a %d-byte description became %d bytes", len(desc), len(got))
	}
	if got := string(c.tools[0].InputSchema); got != schema {
		t.Errorf("inputSchema changed: %d bytes, want %d", len(got), len(schema))
	}
	long := buildCatalog(&spec, []protocol.Tool{{Name: "t", Description: strings.Repeat("d", DefaultMaxDescription+1)}}, nil, false, DefaultMaxToolName, nil)
	if got := long.tools[0].Description; len(got) > DefaultMaxDescription || !strings.HasSuffix(got, truncatedMark) {
		t.Errorf("a description over the cap is %d bytes, marked %v", len(got), strings.HasSuffix(got, truncatedMark))
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
